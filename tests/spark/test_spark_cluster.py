"""Spark on a real multi-process cluster: ``local-cluster[2,1,1024]`` starts two executor
JVMs of their own, as a standalone cluster's workers would, so nothing of the driver's
process (its working directory, its Python objects) reaches the executors except what a
job ships. Each job runs in a separate process (``support/spark_cluster_job.py``; one
SparkContext per process), and its answers are compared with DuckDB's here.

The second job runs the executors' Python on an interpreter *without* this package (a bare
virtual environment): tables Spark reads natively need only Spark there, and a table that
needs the data source fails with our ``MissingDependencyError`` saying what to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
import support
from support.lakes import assert_same_rows, evolve_table

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import has_data_source

pytestmark = pytest.mark.spark

JOB = Path(support.__file__).with_name("spark_cluster_job.py")
MASTER = "local-cluster[2,1,1024]"
WHERE = "k BETWEEN 1400 AND 2100"
# Row changes of the table the bare executors' job created (lake.main.copied), by Spark
# there and by DuckDB on a copy here.
CHANGES = [
    "DELETE FROM lake.main.copied WHERE k % 7 = 1",
    "UPDATE lake.main.copied SET name = 'updated' WHERE k % 7 = 2",
    (
        "MERGE INTO lake.main.copied AS c USING (SELECT DISTINCT k FROM lake.main.copied "
        "WHERE k % 5 = 0) AS s ON c.k = s.k + 1 WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT (k, name) VALUES (s.k + 1, 'merged')"
    ),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory, request):
    """``main.t``: three layouts, deletes, inlined rows (native); ``main.added``: a file
    registered without field ids beside inlined rows (the data source's part)."""
    from support.lakes import LakeSpec
    from support.lakes import make_lake as build

    lake = build(LakeSpec("duckdb", "local"), tmp_path_factory.mktemp("cluster"), inline_limit=5)
    request.addfinalizer(lake.close)
    evolve_table(lake, deletes=True)
    lake.sql("INSERT INTO lake.main.t (k, name, w) VALUES (5000, 'inl', 1), (5001, 'inl', 2)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 2500")
    added = Path(lake.data_path).parent / "added.parquet"
    lake.sql("CREATE TABLE lake.main.added (a BIGINT, b VARCHAR)")
    lake.sql(f"COPY (SELECT i AS a, 'x' || i AS b FROM range(100) r(i)) TO '{added}'")
    lake.sql(f"CALL ducklake_add_data_files('lake', 'added', '{added}')")
    lake.sql("INSERT INTO lake.main.added VALUES (1000, 'inlined')")
    lake.sql("CREATE TABLE lake.main.small (k BIGINT, v VARCHAR)")
    for start in range(0, 40, 10):  # four small files for a merge
        lake.sql(
            f"INSERT INTO lake.main.small SELECT i, 'v' || i FROM range({start}, {start + 10}) r(i)"
        )
    return lake


def _run(lake, tmp_path: Path, reads: list[dict], worker_python: str, jar: str | None) -> Path:
    out = tmp_path / "answers"
    out.mkdir()
    spec = {"master": MASTER, "metadata": lake.reader_args()["metadata"], "out": str(out)}
    spec["spark_jar"] = jar  # shipped by Spark to the executors: deletes inside its reader
    spec["reads"] = reads
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "PYSPARK_PYTHON": worker_python, "PYSPARK_DRIVER_PYTHON": sys.executable}
    elsewhere = tmp_path / "driver-cwd"  # neither the lake's nor the test's directory
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, str(JOB), str(path)],
        check=False,
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (out / "executors.txt").read_text() == "2"  # two executor processes
    if spec["spark_jar"]:
        assert (out / "deleted_rows_reader.txt").read_text() == "True"
    return out


def _answer(out: Path, name: str):
    error = out / f"{name}.error"
    assert not error.exists(), error.read_text()[:2000]
    return pq.read_table(out / f"{name}.parquet")


@pytest.mark.data_source
def test_every_spark_path_on_a_multi_process_cluster(lake, tmp_path, spark_package_jar):
    reads = [
        {"name": "native", "kind": "read_table", "table": "main.t"},
        {"name": "native_where", "kind": "read_table", "table": "main.t", "where": WHERE},
        {"name": "exact", "kind": "read_table", "table": "main.t", "native": False},
        {"name": "mixed", "kind": "read_table", "table": "main.added"},
        {"name": "mixed_files", "kind": "read_table", "table": "main.added", "catalog_scan": False},
        {"name": "format", "kind": "format", "table": "main.t"},
        {
            "name": "views",
            "kind": "view_sql",
            "sql": "SELECT k, name FROM lake_main_t WHERE w > 100 "
            "UNION ALL SELECT a, b FROM lake_main_added",
        },
        {"name": "changes", "kind": "changes", "table": "main.t", "start": 2, "end": 12},
        # a merge on a cluster: its files written by the executors' tasks, committed once
        {
            "name": "merge",
            "kind": "catalog_sql",
            "sql": "CALL lake.system.merge_adjacent_files(table => 'main.small')",
        },
        {"name": "merged", "kind": "read_table", "table": "main.small"},
    ]
    small = lake.reference("SELECT * FROM lake.main.small")
    out = _run(lake, tmp_path, reads, sys.executable, spark_package_jar)
    every = lake.reference("SELECT * FROM lake.main.t")
    for name in ("native", "exact", "format"):
        assert_same_rows(_answer(out, name), every)
    assert_same_rows(
        _answer(out, "native_where"), lake.reference(f"SELECT * FROM lake.main.t WHERE {WHERE}")
    )
    for name in ("mixed", "mixed_files"):  # the catalog's scan; files + the data source
        assert_same_rows(_answer(out, name), lake.reference("SELECT * FROM lake.main.added"))
    assert_same_rows(
        _answer(out, "views"),
        lake.reference(
            "SELECT k, name FROM lake.main.t WHERE w > 100 "
            "UNION ALL SELECT a, b FROM lake.main.added"
        ),
    )
    changes = _answer(out, "changes")
    expected = lake.reference("SELECT * FROM ducklake_table_changes('lake', 'main', 't', 2, 12)")
    assert_same_rows(changes.select(expected.column_names), expected)
    merged = _answer(out, "merge").to_pylist()
    assert merged == [
        {"schema_name": "main", "table_name": "small", "files_processed": 4, "files_created": 1}
    ]
    listed = lake.reference("SELECT count(*) AS n FROM ducklake_list_files('lake', 'small')")
    assert listed.column(0)[0].as_py() == 1
    assert_same_rows(lake.reference("SELECT * FROM lake.main.small"), small)  # DuckDB, merged
    assert_same_rows(_answer(out, "merged"), small)


@pytest.mark.skipif(has_data_source(), reason="pyspark 4.1+: the test above covers it")
def test_native_paths_on_a_multi_process_cluster_before_pyspark_4_1(
    lake, tmp_path, spark_package_jar
):
    """pyspark 3.5 / 4.0: native reads, ``where`` and the driver's change feed on two
    executor processes. A table needing the data source is read by the catalog's scan
    (its planner reads what Spark's reader cannot), and so are views of it; without the
    catalog's scan it is refused, named."""
    reads = [
        {"name": "native", "kind": "read_table", "table": "main.t"},
        {"name": "native_where", "kind": "read_table", "table": "main.t", "where": WHERE},
        {"name": "mixed", "kind": "read_table", "table": "main.added"},
        {"name": "mixed_files", "kind": "read_table", "table": "main.added", "catalog_scan": False},
        {"name": "views", "kind": "view_sql", "sql": "SELECT a, b FROM lake_main_added"},
        {"name": "changes", "kind": "changes", "table": "main.t", "start": 2, "end": 12},
    ]
    out = _run(lake, tmp_path, reads, sys.executable, spark_package_jar)
    assert_same_rows(_answer(out, "native"), lake.reference("SELECT * FROM lake.main.t"))
    assert_same_rows(
        _answer(out, "native_where"), lake.reference(f"SELECT * FROM lake.main.t WHERE {WHERE}")
    )
    changes = _answer(out, "changes")
    expected = lake.reference("SELECT * FROM ducklake_table_changes('lake', 'main', 't', 2, 12)")
    assert_same_rows(changes.select(expected.column_names), expected)
    refused = ["mixed_files"]
    if spark_package_jar is None:
        refused += ["mixed", "views"]
    else:
        added = lake.reference("SELECT a, b FROM lake.main.added")
        assert_same_rows(_answer(out, "mixed"), added)
        assert_same_rows(_answer(out, "views"), added)
    for name in refused:
        error = (out / f"{name}.error").read_text()
        assert error.startswith("UnsupportedFeatureError"), error
        assert "main.added" in error and "pyspark >= 4.1" in error, error


def test_executors_without_the_package_read_native_tables(lake, tmp_path, spark_package_jar):
    """Executors whose Python lacks this package (and pyspark's Python side): native
    tables read, with deletes, older layouts and inlined rows, and the catalog's scan reads
    every table (its planner runs on the driver) and writes (``CREATE TABLE AS``, ``INSERT``:
    the executors need the jar and nothing else); without it, a table that needs the data
    source raises MissingDependencyError naming what to install."""
    bare = tmp_path / "bare-python"
    venv.create(bare, with_pip=False)
    reads = [
        {"name": "native", "kind": "read_table", "table": "main.t"},
        {"name": "native_where", "kind": "read_table", "table": "main.t", "where": WHERE},
        {"name": "mixed", "kind": "read_table", "table": "main.added"},
        {"name": "mixed_files", "kind": "read_table", "table": "main.added", "catalog_scan": False},
    ]
    if spark_package_jar is not None:  # the catalog: executors need the jar and nothing else
        reads += [
            {"name": "catalog", "kind": "catalog_sql", "sql": "SELECT * FROM lake.main.t"},
            {
                "name": "catalog_where",
                "kind": "catalog_sql",
                "sql": f"SELECT * FROM lake.main.t VERSION AS OF 9 WHERE {WHERE}",
            },
            {
                "name": "catalog_added",
                "kind": "catalog_sql",
                "sql": "SELECT * FROM lake.main.added",
            },
            {
                "name": "catalog_changes",
                "kind": "catalog_sql",
                "sql": "SELECT * FROM ducklake_table_changes('lake.main.t', 2, 12)",
            },
            # writes: the executors write Parquet with Spark's writer, the driver commits
            {
                "name": "write_ctas",
                "kind": "catalog_sql",
                "sql": "CREATE TABLE lake.main.copied AS SELECT k, name FROM lake.main.t",
            },
            {
                "name": "write_insert",
                "kind": "catalog_sql",
                "sql": f"INSERT INTO lake.main.copied SELECT k, name FROM lake.main.t WHERE {WHERE}",
            },
            {"name": "copied", "kind": "catalog_sql", "sql": "SELECT * FROM lake.main.copied"},
            # row changes: executors collect the deleted rows and write the new ones
            *(
                {"name": f"change_{i}", "kind": "catalog_sql", "sql": statement}
                for i, statement in enumerate(CHANGES)
            ),
            {"name": "changed", "kind": "catalog_sql", "sql": "SELECT * FROM lake.main.copied"},
        ]
    out = _run(lake, tmp_path, reads, str(bare / "bin" / "python"), spark_package_jar)
    if spark_package_jar is not None:
        assert_same_rows(_answer(out, "catalog"), lake.reference("SELECT * FROM lake.main.t"))
        assert_same_rows(
            _answer(out, "catalog_where"),
            lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => 9) WHERE {WHERE}"),
        )
        assert_same_rows(
            _answer(out, "catalog_added"), lake.reference("SELECT * FROM lake.main.added")
        )
        assert_same_rows(
            _answer(out, "catalog_changes"),
            lake.reference("SELECT * FROM ducklake_table_changes('lake', 'main', 't', 2, 12)"),
        )
        copied = _answer(out, "copied")
        assert_same_rows(
            copied,
            lake.reference(
                f"SELECT k, name FROM lake.main.t UNION ALL "
                f"SELECT k, name FROM lake.main.t WHERE {WHERE}"
            ),
        )
        for i in range(len(CHANGES)):
            _answer(out, f"change_{i}")  # (no error)
        # the same statements by DuckDB on a copy of the table as Spark created it
        con = duckdb.connect()
        con.register("before", copied)
        con.execute("CREATE TABLE copied AS SELECT * FROM before")
        for statement in CHANGES:
            con.execute(statement.replace("lake.main.", ""))
        expected = con.execute("SELECT * FROM copied").fetch_arrow_table()
        con.close()
        assert_same_rows(_answer(out, "changed"), expected)
        assert_same_rows(lake.reference("SELECT * FROM lake.main.copied"), expected)
    assert_same_rows(_answer(out, "native"), lake.reference("SELECT * FROM lake.main.t"))
    assert_same_rows(
        _answer(out, "native_where"), lake.reference(f"SELECT * FROM lake.main.t WHERE {WHERE}")
    )
    if spark_package_jar is not None:  # read_table is the catalog's scan
        assert_same_rows(_answer(out, "mixed"), lake.reference("SELECT * FROM lake.main.added"))
    else:
        assert (out / "mixed.error").read_text() == (out / "mixed_files.error").read_text()
    error = (out / "mixed_files.error").read_text()
    if not has_data_source():  # pyspark 3.5 / 4.0 refuse it before asking the workers
        assert error.startswith("UnsupportedFeatureError") and "main.added" in error, error
        return
    assert error.startswith("MissingDependencyError"), error
    assert "main.added" in error and "PYSPARK_PYTHON" in error and "install" in error, error
