"""The lake's views through the Spark catalog (``DuckLakeViews``, injected by the extension).

Views are built by DuckDB and read through ``spark.sql.catalog.<name>`` in SQL and
``spark.table``; every answer is compared with DuckDB's for the same snapshot, including
time travel of a view (its definition and its tables at that snapshot), a view over another
view, and the spellings DuckDB and Spark read differently (quoted names, quotes and
backslashes in strings, the NULL order of ``ORDER BY``). A view Spark cannot run is refused
by name with ``UnsupportedFeatureError``; without the extension, reading a view says what to
configure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from support.lakes import assert_same_rows
from test_spark_catalog import (
    CATALOG_CLASS,
    LOCAL_CATALOGS,
    _error_text,
)

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def _lake_with_views(make_lake, spec=None):
    """``s2.t`` and views over it of every kind; returns the lake and the snapshot before
    ``s2.vw`` was replaced and ``s2.t`` grew."""
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE SCHEMA lake.s2")
    lake.sql('CREATE TABLE lake.s2.t (id INTEGER, v VARCHAR, "group" VARCHAR)')
    lake.sql(
        "INSERT INTO lake.s2.t VALUES (1, 'a', 'g1'), (2, 'b', NULL), (0, 'z', 'g0'), "
        "(4, 'it''s', 'g4'), (5, 'back\\slash', NULL)"
    )
    lake.sql("CREATE VIEW lake.s2.vw AS SELECT id, v FROM lake.s2.t WHERE id > 0")
    lake.sql("CREATE VIEW lake.main.aliased(x, y) AS SELECT id * 2, upper(v) FROM s2.t")
    lake.sql("CREATE VIEW lake.s2.unqualified AS SELECT v FROM t WHERE id = 2")
    lake.sql("CREATE VIEW lake.main.nested AS SELECT count(*) AS n FROM lake.s2.vw")
    lake.sql(
        'CREATE VIEW lake.main.quoting AS SELECT "group" AS g, v, '
        "v = 'it''s' AS is_quote, v = 'back\\slash' AS is_backslash, "
        "'say \"hi\"' AS said FROM lake.s2.t"
    )
    lake.sql(
        'CREATE VIEW lake.main.ordered AS SELECT id, "group" FROM lake.s2.t ORDER BY "group" LIMIT 2'
    )
    lake.sql(
        "CREATE VIEW lake.main.subqueries AS WITH c AS (SELECT id, v FROM s2.t) "
        "SELECT id, v FROM c WHERE id IN (SELECT id FROM lake.s2.vw) "
        "AND id NOT IN (SELECT id FROM lake.s2.t WHERE v = 'b')"
    )
    lake.sql(
        "CREATE VIEW lake.main.grouped AS SELECT t.v, count(*) AS n, sum(t.id) AS s "
        "FROM lake.s2.t t JOIN lake.s2.vw w ON t.id = w.id GROUP BY t.v"
    )
    lake.sql("CREATE TABLE lake.main.t2 AS SELECT 7 AS id")
    lake.sql("CREATE VIEW lake.main.catalog_only AS SELECT id FROM lake.t2")
    first = lake.snapshot_id()
    lake.sql("INSERT INTO lake.s2.t VALUES (3, 'c', 'g3')")
    lake.sql("CREATE OR REPLACE VIEW lake.s2.vw AS SELECT id, v FROM lake.s2.t WHERE id > 1")
    return lake, first


# Each view, as Spark and DuckDB read it (sum over INTEGER is a HUGEINT in DuckDB).
VIEWS = [
    ("s2.vw", "*", "*"),
    ("main.aliased", "*", "*"),
    ("s2.unqualified", "*", "*"),
    ("main.nested", "*", "*"),
    ("main.quoting", "*", "*"),
    ("main.ordered", "*", "*"),
    ("main.subqueries", "*", "*"),
    ("main.grouped", "v, n, s", "v, n, s::BIGINT AS s"),
    ("main.catalog_only", "*", "*"),
]


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_views_read_as_duckdb_at_every_snapshot(spark, make_lake, catalog, spec):
    lake, first = _lake_with_views(make_lake, spec)
    name = catalog(lake)
    for view, spark_columns, duckdb_columns in VIEWS:
        expected = lake.reference(f"SELECT {duckdb_columns} FROM lake.{view}")
        got = spark.sql(f"SELECT {spark_columns} FROM {name}.{view}")
        assert_same_rows(got.toArrow(), expected)
        # the view's definition and its tables as they were at `first`
        then = lake.reference(f"SELECT {duckdb_columns} FROM lake.{view}", snapshot=first)
        old = spark.sql(f"SELECT {spark_columns} FROM {name}.{view} VERSION AS OF {first}")
        assert_same_rows(old.toArrow(), then)
    assert_same_rows(
        spark.table(f"{name}.s2.vw").toArrow(), lake.reference("SELECT * FROM lake.s2.vw")
    )
    pinned = catalog(lake, snapshot=str(first))
    for view, spark_columns, duckdb_columns in VIEWS[:4]:  # a view, over a view, renamed
        then = lake.reference(f"SELECT {duckdb_columns} FROM lake.{view}", snapshot=first)
        got = spark.sql(f"SELECT {spark_columns} FROM {pinned}.{view}")
        assert_same_rows(got.toArrow(), then)


def test_views_in_larger_queries_and_by_time(spark, make_lake, catalog):
    lake, first = _lake_with_views(make_lake)
    name = catalog(lake)
    # a view joined with itself and with a table, filtered, aggregated
    sql = (
        "SELECT a.id, b.v, t.group AS g FROM {c}.s2.vw a JOIN {c}.s2.vw b ON a.id = b.id "
        "JOIN {c}.s2.t t ON t.id = a.id WHERE a.id < 5"
    )
    expected = lake.reference(sql.format(c="lake").replace("t.group", 't."group"'))
    assert_same_rows(spark.sql(sql.format(c=name)).toArrow(), expected)
    expected = lake.reference("SELECT x, y FROM lake.main.aliased WHERE x > 2")
    got = spark.sql(f"SELECT x, y FROM {name}.main.aliased WHERE x > 2")
    assert_same_rows(got.toArrow(), expected)
    # TIMESTAMP AS OF: the snapshot current at that time, for the view and its tables
    times = lake.reference(
        "SELECT snapshot_id, strftime(snapshot_time AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') "
        f"AS t FROM lake.snapshots() WHERE snapshot_id >= {first} ORDER BY 1"
    ).to_pylist()
    for row in times:
        got = spark.sql(f"SELECT * FROM {name}.s2.vw TIMESTAMP AS OF '{row['t']}'")
        expected = lake.reference("SELECT * FROM lake.s2.vw", snapshot=row["snapshot_id"])
        assert_same_rows(got.toArrow(), expected)
    # the current namespace of the lake's catalog (USE), restored afterwards
    current = spark.sql("SELECT current_catalog() AS c, current_database() AS d").first()
    spark.sql(f"USE {name}.s2")
    try:
        got = spark.sql("SELECT * FROM vw").toArrow()
    finally:
        spark.sql(f"USE `{current.c}`.`{current.d}`")
    assert_same_rows(got, lake.reference("SELECT * FROM lake.s2.vw"))


def test_a_view_spark_cannot_run_is_refused_by_name(spark, make_lake, catalog):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'é')")
    lake.sql("CREATE VIEW lake.main.duckdb_only AS SELECT strip_accents(s) AS l FROM lake.main.t")
    lake.sql("CREATE VIEW lake.main.casts AS SELECT k::HUGEINT AS h FROM lake.main.t")
    lake.sql("CREATE VIEW lake.main.fine AS SELECT k FROM lake.main.t")
    created = lake.snapshot_id()
    lake.sql("DROP VIEW lake.main.fine")
    name = catalog(lake)
    text = _error_text(spark, f"SELECT * FROM {name}.main.duckdb_only")
    assert "UnsupportedFeatureError" in text and "main.duckdb_only" in text, text
    assert "strip_accents" in text and "cannot be run by Spark" in text, text
    text = _error_text(spark, f"SELECT * FROM {name}.main.casts")
    assert "UnsupportedFeatureError" in text and "main.casts" in text, text
    # a dropped view is gone, and there at the snapshots it lived in
    assert "TABLE_OR_VIEW_NOT_FOUND" in _error_text(spark, f"SELECT * FROM {name}.main.fine")
    got = spark.sql(f"SELECT * FROM {name}.main.fine VERSION AS OF {created}")
    assert_same_rows(
        got.toArrow(), lake.reference("SELECT * FROM lake.main.fine", snapshot=created)
    )
    assert "TABLE_OR_VIEW_NOT_FOUND" in _error_text(spark, f"SELECT * FROM {name}.main.nope")
    text = _error_text(spark, f"SELECT * FROM {name}.main.fine VERSION AS OF 999")
    assert "SnapshotNotFoundError" in text and "999" in text


def test_listings_show_tables_and_views_apart(spark, make_lake, catalog):
    lake, _ = _lake_with_views(make_lake)
    name = catalog(lake)
    tables = {r.tableName for r in spark.sql(f"SHOW TABLES IN {name}.s2").collect()}
    assert tables == {"t"}  # Spark's SHOW TABLES of a catalog lists its tables only
    views = lake.reference(
        "SELECT schema_name AS s, view_name AS v FROM duckdb_views() WHERE database_name = 'lake'"
    ).to_pylist()
    for schema in ("main", "s2"):
        shown = spark.sql(f"SHOW VIEWS IN {name}.{schema}").collect()
        got = {(r.namespace, r.viewName, r.isTemporary) for r in shown}
        assert got == {(schema, r["v"], False) for r in views if r["s"] == schema}
    shown = spark.sql(f"SHOW VIEWS IN {name}.main LIKE 'n*|q*'").collect()
    want = {r["v"] for r in views if r["s"] == "main" and r["v"][0] in "nq"}
    assert {r.viewName for r in shown} == want and want
    assert "InvalidOptionError" in _error_text(spark, f"SHOW VIEWS IN {name}.s2.x")
    # a view's columns: DESCRIBE QUERY (DESCRIBE TABLE names tables only)
    described = [
        r.col_name for r in spark.sql(f"DESCRIBE QUERY SELECT * FROM {name}.main.aliased").collect()
    ]
    columns = lake.reference("DESCRIBE lake.main.aliased").column("column_name").to_pylist()
    assert described == columns


def test_without_the_extension_a_view_says_what_to_configure(
    make_lake, spark_package_jar, tmp_path
):
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t AS SELECT 1 AS k")
    lake.sql("CREATE VIEW lake.main.v AS SELECT k FROM lake.main.t")
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from pyspark.sql import SparkSession
            spark = (
                SparkSession.builder.master("local[1]")
                .config("spark.jars", {spark_package_jar!r})
                .config("spark.ui.enabled", "false")
                .config("spark.sql.catalog.lake", {CATALOG_CLASS!r})
                .config("spark.sql.catalog.lake.metadata", {lake.reader_args()["metadata"]!r})
                .config("spark.sql.catalog.lake.python", sys.executable)
                .getOrCreate()
            )
            print("TABLE", spark.sql("SELECT * FROM lake.main.t").collect())
            try:
                spark.sql("SELECT * FROM lake.main.v").collect()
            except Exception as exc:
                print("VIEW", exc)
            spark.stop()
            """
        )
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TABLE [Row(k=1)]" in done.stdout, done.stdout
    view = done.stdout.split("VIEW", 1)[1]
    assert "UnsupportedFeatureError" in view and "main.v" in view, view
    assert "spark.sql.extensions=io.ducklake_datafusion.spark.DuckLakeExtensions" in view, view
