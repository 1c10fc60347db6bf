"""The tests' shared helpers, importable from every test directory (``pythonpath`` in
pyproject's ``[tool.pytest.ini_options]`` puts ``tests/`` on ``sys.path``).

* ``lakes``: lakes over the back-end matrix, written by the reference writer (DuckDB),
  and the row comparisons every test uses;
* ``readcheck``: a query read every way this package reads it, checked against DuckDB;
* ``sparkreplay``: the table states ``readcheck`` saw, replayed through Spark;
* ``lake_formats``: lakes migrated to DuckLake 1.1 as DuckDB 2.0 does;
* ``emulators``: fake-gcs-server, Azurite and MinIO, started from the installed tools;
* ``puffin``: DuckLake 1.1's Puffin deletion-vector files;
* ``reader_job``, ``spark_cluster_job``: scripts the tests run in a process of their own.
"""
