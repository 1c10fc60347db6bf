"""Table maintenance, engine-neutral: what DuckDB's ``ducklake_merge_adjacent_files``,
``ducklake_expire_snapshots``, ``ducklake_cleanup_old_files`` and
``ducklake_delete_orphaned_files`` do, written as DuckDB writes it.

* :mod:`._groups`: which files one merge takes together (DuckDB's walk).
* :mod:`._merge`: the merged files written, committed as one snapshot (``catalog.MergeFiles``).

The engines call these: the Python API (``DuckLakeCatalog``), DataFusion SQL's ``CALL``
and Spark's procedures.
"""

from ._merge import MergeResult, merge_adjacent_files

__all__ = ["MergeResult", "merge_adjacent_files"]
