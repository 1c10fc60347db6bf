"""Spark SQL over a lake without Python per query: views, and ``table@vN`` time travel.

Answers are compared with DuckDB's for the same snapshot.
"""

from __future__ import annotations

import pytest
from support.lakes import assert_same_rows

pytest.importorskip("pyspark")

from ducklake_datafusion.errors import InvalidOptionError
from ducklake_datafusion.spark import read_table, register_spark_views
from ducklake_datafusion.spark._core._options import SourceOptions
from ducklake_datafusion.spark._core._versions import has_data_source

pytestmark = pytest.mark.spark


@pytest.fixture
def history(make_lake):
    """A table with three states: 100 rows, then half deleted, then a column added."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t AS SELECT i AS id, i % 3 AS g FROM range(100) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, i % 3 FROM range(100, 120) r(i)")
    first = lake.snapshot_id()
    lake.sql("DELETE FROM lake.main.t WHERE id < 50")
    middle = lake.snapshot_id()
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN s VARCHAR DEFAULT 'x'")
    return lake, first, middle


def _at(lake, snapshot: int, sql: str = "SELECT * FROM lake.main.t"):
    return lake.reference(sql.replace("lake.main.t", f"lake.main.t AT (VERSION => {snapshot})"))


def test_time_travel_suffix_in_spark_sql_views_and_read_table(spark, history):
    lake, first, middle = history
    metadata = lake.reader_args()["metadata"]
    for snapshot in (first, middle):
        if has_data_source():  # the format (and native=False) need pyspark 4.1+
            spark.sql(
                f"CREATE OR REPLACE TEMPORARY VIEW t_at USING ducklake OPTIONS "
                f"(metadata '{metadata}', path 'main.t@v{snapshot}')"
            )
            assert_same_rows(spark.sql("SELECT * FROM t_at").toArrow(), _at(lake, snapshot))
        for native in (True, False) if has_data_source() else (True,):
            frame = read_table(spark, metadata, f"main.t@v{snapshot}", native=native)
            assert_same_rows(frame.toArrow(), _at(lake, snapshot))
    times = lake.reference("SELECT snapshot_id, snapshot_time FROM lake.snapshots()")
    when = dict(zip(*(c.to_pylist() for c in times.columns)))[middle]
    frame = read_table(spark, metadata, f"t@{when.isoformat()}")
    assert_same_rows(frame.toArrow(), _at(lake, middle))
    assert_same_rows(
        read_table(spark, metadata, "main.t").toArrow(), lake.reference("SELECT * FROM lake.main.t")
    )


def test_views_of_a_pinned_lake(spark, history):
    lake, first, _ = history
    metadata = lake.reader_args()["metadata"]
    register_spark_views(spark, metadata, prefix="old", snapshot=first)
    got = spark.sql("SELECT g, count(*) AS n FROM old_main_t GROUP BY g").toArrow()
    assert_same_rows(got, _at(lake, first, "SELECT g, count(*) AS n FROM lake.main.t GROUP BY g"))


def test_suffix_rules():
    parse = lambda path, **kw: SourceOptions.parse({"metadata": "m", "path": path, **kw})
    assert parse("main.t@v3").snapshot == 3
    assert parse("t@2024-05-01T12:00:00").snapshot_time.isoformat() == "2024-05-01T12:00:00+00:00"
    literal = parse('main."t@v3"')  # quoted: a table really named t@v3
    assert (literal.table_name, literal.snapshot) == ("t@v3", None)
    assert parse("main.a@b").table_name == "a@b"  # not a snapshot: part of the name
    with pytest.raises(InvalidOptionError, match="already names a snapshot"):
        parse("main.t@v3", snapshot="4")


def test_options_of_a_table_created_using_ducklake_are_understood():
    """Spark adds the table's properties and ``option.<key>`` copies to the options of a
    table created ``USING ducklake OPTIONS (...)``; they are not unknown options. At read
    time pyspark hands such a table's source no options at all: the error says to
    configure the catalog instead."""
    parsed = SourceOptions.parse(
        {
            "location": "main.t",
            "owner": "root",
            "provider": "ducklake",
            "option.metadata": "lake.ducklake",
            "path": "main.t",
        }
    )
    assert (parsed.metadata, parsed.schema_name, parsed.table_name) == (
        "lake.ducklake",
        "main",
        "t",
    )
    with pytest.raises(InvalidOptionError, match="DuckLakeCatalog"):
        SourceOptions.parse({})
