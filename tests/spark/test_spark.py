"""The Spark data source: a real local SparkSession against lakes built by the reference writer.

Every answer is compared with DuckDB's own reader of the same lake at the same snapshot.
One session (``local[2]``, UI off) serves the whole module; building it costs ~8 s.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import pickle
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import has_data_source

if not has_data_source():  # test_spark_versions.py covers what older releases do
    pytest.skip("the ducklake data source needs pyspark 4.1+", allow_module_level=True)

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)
from support.lakes import LakeSpec, assert_same_rows

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from ducklake_datafusion.provider.functions import table_changes
from ducklake_datafusion.scan import DataFileTask
from ducklake_datafusion.spark import (
    DuckLakeChangesReader,
    DuckLakeDataSource,
    read_changes,
    read_table,
    register_spark,
)
from ducklake_datafusion.spark._core._options import split_table_name

pytestmark = pytest.mark.spark

LOCAL_CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]


def _read(spark, lake, table="main.t", **options):
    """Our answer: the table through ``spark.read.format("ducklake")``."""
    args = lake.reader_args()
    reader = spark.read.format("ducklake").option("metadata", args["metadata"])
    if "data_path" in args:  # a lake mirrored to GCS or Azure
        reader = reader.option("data_path", args["data_path"])
    for key, value in {**(args["storage_options"] or {}), **options}.items():
        reader = reader.option(key, value)
    return reader.load(table)


def _source(lake, table="main.t", **options) -> DuckLakeDataSource:
    """The data source object as Spark's planning worker builds it (no Spark needed)."""
    args = lake.reader_args()
    values = {"metadata": args["metadata"], "path": table, **options}
    values.update(args["storage_options"] or {})
    return DuckLakeDataSource({k: str(v) for k, v in values.items()})


def _data_tasks(plan) -> list[DataFileTask]:
    return [t for t in plan.tasks if isinstance(t, DataFileTask)]


# --------------------------------------------------------------------------------------------
# Rows equal DuckDB's


def test_encrypted_lake(spark, make_lake):
    """Encrypted files are decrypted on the executors (DuckDB's reader), deletes applied."""
    lake = make_lake(inline_limit=0, encrypted=True)
    lake.sql("CREATE TABLE lake.main.t AS SELECT i AS id, 'v' || i AS s FROM range(500) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 7 = 1")
    assert_same_rows(_read(spark, lake).toArrow(), lake.reference("SELECT * FROM lake.main.t"))


def test_variant_as_json_text(spark, make_lake):
    """VARIANT columns reach Spark as DuckDB's ``CAST(v AS JSON)`` text (files and inlined)."""
    lake = make_lake(inline_limit=2)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, v VARIANT)")
    lake.sql(
        "INSERT INTO lake.main.t VALUES (1, 42::VARIANT), (2, {'a': [1, 2]}::VARIANT), "
        "(3, 'x'::VARIANT), (4, NULL)"
    )
    lake.sql("INSERT INTO lake.main.t VALUES (5, [true]::VARIANT)")  # inlined
    expected = lake.reference("SELECT id, CAST(v AS JSON)::VARCHAR AS v FROM lake.main.t")
    assert_same_rows(_read(spark, lake).toArrow(), expected)


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_deletes_updates_and_inlined_rows(spark, make_lake, spec):
    lake = make_lake(spec, inline_limit=10)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, g INTEGER, v DOUBLE, s VARCHAR)")
    for part in range(4):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i % 7, i * 0.5, 'row ' || i "
            f"FROM range({part * 1000}, {(part + 1) * 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")
    lake.sql("UPDATE lake.main.t SET v = -v WHERE id % 100 = 5")
    lake.sql("DELETE FROM lake.main.t WHERE id >= 3900")
    lake.sql("INSERT INTO lake.main.t VALUES (10000, 1, 0.25, 'inlined'), (10001, 2, NULL, NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE id IN (10001, 7, 8)")  # inlined deletes
    expected = lake.reference("SELECT * FROM lake.main.t")
    df = _read(spark, lake)
    assert_same_rows(df.toArrow(), expected)
    got = df.filter("v < 0 OR s = 'inlined'").select("id", "s").toArrow()
    assert_same_rows(
        got, lake.reference("SELECT id, s FROM lake.main.t WHERE v < 0 OR s = 'inlined'")
    )


def test_schema_evolution_and_time_travel(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql(
        "CREATE TABLE lake.main.t (a INTEGER, b VARCHAR, c TINYINT, s STRUCT(x INTEGER, y VARCHAR))"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'b' || i, i % 100, {'x': i, 'y': 'y' || i} FROM range(30) r(i)"
    )
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN b TO b2")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN a TYPE BIGINT")
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN c")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN s.z INTEGER")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s.x TO x2")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN d VARCHAR DEFAULT 'dflt'")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'new', {'x2': i, 'y': 'n', 'z': 7}, 'nd' FROM range(100, 130) r(i)"
    )
    lake.sql("INSERT INTO lake.main.t VALUES (7, 'inl', {'x2': 1, 'y': NULL, 'z': 2}, 'i')")
    lake.sql("DELETE FROM lake.main.t WHERE a % 4 = 0")
    last = lake.snapshot_id()
    assert_same_rows(_read(spark, lake).toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    for snapshot in (2, 3, 6, last - 1):
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(_read(spark, lake, snapshot=str(snapshot)).toArrow(), expected)

    times = lake.reference("SELECT snapshot_id, snapshot_time FROM lake.snapshots() ORDER BY 1")
    when = dict(zip(*(c.to_pylist() for c in times.columns)))[3]
    df = _read(spark, lake, snapshot_time=when.isoformat())
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t AT (VERSION => 3)"))


EVERY_TYPE = (
    "bo BOOLEAN, i1 TINYINT, i2 SMALLINT, i4 INTEGER, i8 BIGINT, u1 UTINYINT, u2 USMALLINT, "
    "u4 UINTEGER, u8 UBIGINT, h HUGEINT, f4 FLOAT, f8 DOUBLE, d1 DECIMAL(4,1), d3 DECIMAL(38,10), "
    "s VARCHAR, bl BLOB, da DATE, ti TIME, ts TIMESTAMP, tss TIMESTAMP_S, tsm TIMESTAMP_MS, "
    "tsn TIMESTAMP_NS, tz TIMESTAMPTZ, u UUID, j JSON, "
    "st STRUCT(a INTEGER, b STRUCT(c VARCHAR, d INTEGER[])), li VARCHAR[], ll INTEGER[][], "
    "m MAP(VARCHAR, INTEGER), lm MAP(INTEGER, STRUCT(q DOUBLE))[]"
)
EVERY_ROW = (
    "true, -5, -300, 70000, 9000000000, 200, 60000, 4000000000, 18446744073709551615, "
    "123456789, 1.5, -2.25, 123.4, -1.5, 'héllo', '\\xAA\\x00'::BLOB, "
    "DATE '2024-02-29', TIME '12:30:00.123456', TIMESTAMP '2024-01-01 10:00:00.5', "
    "TIMESTAMP_S '2020-01-01 00:00:01', TIMESTAMP_MS '2020-01-01 00:00:01.5', "
    "TIMESTAMP_NS '2020-01-01 00:00:01.123456789', TIMESTAMPTZ '2024-01-15 10:30:00+00', "
    "'c74cf600-d666-4407-bd0a-dadb960b8cd4'::UUID, '{\"a\": 1}', "
    "{'a': 1, 'b': {'c': 'x', 'd': [1, NULL]}}, ['a', NULL], [[1], [], NULL], MAP {'k': 1}, "
    "[MAP {1: {'q': 0.5}}]"
)
# What Spark shows: no unsigned or nanosecond types, so those columns are widened/truncated.
EVERY_TYPE_REFERENCE = (
    "SELECT bo, i1, i2, i4, i8, u1, u2, u4, u8::DECIMAL(20,0) AS u8, h, f4, f8, d1, d3, s, bl, "
    "da, ti, ts, tss, tsm, tsn::TIMESTAMP AS tsn, tz, u::VARCHAR AS u, j::VARCHAR AS j, st, li, "
    "ll, m, lm FROM lake.main.t"
)


def test_every_type_nested_included(spark, make_lake):
    lake = make_lake(inline_limit=1)
    lake.sql(f"CREATE TABLE lake.main.t ({EVERY_TYPE})")
    lake.sql(f"INSERT INTO lake.main.t SELECT {EVERY_ROW} FROM range(20)")  # parquet
    lake.sql(f"INSERT INTO lake.main.t VALUES ({', '.join(['NULL'] * 30)})")  # inlined
    df = _read(spark, lake)
    shown = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert shown["u1"] == "smallint" and shown["u4"] == "bigint" and shown["u8"] == "decimal(20,0)"
    assert shown["h"] == "decimal(38,0)" and shown["u"] == "string" and shown["j"] == "string"
    assert shown["ts"] == "timestamp_ntz" and shown["tz"] == "timestamp"
    assert shown["ti"] == "time(6)" and shown["tsn"] == "timestamp_ntz"
    assert shown["lm"] == "array<map<int,struct<q:double>>>"
    assert_same_rows(df.toArrow(), lake.reference(EVERY_TYPE_REFERENCE))


def test_interval_reads_as_its_parts_and_a_schema_projects_it_away(spark, make_lake):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, g INTEGER, iv INTERVAL, s VARCHAR)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, i % 3, INTERVAL (i) DAY, 's' || i FROM range(50) r(i)"
    )
    parts = "{'months': 0, 'days': datepart('day', iv), 'nanoseconds': 0::BIGINT}"
    df = _read(spark, lake)  # no Spark interval type travels through Arrow: its exact parts
    assert df.schema["iv"].dataType.simpleString() == (
        "struct<months:int,days:int,nanoseconds:bigint>"
    )
    expected = lake.reference(f"SELECT id, g, {parts} AS iv, s FROM lake.main.t")
    assert_same_rows(df.toArrow(), expected)

    # A user schema is a projection: any order and case; a column may be widened.
    df = (
        spark.read.format("ducklake")
        .option("metadata", lake.reader_args()["metadata"])
        .schema("S STRING, id BIGINT, g BIGINT")
        .load("main.t")
    )
    assert df.columns == ["S", "id", "g"]
    assert_same_rows(
        df.filter("g = 1").toArrow(),
        lake.reference('SELECT s AS "S", id, g::BIGINT AS g FROM lake.main.t WHERE g = 1'),
    )
    with pytest.raises(Exception, match="does not have"):
        spark.read.format("ducklake").option("metadata", lake.reader_args()["metadata"]).schema(
            "nope INT"
        ).load("main.t").collect()


def test_empty_table_and_read_table_helper(spark, make_lake):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.e (a INTEGER, b VARCHAR)")
    args = lake.reader_args()
    df = read_table(spark, args["metadata"], "main.e")
    assert df.toArrow().num_rows == 0 and df.columns == ["a", "b"]
    lake.sql("INSERT INTO lake.main.e SELECT i, 'x' FROM range(20) r(i)")
    lake.sql("DELETE FROM lake.main.e WHERE a < 15")
    df = read_table(spark, lake.reader_args()["metadata"], "e", schema="b STRING", snapshot=3)
    assert_same_rows(df.toArrow(), lake.reference("SELECT b FROM lake.main.e AT (VERSION => 3)"))
    # A DataFrame keeps the snapshot it was loaded at, also for later actions.
    pinned = read_table(spark, lake.reader_args()["metadata"], "main.e")
    lake.sql("INSERT INTO lake.main.e VALUES (100, 'later')")
    lake.reader_args()
    assert pinned.count() == 5
    assert read_table(spark, lake.metadata, "main.e").count() == 6


@pytest.mark.parametrize("storage", ["s3", "minio", "gcs", "azure"])
def test_object_stores_from_executors(spark, make_lake, storage):
    """Executors read S3 (moto, MinIO), GCS and Azure files with the storage options."""
    lake = make_lake(LakeSpec("duckdb", storage), inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR, l INTEGER[])")
    for part in range(3):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 's' || i, [i] FROM range({part * 500}, {(part + 1) * 500}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE id % 9 = 0")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inl', [1, 2])")
    df = _read(spark, lake, partition_bytes="1")  # one partition per file: several executors
    assert df.rdd.getNumPartitions() == 4
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    args = lake.reader_args()
    filtered = read_table(
        spark,
        args["metadata"],
        "main.t",
        storage_options=args["storage_options"],
        data_path=args.get("data_path"),
    )
    assert_same_rows(
        filtered.filter("id >= 900").toArrow(),
        lake.reference("SELECT * FROM lake.main.t WHERE id >= 900"),
    )


# --------------------------------------------------------------------------------------------
# Planning: partitions and pruning


def test_partitions_follow_partition_bytes(spark, make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    for part in range(6):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, md5(i::VARCHAR) FROM range({part * 5000}, {(part + 1) * 5000}) r(i)"
        )
    sizes = (
        lake.reference(
            "SELECT file_size_bytes FROM __ducklake_metadata_lake.ducklake_data_file "
            "WHERE end_snapshot IS NULL"
        )
        .column(0)
        .to_pylist()
    )
    total = sum(sizes)
    assert len(sizes) == 6
    third, half = str(total // 3 + 1), str(total // 2 + 1)
    cases = [  # (options, partitions): ceil(bytes / partition_bytes), >= min_partitions
        ({}, 1),  # 128 MiB
        ({"partition_bytes": "1"}, 6),  # never more than one partition per file
        ({"partition_bytes": third}, 3),
        ({"partition_bytes": half}, 2),
        ({"partition_bytes": "1g"}, 1),
        ({"min_partitions": "4"}, 4),
        ({"min_partitions": "40"}, 6),
        ({"partition_bytes": third, "min_partitions": "2"}, 3),
    ]
    for options, expected in cases:
        assert _read(spark, lake, **options).rdd.getNumPartitions() == expected, (options, total)
    # read_table's data source part asks for at least Spark's default parallelism (2 cores)
    metadata = lake.reader_args()["metadata"]
    assert read_table(spark, metadata, "t").rdd.getNumPartitions() == 2
    df = _read(spark, lake, partition_bytes=third)
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


@pytest.fixture
def clustered(make_lake):
    """Five files with disjoint ranges of k, one of them with deletes."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, n INTEGER)")
    for part in range(5):
        lo = part * 1000
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 'key' || lpad(i::VARCHAR, 6, '0'), "
            f"CASE WHEN {part} = 2 THEN NULL ELSE i END FROM range({lo}, {lo + 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 50 = 7")
    return lake


PRUNING = [
    ("k = 1500", [EqualTo(("k",), 1500)], 1),
    ("k >= 4000", [GreaterThanOrEqual(("k",), 4000)], 1),
    ("k IN (5, 4005)", [In(("k",), (5, 4005))], 2),
    ("n IS NULL", [IsNull(("n",))], 1),
    ("k > 1990 AND k < 2010", [GreaterThan(("k",), 1990), LessThan(("k",), 2010)], 2),
    (
        "s >= 'key003000' AND s < 'key004000'",
        [GreaterThanOrEqual(("s",), "key003000"), LessThan(("s",), "key004000")],
        1,
    ),
]


@pytest.mark.parametrize("sql,filters,files", PRUNING, ids=[p[0] for p in PRUNING])
def test_pushed_filters_prune_files_in_the_plan(clustered, sql, filters, files):
    source = _source(clustered, pushdown="true")
    reader = source.reader(source.schema())
    assert list(reader.pushFilters(filters)) == []
    plan = reader.scan_plan()
    assert plan.stats.files_total == 5 and len(_data_tasks(plan)) == files


def test_spark_reads_only_the_matching_files(spark, clustered, tmp_path):
    """Through the data source (native=False): one partition per planned file, and
    removing every other file changes nothing. (Spark's own reader opens the footer of
    every current-layout file and skips row groups by their statistics instead.)"""
    sql = "SELECT * FROM lake.main.t WHERE k >= 2000 AND k < 3000"
    expected = clustered.reference(sql)
    full = clustered.reference("SELECT * FROM lake.main.t")
    metadata = clustered.reader_args()["metadata"]
    df = read_table(spark, metadata, "main.t", partition_bytes=1, native=False)
    assert df.rdd.getNumPartitions() == 5
    filtered = df.filter("k >= 2000 AND k < 3000")
    assert filtered.rdd.getNumPartitions() == 1
    assert_same_rows(filtered.toArrow(), expected)

    source = _source(clustered, pushdown="true")
    reader = source.reader(source.schema())
    reader.pushFilters([GreaterThanOrEqual(("k",), 2000), LessThan(("k",), 3000)])
    keep = set()
    for task in _data_tasks(reader.scan_plan()):
        keep.add(task.file.url.removeprefix("file://"))
        for delete_file in task.deletes.files if task.deletes else ():
            keep.add(delete_file.file.url.removeprefix("file://"))
    on_disk = glob.glob(os.path.join(clustered.data_path, "**", "*.parquet"), recursive=True)
    moved = [p for p in on_disk if os.path.abspath(p) not in {os.path.abspath(k) for k in keep}]
    assert len(moved) >= 4  # four data files (+ delete files) are not needed
    for path in moved:
        shutil.move(path, tmp_path / os.path.basename(path))
    assert_same_rows(df.filter("k >= 2000 AND k < 3000").toArrow(), expected)
    with pytest.raises(Exception, match="(?i)not found|no such file|missing"):
        df.toArrow()
    for path in moved:
        shutil.move(tmp_path / os.path.basename(path), path)
    assert_same_rows(_read(spark, clustered).toArrow(), full)


# --------------------------------------------------------------------------------------------
# Filter semantics: what we take is exact, what we return Spark applies


@pytest.fixture
def mixed(make_lake):
    lake = make_lake(inline_limit=3)
    lake.sql(
        "CREATE TABLE lake.main.t (id INTEGER, x INTEGER, f DOUBLE, f4 FLOAT, s VARCHAR, "
        "u UTINYINT, ub UBIGINT, d DECIMAL(9,2), da DATE, ts TIMESTAMP, tsn TIMESTAMP_NS, "
        "tz TIMESTAMPTZ, b BOOLEAN, st STRUCT(a INTEGER))"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 7 END, "
        "CASE WHEN i % 11 = 0 THEN 'nan'::DOUBLE WHEN i % 13 = 0 THEN NULL ELSE i / 4 END, "
        "i / 10, CASE WHEN i % 6 = 0 THEN NULL ELSE 'v' || (i % 17) END, i % 250, "
        "i::UBIGINT * 100000000000000000, i / 8, DATE '2024-01-01' + i::INTEGER, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, "
        "TIMESTAMP_NS '2024-01-01' + INTERVAL (i * 1001) MICROSECOND, "
        "TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE, i % 3 = 0, {'a': i % 4} "
        "FROM range(120) r(i)"
    )
    lake.sql(
        "INSERT INTO lake.main.t VALUES (1000, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    return lake


# (Spark condition, DuckDB condition or None if the same, fully pushed down?): every one
# must select the same ids; a condition not (fully) pushed stays in a Spark Filter node.
SEMANTICS = [
    ("x = 3", None, True),
    ("NOT (x = 3)", None, True),
    ("x <=> 3", "x IS NOT DISTINCT FROM 3", True),
    ("NOT (x <=> 3)", "x IS DISTINCT FROM 3", True),
    ("x <=> NULL", "x IS NULL", True),
    ("x IN (1, 2)", None, True),
    ("x NOT IN (1, 2)", None, True),
    ("NOT (x IN (1, 2) OR x IS NULL)", None, True),
    ("x IS NULL OR id > 100", None, False),  # Spark pushes no OR to Python sources
    ("f > 10", None, True),
    ("f < 10 OR f = 'NaN'", "f < 10 OR isnan(f)", False),
    ("f4 <= 1.1", "f4::DOUBLE <= 1.1", True),  # Spark widens the column, DuckDB narrows 1.1
    ("s LIKE 'v1%'", None, True),
    ("NOT (s LIKE '%3')", None, True),
    ("s LIKE '%1%'", None, True),
    ("u > -1 AND u <= 100", None, False),  # -1 is no UTINYINT: left to Spark
    ("ub > 5000000000000000000", None, True),
    ("d BETWEEN 3.5 AND 7.25", None, True),
    ("da < DATE '2024-02-01'", None, True),
    ("ts >= TIMESTAMP_NTZ '2024-01-03 00:00:00'", "ts >= TIMESTAMP '2024-01-03 00:00:00'", True),
    (  # Spark sees tsn truncated to microseconds: left to Spark
        "tsn > TIMESTAMP_NTZ '2024-01-01 00:00:00.050050'",
        "tsn::TIMESTAMP > TIMESTAMP '2024-01-01 00:00:00.050050'",
        False,
    ),
    (
        "tz < TIMESTAMP '2024-01-01 01:00:00+00:00'",
        "tz < TIMESTAMPTZ '2024-01-01 01:00:00+00'",
        True,
    ),
    ("b", None, True),
    ("NOT b", None, True),
    ("st.a = 2", None, False),  # nested fields are left to Spark
]


def _spark_filters_left(df) -> bool:
    return "Filter (" in df._jdf.queryExecution().executedPlan().toString()


def test_filters_match_duckdb(spark, mixed, parquet_path):
    df = read_table(spark, mixed.reader_args()["metadata"], "main.t")  # pushdown on
    for spark_condition, duckdb_condition, pushed in SEMANTICS:
        filtered = df.filter(spark_condition).select("id")
        sql = f"SELECT id FROM lake.main.t WHERE {duckdb_condition or spark_condition}"
        try:
            assert_same_rows(filtered.toArrow(), mixed.reference(sql))
        except AssertionError as exc:
            raise AssertionError(f"{spark_condition}: {exc}") from None
        assert _spark_filters_left(filtered) is not pushed, spark_condition


def test_reused_dataframes_stay_correct(spark, clustered):
    """A DataFrame queried with a pushed filter, then without one, must read everything."""
    metadata = clustered.reader_args()["metadata"]

    def count(where: str = "true") -> int:
        sql = f"SELECT count(*) FROM lake.main.t WHERE {where}"
        return clustered.reference(sql).column(0)[0].as_py()

    for df in (read_table(spark, metadata, "main.t"), _read(spark, clustered)):
        assert df.filter("k >= 4000").count() == count("k >= 4000")
        assert df.count() == count()
        assert df.filter("k >= 4000 OR n IS NULL").count() == count("k >= 4000 OR n IS NULL")
        assert df.filter("k < 10").count() == count("k < 10")
        assert len(df.collect()) == count()

    # The pyspark 4.1 behaviour the guard of read_table works around. If this starts to
    # fail, Spark plans every scan afresh and pushdown could be on by default everywhere.
    raw = _read(spark, clustered, pushdown="true")
    assert raw.filter("k >= 4000").count() == count("k >= 4000")
    assert raw.count() == count("k >= 4000"), "pyspark no longer reuses a pushed-down scan"


def test_which_filters_are_taken(mixed):
    source = _source(mixed, pushdown="true")
    reader = source.reader(source.schema())
    taken = [
        EqualTo(("x",), 3),
        Not(EqualTo(("x",), 3)),
        EqualNullSafe(("x",), None),
        Not(EqualNullSafe(("x",), 3)),
        In(("x",), (1, 2)),
        Not(In(("x",), (1, 2))),
        IsNull(("s",)),
        IsNotNull(("st",)),
        GreaterThan(("f",), 1.5),
        StringStartsWith(("s",), "v1"),
        Not(StringEndsWith(("s",), "3")),
        StringContains(("s",), "1"),
        GreaterThan(("u",), 5),
        EqualTo(("ub",), 5),
        GreaterThanOrEqual(("d",), Decimal("3.5")),
        LessThan(("da",), dt.date(2024, 2, 1)),
        GreaterThan(("tz",), dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)),
        EqualTo(("b",), True),
        EqualTo(("X",), 1),
    ]
    refused = [
        GreaterThan(("u",), -1),  # not a UTINYINT value
        EqualTo(("f",), float("nan")),
        In(("x",), (1, None)),
        EqualTo(("x",), None),
        EqualTo(("f4",), 1.1),  # 1.1 is no FLOAT value
        GreaterThan(("tsn",), dt.datetime(2024, 1, 1)),  # Spark sees tsn truncated
        EqualTo(("tz",), dt.datetime(2024, 1, 1)),  # naive literal for a tz column
        EqualTo(("st", "a"), 1),
        EqualTo(("nope",), 1),
        EqualTo(("x",), "3"),
        GreaterThan(("d",), Decimal("3.333")),  # more decimals than the column
        GreaterThan(("d",), 3.5),  # Spark types decimal literals as Decimal
    ]
    rejected = list(reader.pushFilters(taken + refused))
    assert [f for f in rejected if any(f is r for r in refused)] == rejected
    assert len(rejected) == len(refused)
    assert len(reader.pushed) == len(taken)
    expected = mixed.reference("SELECT id FROM lake.main.t WHERE x = 3 AND s LIKE 'v1%'")
    reader.pushFilters([EqualTo(("x",), 3), StringStartsWith(("s",), "v1")])
    plan = reader.scan_plan()
    partitions = reader.partitions()
    rows = pa.Table.from_batches(
        [b for p in partitions for b in reader.read(p)], schema=reader.target
    )
    assert_same_rows(rows.select(["id"]), expected)
    assert plan.filter is not None


# --------------------------------------------------------------------------------------------
# Executors need the plan only


def _read_without_catalog(lake, shipped: bytes, partitions):
    """Unpickle the reader as an executor would and read ``partitions`` with the catalog
    file moved away (executors need the plan only); returns the reader and its rows."""
    os.rename(lake.metadata, lake.metadata + ".away")
    try:
        executor = pickle.loads(shipped)
        batches = [b for p in partitions for b in executor.read(p)]
    finally:
        os.rename(lake.metadata + ".away", lake.metadata)
    return executor, pa.Table.from_batches(batches, schema=executor.target)


def test_reader_and_partitions_pickle_and_read_without_the_catalog(make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'inl')")
    lake.sql("DELETE FROM lake.main.t WHERE id < 50")
    expected = lake.reference("SELECT * FROM lake.main.t WHERE id > 10")
    source = _source(lake, partition_bytes=1, pushdown="true")
    source = pickle.loads(pickle.dumps(source))  # as Spark ships it after schema()
    reader = source.reader(source.schema())
    reader.pushFilters([GreaterThan(("id",), 10)])
    shipped = pickle.dumps(reader)  # pyspark pickles the reader before partitions()
    partitions = pickle.loads(pickle.dumps(reader.partitions()))
    assert len(partitions) == 2
    executor, rows = _read_without_catalog(lake, shipped, partitions)
    assert_same_rows(rows, expected)
    assert list(executor.read(None)) == []


def test_importing_the_package_does_not_import_pyspark():
    code = "import sys, ducklake_datafusion; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------------------------
# Options and errors


def test_option_errors(spark, make_lake):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    metadata = lake.reader_args()["metadata"]
    with pytest.raises(InvalidOptionError, match="unknown option"):
        DuckLakeDataSource({"metadata": metadata, "path": "main.t", "acess_key_id": "x"}).schema()
    with pytest.raises(InvalidOptionError, match="needs .option\\('metadata'"):
        DuckLakeDataSource({"path": "main.t"}).schema()
    with pytest.raises(InvalidOptionError, match="partition_bytes"):
        DuckLakeDataSource({"metadata": metadata, "path": "t", "partition_bytes": "0"}).schema()
    with pytest.raises(InvalidOptionError, match="snapshot"):
        DuckLakeDataSource({"metadata": metadata, "path": "t", "snapshot": "x"}).schema()
    with pytest.raises(Exception, match="no table main.nope"):
        spark.read.format("ducklake").option("metadata", metadata).load("main.nope")
    with pytest.raises(Exception, match="has no snapshot 99"):
        _read(spark, lake, snapshot="99").collect()


def test_table_names():
    assert split_table_name("main.orders") == ("main", "orders")
    assert split_table_name("orders") == ("main", "orders")
    assert split_table_name('"my schema"."a.b"') == ("my schema", "a.b")
    assert split_table_name('s."say ""hi"""') == ("s", 'say "hi"')
    for bad in ("a.b.c", "", "a.", '"open'):
        with pytest.raises(InvalidOptionError):
            split_table_name(bad)


# --------------------------------------------------------------------------------------------
# The change feed (read_changes): DuckDB's ducklake_table_changes


def _changes_history(lake) -> int:
    """Inserts, deletes and updates in files and inlined, then schema changes (limit 5)."""
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, v DOUBLE, l INTEGER[])")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i / 2, [i] FROM range(200) r(i)")
    lake.sql(
        "INSERT INTO lake.main.t VALUES (1000, 'a', 1, [1]), (1001, NULL, 'nan', NULL), "
        "(1002, 'b', NULL, [])"
    )  # 3: inlined
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")  # 4: delete file
    lake.sql("DELETE FROM lake.main.t WHERE id IN (5, 1000)")  # 5: file row + inlined row
    lake.sql("UPDATE lake.main.t SET v = -v WHERE id % 25 = 7")  # 6: file update
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id IN (1001, 1002)")  # 7: inlined update
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 0")  # 8
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n', 0.5, [], i FROM range(200, 220) r(i)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")  # 10
    lake.sql("UPDATE lake.main.t SET w = id WHERE id BETWEEN 40 AND 59")  # 11
    lake.sql("INSERT INTO lake.main.t VALUES (3000, 'z', 2, [3], 3)")  # 12: inlined
    return 12


def _duckdb_changes(lake, a, b, columns: str = "*", where: str = "true"):
    return lake.reference(
        f"SELECT {columns} FROM ducklake_table_changes('lake', 'main', 't', {a}, {b}) WHERE {where}"
    )


def test_change_feed_matches_duckdb(spark, make_lake):
    lake = make_lake(inline_limit=5)
    last = _changes_history(lake)
    times = lake.reference("SELECT snapshot_id, snapshot_time FROM lake.snapshots()").to_pylist()
    when = {r["snapshot_id"]: r["snapshot_time"] for r in times}
    us = dt.timedelta(microseconds=1)
    start_time, end_time = when[6] - us, when[11] + us  # -> snapshots 6 and 11

    def tz(value: dt.datetime) -> str:
        return f"TIMESTAMPTZ '{value.astimezone(dt.timezone.utc).isoformat()}'"

    expected = [
        _duckdb_changes(lake, 0, last),
        _duckdb_changes(lake, 3, 7),  # ends before the schema changes
        _duckdb_changes(lake, tz(start_time), tz(end_time)),  # across ADD and RENAME
        _duckdb_changes(lake, 0, last, "id, change_type", "change_type = 'insert'"),
    ]
    metadata = lake.reader_args()["metadata"]

    whole = read_changes(spark, metadata, "main.t", 0)  # no end: the latest snapshot at load()
    assert whole.schema.simpleString() == (
        "struct<snapshot_id:bigint,rowid:bigint,change_type:string,id:int,s2:string,"
        "v:double,l:array<int>,w:int>"
    )
    got = whole.toArrow()
    assert_same_rows(got, expected[0])
    catalog = DuckLakeCatalog(metadata)
    core = table_changes(catalog, "main", "t", 0, last)
    catalog.backend.close()  # release the catalog file for the writer below
    assert_same_rows(got, core, ordered=True)  # partitions keep the feed's order

    df = _read(spark, lake, read_changes="3,7")
    assert df.columns == ["snapshot_id", "rowid", "change_type", "id", "s", "v", "l"]
    assert_same_rows(df.toArrow(), expected[1])

    df = _read(spark, lake, changes_start=start_time.isoformat(), changes_end=end_time.isoformat())
    assert_same_rows(df.toArrow(), expected[2])

    # no pushdown (pyspark's default pushFilters hands every filter back): Spark filters
    assert DuckLakeChangesReader.pushFilters is DataSourceReader.pushFilters
    inserts = whole.filter("change_type = 'insert'")
    assert_same_rows(inserts.select("id", "change_type").toArrow(), expected[3])

    # the bounds are resolved once per DataFrame: later commits change neither rows nor schema
    lake.sql("INSERT INTO lake.main.t VALUES (4000, 'late', 0, [], 0)")
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN l")
    lake.detach()  # a DuckDB catalog file: no readers while the writer has it attached
    assert inserts.count() == expected[3].num_rows and "l" in whole.columns
    again = read_changes(spark, lake.reader_args()["metadata"], "t", 0)  # a 1.1 copy: synced
    assert "l" not in again.columns
    assert again.filter("change_type = 'insert'").count() == expected[3].num_rows + 1
    with pytest.raises(Exception, match="SnapshotNotFoundError.*no snapshot 99"):
        _read(spark, lake, read_changes="0,99")


def test_change_feed_partitions_projection_and_errors(make_lake):
    """Planning without Spark: partitions, a user schema, executors without the catalog."""
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructType

    lake = make_lake(inline_limit=5)
    last = _changes_history(lake)
    expected = _duckdb_changes(lake, 2, last)
    projected = _duckdb_changes(lake, 4, 7, 'change_type, id AS "ID", v')
    source = pickle.loads(pickle.dumps(_source(lake, read_changes=f"2,{last}")))
    reader = source.reader(source.schema())
    shipped = pickle.dumps(reader)  # pyspark pickles the reader before partitions()
    for options, count in [({}, 1), ({"min_partitions": "3"}, 3), ({"partition_bytes": "1"}, 0)]:
        partitions = (
            _source(lake, read_changes=f"2,{last}", **options).reader(source.schema()).partitions()
        )
        assert len(partitions) == (count or expected.num_rows), options
    partitions = pickle.loads(pickle.dumps(partitions))
    executor, rows = _read_without_catalog(lake, shipped, partitions)
    assert_same_rows(rows, expected)
    assert list(executor.read(None)) == []

    # a user schema selects feed columns by name (any case) and may widen them
    user = StructType().add("change_type", StringType()).add("ID", LongType())
    user = user.add("v", DoubleType())
    reader = _source(lake, changes_start="4", changes_end="7").reader(user)
    rows = pa.Table.from_batches(
        [b for p in reader.partitions() for b in reader.read(p)], schema=reader.target
    )
    assert_same_rows(rows, projected)
    reader = _source(lake, changes_start=str(last)).reader(user)  # no end: the latest now
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    assert len(rows) == _duckdb_changes(lake, last, last).num_rows == 1
    with pytest.raises(InvalidOptionError, match="'nope', which is none"):
        _source(lake, read_changes="4,7").reader(
            StructType().add("nope", IntegerType())
        ).partitions()

    def fails(error, match, **options):
        with pytest.raises(error, match=match):
            _source(lake, **options).schema()

    fails(InvalidOptionError, "cannot be combined", read_changes="2,4", snapshot="3")
    fails(InvalidOptionError, "cannot be combined", changes_start="2", snapshot_time="2024-01-01")
    fails(InvalidOptionError, "must be '<start>,<end>'", read_changes="3")
    fails(InvalidOptionError, "already gives both", read_changes="2,4", changes_end="5")
    fails(InvalidOptionError, "needs a start", changes_end="5")
    fails(InvalidOptionError, "needs a start", read_changes="true")
    fails(InvalidOptionError, "neither a snapshot id", read_changes="0,yesterday")
    fails(SnapshotNotFoundError, "no snapshot 99", read_changes="99,100")
    fails(SnapshotNotFoundError, "at or after", changes_start="2999-01-01T00:00:00")
    fails(SnapshotNotFoundError, "at or before", read_changes="0,2001-01-01")
    fails(TableNotFoundError, "no table main.t at snapshot 0", read_changes="0,0")
    with pytest.raises(InvalidOptionError, match="use read_changes"):
        read_table(None, lake.metadata, "main.t", read_changes="2,4")


def test_worker_check_passes_and_explains_failures(spark):
    from ducklake_datafusion import __version__, errors
    from ducklake_datafusion.spark import _workers

    register_spark(spark)  # the local workers run this interpreter: no error
    assert spark.sparkContext.applicationId in _workers._checked
    with pytest.raises(errors.MissingDependencyError, match="PYSPARK_PYTHON"):
        _workers.explain_probe(
            [
                (
                    False,
                    "ModuleNotFoundError: No module named 'ducklake_datafusion'",
                    "/usr/bin/python3",
                )
            ]
        )
    with pytest.raises(errors.MissingDependencyError, match=f"driver runs {__version__}"):
        _workers.explain_probe([(True, "0.0.1", "/opt/other/python")])


WORKER_WITHOUT_PACKAGE = """
import os, sys
from pyspark.sql import SparkSession
from ducklake_datafusion import errors
from ducklake_datafusion.spark import register_spark
spark = SparkSession.builder.master("local[1]").getOrCreate()
try:
    register_spark(spark)
except errors.MissingDependencyError as exc:
    print("REFUSED", exc)
else:
    print("ACCEPTED")
spark.stop()
"""


@pytest.mark.slow
def test_workers_without_the_package_are_refused_clearly(tmp_path):
    """A real worker interpreter that lacks the package: a clear error, not a stack trace."""
    import site
    import subprocess
    import sys

    packages = site.getsitepackages()[0]
    # -S: no site processing, so the editable install's .pth (the package) is not seen,
    # while pyspark, py4j and pyarrow stay importable through PYTHONPATH.
    wrapper = tmp_path / "python-without-ducklake"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{packages}" exec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "driver.py"
    script.write_text(WORKER_WITHOUT_PACKAGE)
    env = {**os.environ, "PYSPARK_PYTHON": str(wrapper)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
        check=False, cwd=tmp_path,  # not the source tree, which would be importable
    )  # fmt: skip
    assert "REFUSED" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "PYSPARK_PYTHON" in done.stdout and "ducklake" in done.stdout


def test_spark_sql_views(spark, make_lake):
    """Every table as a temporary view, pinned registrations for time travel, and the
    format in SQL alone with options; each answer equals DuckDB's."""
    from ducklake_datafusion.spark import register_spark_views

    lake = make_lake(inline_limit=0)
    lake.sql('CREATE SCHEMA lake."sales 2"')
    lake.sql("CREATE TABLE lake.main.t AS SELECT i AS id, i % 3 AS g FROM range(100) r(i)")
    lake.sql('CREATE TABLE lake."sales 2".u AS SELECT 1 AS x')
    first = lake.snapshot_id()
    lake.sql("DELETE FROM lake.main.t WHERE id < 50")
    expected_now = lake.reference("SELECT g, count(*) AS n FROM lake.main.t GROUP BY g")
    expected_then = lake.reference(
        f"SELECT g, count(*) AS n FROM lake.main.t AT (VERSION => {first}) GROUP BY g"
    )
    args = lake.reader_args()
    created = register_spark_views(spark, args["metadata"])
    assert created == {"lake_main_t": "main.t", "lake_sales_2_u": "sales 2.u"}
    now = spark.sql("SELECT g, count(*) AS n FROM lake_main_t GROUP BY g").toArrow()
    assert_same_rows(now, expected_now)
    register_spark_views(spark, args["metadata"], prefix="then", snapshot=first)
    then = spark.sql("SELECT g, count(*) AS n FROM then_main_t GROUP BY g").toArrow()
    assert_same_rows(then, expected_then)
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW t_sql USING ducklake OPTIONS "
        f"(metadata '{args['metadata']}', path 'main.t', snapshot '{first}')"
    )
    assert_same_rows(
        spark.sql("SELECT g, count(*) AS n FROM t_sql GROUP BY g").toArrow(), expected_then
    )
    assert spark.sql("SELECT x FROM lake_sales_2_u").collect()[0]["x"] == 1


def test_read_table_reads_clean_files_natively(spark, make_lake, parquet_path):
    """Clean current-layout files go to Spark's Parquet reader, the rest to the source;
    every answer equals DuckDB's, with and without filters."""
    lake = make_lake(inline_limit=3)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, u UTINYINT, d DECIMAL(18, 3), "
        "f DOUBLE, s VARCHAR, b BLOB, day DATE, ts TIMESTAMP, tz TIMESTAMPTZ, "
        "tms TIMESTAMP_MS, flag BOOLEAN)"
    )
    for part in range(4):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, (i % 256)::UTINYINT, "
            f"i / 7, CASE WHEN i % 97 = 0 THEN 'nan'::DOUBLE ELSE i / 3 END, 's' || i, "
            f"('b' || i)::BLOB, DATE '2024-01-01' + (i % 400)::INT, "
            f"TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND, "
            f"TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE, "
            f"TIMESTAMP_MS '2024-01-01 00:00:00.123', i % 2 = 0 "
            f"FROM range({part * 500}, {(part + 1) * 500}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 600 AND 650")  # one file with deletes
    lake.sql("INSERT INTO lake.main.t (k, s) VALUES (9000, 'inlined')")
    args = lake.reader_args()
    df = read_table(spark, args["metadata"], "main.t", native=True)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "ducklake" in plan.lower()  # both halves
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    for where in ("k >= 1200 AND k < 1300", "s = 'inlined' OR k = 620", "f > 600"):
        expected = lake.reference(f"SELECT k, s FROM lake.main.t WHERE {where}")
        assert_same_rows(df.where(where).select("k", "s").toArrow(), expected)
    count = df.count()
    assert count == lake.reference("SELECT count(*) AS n FROM lake.main.t").column(0)[0].as_py()
    exact = read_table(spark, args["metadata"], "main.t", native=False)  # all through the source
    assert "FileScan parquet" not in exact._jdf.queryExecution().executedPlan().toString()
    assert_same_rows(exact.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


@pytest.mark.parametrize("version", ["3.4.4", "3.5.0", "4.0.5", "4.1.0", "4.3.0", "4.4.0.dev0"])
def test_pyspark_releases_before_3_5_get_a_clear_error(version):
    """pyspark 3.4 has no ``_metadata.row_index``: importing the subpackage there says
    which releases work instead of failing deep in a read (3.5 and 4.0 read natively:
    test_spark_versions.py)."""
    from ducklake_datafusion.errors import MissingDependencyError
    from ducklake_datafusion.spark._core._versions import require_supported_pyspark

    if version < "3.5":
        with pytest.raises(MissingDependencyError, match=rf"pyspark >= 3\.5.*{version}"):
            require_supported_pyspark(version)
    else:
        require_supported_pyspark(version)
