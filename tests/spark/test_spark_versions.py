"""What pyspark 3.5 and 4.0 do: no Python data source, so only what Spark reads exactly.

``read_table`` and ``register_spark_views`` read tables that the native path covers
wholly (deletes, older layouts, inlined rows included) and refuse the rest with
``UnsupportedFeatureError`` naming the table, the reason and the release that reads it;
``read_changes`` computes the feed on the driver. On pyspark 4.1+ these tests pretend to
be 4.0.5 (the version check is the only thing that differs); CI also runs them on a real
pyspark 3.5 (``.ci/run``'s second environment). Answers are compared with DuckDB's.
"""

from __future__ import annotations

import pytest
from support.lakes import assert_same_rows, deleting_history, evolve_table

pytest.importorskip("pyspark")

import ducklake_datafusion.spark as spark_api
from ducklake_datafusion.errors import (
    MissingDependencyError,
    UnsupportedFeatureError,
)
from ducklake_datafusion.spark import (
    read_changes,
    read_table,
    register_spark,
    register_spark_views,
)
from ducklake_datafusion.spark._core import _versions

pytestmark = pytest.mark.spark
OLD = "4.0.5"  # the release pretended on pyspark 4.1+


@pytest.fixture
def old_pyspark(monkeypatch):
    """pyspark 3.5 as installed, or 4.1+ answering the version check as 4.0.5."""
    if _versions.has_data_source():
        monkeypatch.setattr(_versions, "pyspark_version", lambda: OLD)
    return _versions.pyspark_version()


def test_version_rules():
    assert not _versions.has_data_source("3.5.9") and not _versions.has_data_source("4.0.5")
    assert _versions.has_data_source("4.1.0") and _versions.has_data_source("4.3.0")
    _versions.require_supported_pyspark("3.5.0")
    with pytest.raises(MissingDependencyError, match=r"pyspark >= 3\.5.*3\.4\.4"):
        _versions.require_supported_pyspark("3.4.4")


def _lake_with_every_kind(make_lake):
    """``main.t``: native (three layouts, deletes, inlined rows); ``main.u``: a UUID
    column; ``main.added``: a file without field ids (read by a name mapping)."""
    lake = make_lake(inline_limit=5)
    evolve_table(lake, deletes=True)
    lake.sql("INSERT INTO lake.main.t (k, name, w) VALUES (5000, 'inl', 1)")
    lake.sql("CREATE TABLE lake.main.u (k BIGINT, id UUID)")
    lake.sql("INSERT INTO lake.main.u SELECT i, uuid() FROM range(10) r(i)")
    added = f"{lake.data_path.rstrip('/')}/../added.parquet"
    lake.sql("CREATE TABLE lake.main.added (a BIGINT)")
    lake.sql(f"COPY (SELECT i AS a FROM range(20) r(i)) TO '{added}'")
    lake.sql(f"CALL ducklake_add_data_files('lake', 'added', '{added}')")
    return lake


def test_every_table_reads_through_the_catalogs_scan(
    spark, make_lake, old_pyspark, spark_package_jar
):
    """With the jar, read_table is the catalog's scan, which reads every table on pyspark
    3.5 / 4.0 too: what Spark's reader cannot return exactly, its planner reads; views of
    every table are created."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (make jars)")
    lake = _lake_with_every_kind(make_lake)
    metadata = lake.reader_args()["metadata"]
    for table in ("t", "u", "added"):
        frame = read_table(spark, metadata, f"main.{table}")
        assert_same_rows(frame.toArrow(), lake.reference(f"SELECT * FROM lake.main.{table}"))
        assert "read by Spark" in frame._jdf.queryExecution().executedPlan().toString()
    created = register_spark_views(spark, metadata, prefix="every")
    assert sorted(created) == ["every_main_added", "every_main_t", "every_main_u"]
    got = spark.sql("SELECT count(*) AS n, sum(a) AS sa FROM every_main_added").toArrow()
    expected = lake.reference("SELECT count(*) AS n, sum(a)::BIGINT AS sa FROM lake.main.added")
    assert_same_rows(got, expected)


def test_native_tables_read_and_the_rest_is_refused_by_name(
    spark, make_lake, old_pyspark, parquet_path
):
    """Without the catalog's scan: the tables Spark's reader reads wholly, and the rest
    refused, named, with the pyspark that would read them."""
    lake = _lake_with_every_kind(make_lake)
    metadata = lake.reader_args()["metadata"]
    last = lake.snapshot_id()
    for snapshot in range(2, last + 1):
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        frame = read_table(spark, metadata, "main.t", snapshot=snapshot)
        assert_same_rows(frame.toArrow(), expected)
    where = "k BETWEEN 990 AND 1010"
    frame = read_table(spark, metadata, "main.t", where=where)
    assert_same_rows(frame.toArrow(), lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))

    version = old_pyspark.replace(".", r"\.")
    with pytest.raises(UnsupportedFeatureError, match=rf"main\.u .*id is uuid.*>= 4\.1.*{version}"):
        read_table(spark, metadata, "main.u")
    with pytest.raises(UnsupportedFeatureError, match=r"main\.added .*name mapping"):
        read_table(spark, metadata, "main.added")
    with pytest.raises(UnsupportedFeatureError, match=r"main\.t .*native=False"):
        read_table(spark, metadata, "main.t", native=False)
    with pytest.raises(UnsupportedFeatureError, match=r"ducklake.* format"):
        register_spark(spark)
    with pytest.raises(UnsupportedFeatureError, match="DuckLakeDataSource"):
        spark_api.DuckLakeDataSource  # noqa: B018 - the attribute access is the test


def test_views_are_all_or_nothing(spark, make_lake, old_pyspark, parquet_path):
    lake = _lake_with_every_kind(make_lake)
    metadata = lake.reader_args()["metadata"]
    with pytest.raises(
        UnsupportedFeatureError, match=r"no view.*main\.u.*main\.added|main\.added.*main\.u"
    ):
        register_spark_views(spark, metadata, prefix="vers")
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("vers_")]

    lake.sql("DROP TABLE lake.main.u")
    lake.sql("DROP TABLE lake.main.added")
    metadata = lake.reader_args()["metadata"]  # a 1.1 copy (DUCKLAKE_TEST_FORMAT): synced
    created = register_spark_views(spark, metadata, prefix="vers")
    assert created == {"vers_main_t": "main.t"}
    got = spark.sql("SELECT count(*) AS n, sum(w) AS sw FROM vers_main_t").toArrow()
    assert_same_rows(
        got, lake.reference("SELECT count(*) AS n, sum(w)::BIGINT AS sw FROM lake.main.t")
    )


def test_the_change_feed_is_computed_on_the_driver(spark, make_lake, old_pyspark):
    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    metadata = lake.reader_args()["metadata"]
    last = lake.snapshot_id()
    for start, end in ((1, last), (3, 6), (last, last)):
        expected = lake.reference(
            f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {start}, {end})"
        )
        feed = read_changes(spark, metadata, "main.t", start, end)
        assert feed.columns == expected.column_names
        assert_same_rows(feed.toArrow(), expected)
    picked = read_changes(spark, metadata, "main.t", 2, last, schema="rowid BIGINT, s STRING")
    expected = lake.reference(
        f"SELECT rowid, s FROM ducklake_table_changes('lake', 'main', 't', 2, {last})"
    )
    assert_same_rows(picked.toArrow(), expected)

    lake.sql("CREATE TABLE lake.main.u (k BIGINT, id UUID)")
    lake.sql("INSERT INTO lake.main.u VALUES (1, uuid())")
    metadata = lake.reader_args()["metadata"]  # a 1.1 copy (DUCKLAKE_TEST_FORMAT): synced
    with pytest.raises(UnsupportedFeatureError, match=r"change feed of table main\.u.*uuid"):
        read_changes(spark, metadata, "main.u", 1)
