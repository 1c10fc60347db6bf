"""Spark's own Parquet reader on the scan plan: clean files plain, delete-bearing files masked.

Every answer is compared with DuckDB's reader of the same lake at the same snapshot and
with our exact path (the Python data source); plans are checked for which path each part
took, so a silent fallback cannot pass for the fast path.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import (
    LakeSpec,
    assert_same_rows,
    deleting_history,
    evolve_table,
    masked_natively,
    merged_inserts,
    row_grouped_deletes,
)
from support.spark_settings import spark_settings

pytest.importorskip("pyspark")

from pyspark.sql import functions as F

from ducklake_datafusion.errors import InvalidOptionError, UnsupportedFeatureError
from ducklake_datafusion.pathres import StorageOptions
from ducklake_datafusion.scan import FileRef
from ducklake_datafusion.spark import read_table
from ducklake_datafusion.spark._core._versions import has_data_source
from ducklake_datafusion.spark.parquet import _hadoop, _mask_join
from ducklake_datafusion.spark.parquet._files import hadoop_path
from ducklake_datafusion.spark.parquet._mask_join import _ID_SHIFT, _ID_SQL, _masks

pytestmark = pytest.mark.spark

# (the planner reads every catalog database with the same code as DataFusion's path, which
# reads SQLite catalogs in the lake matrix: Spark's side is the same for all of them)
LOCAL_CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "postgres")]
# Both ways of dropping deleted rows on the DuckDB catalog, the jar's reader on PostgreSQL:
# the mask join takes the same plan export whatever the catalog database (cut for time).
CATALOGS_BY_DELETES = pytest.mark.parametrize(
    ("spec", "deletes_by"),
    [(LOCAL_CATALOGS[0], "reader"), (LOCAL_CATALOGS[0], "join"), (LOCAL_CATALOGS[1], "reader")],
    ids=["reader-duckdb-local", "join-duckdb-local", "reader-postgres-local"],
    indirect=["deletes_by"],
)


@pytest.fixture(autouse=True)
def _own_path(parquet_path):
    """These tests check the plans of read_table's own native path; with the jar,
    read_table is otherwise the catalog's scan (tests/spark/test_spark_catalog.py)."""


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _both(spark, lake, **kw):
    """(native DataFrame, exact DataFrame) of ``main.t``; before pyspark 4.1, which has no
    exact path (the data source), the native one twice, still compared with DuckDB."""
    metadata = lake.reader_args()["metadata"]
    native = read_table(spark, metadata, "main.t", native=True, **kw)
    if not has_data_source():
        return native, native
    return native, read_table(spark, metadata, "main.t", native=False, **kw)


@CATALOGS_BY_DELETES
def test_deletes_applied_natively_match_duckdb_at_every_snapshot(
    spark, make_lake, spec, deletes_by
):
    lake = make_lake(spec, inline_limit=3)
    deleting_history(lake)
    first = 2  # the snapshot of the first INSERT
    last = lake.snapshot_id()
    for snapshot in range(first, last + 1):
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        native, exact = _both(spark, lake, snapshot=snapshot)
        assert_same_rows(native.toArrow(), expected)
        assert_same_rows(exact.toArrow(), expected)
        where = "g = 3 OR k BETWEEN 1490 AND 1570"
        expected = lake.reference(
            f"SELECT k, s FROM lake.main.t AT (VERSION => {snapshot}) WHERE {where}"
        )
        assert_same_rows(native.where(where).select("k", "s").toArrow(), expected)
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert masked_natively(plan, deletes_by) and "FileScan parquet" in plan

    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    expected = lake.reference("SELECT * FROM lake.main.t")
    native, _ = _both(spark, lake)
    assert_same_rows(native.toArrow(), expected)
    groups = lake.reference(
        "SELECT g, count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t GROUP BY g"
    )
    got = native.groupBy("g").agg({"*": "count", "k": "sum"}).toDF("g", "n", "sk")
    assert_same_rows(got.toArrow(), groups)


def test_every_file_is_masked_or_clean_and_the_source_reads_none(spark, make_lake, deletes_by):
    """Current-layout local files of native types all go native: no Python source part."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(5000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(5000, 6000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 3 = 0 AND k < 5000")
    _masked_natively_as_duckdb(spark, lake, deletes_by)


def _masked_natively_as_duckdb(spark, lake, deletes_by):
    """``main.t`` read natively, its deletes applied the ``deletes_by`` way, no data source
    part, with DuckDB's rows; the DataFrame."""
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert masked_natively(plan, deletes_by) and not _source_part(plan)
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    return native


def _data_files(lake) -> list[str]:
    return sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(lake.data_path)
        for name in names
        if name.startswith("ducklake-") and "delete" not in name
    )


def _twin_files(make_lake):
    """Two masked files of one length and modification time (the same rows but for a
    constant), with different deletes."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, part INTEGER)")
    for part in (1, 2):
        lake.sql(f"INSERT INTO lake.main.t SELECT i, {part} FROM range(3000) r(i)")
    files = _data_files(lake)
    for path in files:
        os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    assert len(files) == 2 and len({os.path.getsize(path) for path in files}) == 1
    lake.sql("DELETE FROM lake.main.t WHERE part = 1 AND k % 5 = 0")
    lake.sql("DELETE FROM lake.main.t WHERE part = 2 AND k % 7 = 0")
    return lake


def test_files_of_one_id_are_masked_in_separate_scans(spark, make_lake, mask_join):
    """The join names a file by its length and modification time: two masked files with
    the same of both must not share mask keys, so each gets its own scan and mask
    table, and both stay native."""
    lake = _twin_files(make_lake)
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert plan.count("BroadcastHashJoin") == 2
    assert "ducklake" not in plan.lower().replace("__ducklake_", "")  # no source part
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


@pytest.mark.data_source
def test_a_file_changed_while_spark_lists_it_takes_the_exact_path(
    spark, make_lake, monkeypatch, mask_join
):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 4 = 1")
    real, calls = _mask_join._file_id, []

    def drifting(task):  # the second look (after Spark's listing) sees another id
        calls.append(task)
        found = real(task)
        return found if len(calls) == 1 else found ^ 1

    monkeypatch.setattr(_mask_join, "_file_id", drifting)
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert len(calls) == 2 and "BroadcastHashJoin" not in plan
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


def test_masked_files_under_glob_characters_read_natively(spark, make_lake, deletes_by):
    lake = make_lake(inline_limit=0, name="lake [1]{a,b}")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 4 = 1")
    _masked_natively_as_duckdb(spark, lake, deletes_by)


def _source_part(plan: str) -> bool:
    """The ``ducklake`` data source reads part of the table (helper columns aside)."""
    helpers = ("__ducklake_", "_ducklake_internal_snapshot_id")
    plan = plan.lower()
    for helper in helpers:
        plan = plan.replace(helper, "")
    return "ducklake" in plan


def _native_at_every_snapshot(spark, lake) -> dict[int, str]:
    """Each snapshot from the first INSERT on, read natively with no data source part,
    has DuckDB's rows; returns the plans by snapshot."""
    plans = {}
    for snapshot in range(2, lake.snapshot_id() + 1):
        native, _ = _both(spark, lake, snapshot=snapshot)
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(native.toArrow(), expected)
        plans[snapshot] = _plan(native)
        assert not _source_part(plans[snapshot])
    return plans


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_inlined_rows_are_a_local_frame_beside_the_files(spark, make_lake, spec):
    """Inlined rows of every native type join the native scans as a local DataFrame: no
    Python source part, DuckDB's answers at every snapshot (inserted, deleted, updated)."""
    lake = make_lake(spec, inline_limit=10)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, b BOOLEAN, i8 TINYINT, u32 UINTEGER, f REAL, "
        "d DECIMAL(18, 3), s VARCHAR, bl BLOB, dt DATE, ts TIMESTAMP, tz TIMESTAMPTZ, "
        "tms TIMESTAMP_MS, tss TIMESTAMP_S)"
    )
    row = (
        "SELECT i, i % 2 = 0, (i % 100)::TINYINT, (i * 7)::UINTEGER, i / 3, i * 1.125, "
        "'s' || i, ('b' || i)::BLOB, DATE '2024-02-29' + i::INTEGER, "
        "TIMESTAMP '1969-12-31 23:59:59.123456' + INTERVAL (i) SECOND, "
        "TIMESTAMPTZ '2024-03-10 01:30:00+00' + INTERVAL (i) HOUR, "
        "TIMESTAMP_MS '2001-01-01 00:00:00.123', TIMESTAMP_S '1950-06-01 12:00:00' "
    )
    lake.sql(f"INSERT INTO lake.main.t {row} FROM range(500) r(i)")  # a file
    lake.sql(f"INSERT INTO lake.main.t {row} FROM range(500, 504) r(i)")  # inlined
    lake.sql("INSERT INTO lake.main.t (k) VALUES (NULL), (9999)")  # inlined, nulls
    lake.sql("DELETE FROM lake.main.t WHERE k IN (10, 501)")
    lake.sql("UPDATE lake.main.t SET s = 'updated' WHERE k = 502")
    plans = _native_at_every_snapshot(spark, lake)
    local = ("LocalTableScan", "Scan ExistingRDD")  # from Arrow (4.0+), from rows (3.5)
    assert all(any(s in plan for s in local) for snapshot, plan in plans.items() if snapshot >= 3)


def _ranged_lake(make_lake):
    """Four files of disjoint k ranges (two with deletes), dates and strings per range."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, d DATE, x DECIMAL(9, 2))")
    for part in range(4):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 'p{part}-' || i, DATE '2024-01-01' + {part * 40}, "
            f"i / 8 FROM range({part * 1000}, {part * 1000 + 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 0 AND k >= 2000")
    return lake


WHERE_FILES = {
    "k BETWEEN 1500 AND 1600": 1,
    "k >= 2990 AND k < 3010": 2,
    "k IN (5, 3500)": 2,
    "s >= 'p3' AND d > '2024-03-01'": 1,
    "x < 10.5": 1,
    "d = DATE '2024-02-10' OR k = 3999": 2,
    "NOT (k >= 1000)": 1,
    "upper(s) = 'P1-1500'": 4,  # not translatable: prunes nothing, still filters
    "k > 9000": 0,
}


@pytest.mark.parametrize("where", list(WHERE_FILES))
def test_where_prunes_files_by_catalog_statistics(spark, make_lake, where):
    lake = _ranged_lake(make_lake)
    metadata = lake.reader_args()["metadata"]
    expected = lake.reference(f"SELECT * FROM lake.main.t WHERE {where}")
    native = read_table(spark, metadata, "main.t", where=where)
    assert_same_rows(native.toArrow(), expected)
    assert len(native.inputFiles()) == WHERE_FILES[where]
    if has_data_source():
        exact = read_table(spark, metadata, "main.t", where=where, native=False)
        assert_same_rows(exact.toArrow(), expected)


def test_a_where_that_is_not_a_condition_on_the_table_is_refused(spark, make_lake):
    lake = _ranged_lake(make_lake)
    metadata = lake.reader_args()["metadata"]
    for where in ("no_such_column > 1", "k >", "k"):
        with pytest.raises(InvalidOptionError, match="main.t"):
            read_table(spark, metadata, "main.t", where=where)


@CATALOGS_BY_DELETES
def test_older_layouts_read_natively_by_field_id(spark, make_lake, spec, deletes_by):
    lake = make_lake(spec, inline_limit=0)
    evolve_table(lake, deletes=True)
    _native_at_every_snapshot(spark, lake)
    native, _ = _both(spark, lake)
    where = "v = 7 OR k BETWEEN 990 AND 1010"
    expected = lake.reference(f"SELECT k, name, w, m, note FROM lake.main.t WHERE {where}")
    assert_same_rows(native.where(where).select("k", "name", "w", "m", "note").toArrow(), expected)
    groups = lake.reference(
        "SELECT v, count(*) AS n, sum(w)::BIGINT AS sw FROM lake.main.t GROUP BY v"
    )
    got = native.groupBy("v").agg(F.count("*").alias("n"), F.sum("w").alias("sw"))
    assert_same_rows(got.toArrow(), groups)


def test_merged_files_drop_rows_of_later_snapshots_natively(spark, make_lake, deletes_by):
    lake = make_lake(inline_limit=0)
    merged_inserts(lake)
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 4")
    _native_at_every_snapshot(spark, lake)


def test_added_column_defaults_are_exact_literals(spark, make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(50) r(i)")
    for column in (
        "b BOOLEAN DEFAULT 'true'",
        "bl BLOB DEFAULT 'abc'",
        "f REAL DEFAULT 1.1",
        "x DECIMAL(9,3) DEFAULT 2.5",
        "i8 TINYINT DEFAULT -5",
        "u UINTEGER DEFAULT 4294967295",
        "s VARCHAR DEFAULT 'it''s'",
        "dt DATE DEFAULT '1969-07-20'",
    ):
        lake.sql(f"ALTER TABLE lake.main.t ADD COLUMN {column}")
    lake.sql("INSERT INTO lake.main.t (k) VALUES (100)")
    native, _ = _both(spark, lake)
    assert not _source_part(_plan(native))
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))

    lake.sql("ALTER TABLE lake.main.t ADD COLUMN big UBIGINT DEFAULT 18446744073709551615")
    if not has_data_source():  # the old files need the data source: refused, named
        with pytest.raises(UnsupportedFeatureError, match=r"main\.t .*layout"):
            _both(spark, lake)
        return
    native, _ = _both(spark, lake)
    assert _source_part(_plan(native))  # beyond a Spark long literal: the data source
    expected = lake.reference("SELECT k, big::DECIMAL(20, 0) AS big FROM lake.main.t")
    assert_same_rows(native.select("k", "big").toArrow(), expected)  # UBIGINT: decimal


@pytest.mark.data_source
def test_an_added_timestamp_default_keeps_old_files_on_the_source(spark, make_lake):
    """A timestamp literal would be read in Spark's session time zone: such layouts stay
    on the data source, which converts the default exactly."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100) r(i)")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN ts TIMESTAMP DEFAULT '2024-03-10 02:30:00'")
    lake.sql("INSERT INTO lake.main.t SELECT i, TIMESTAMP '2001-01-01' FROM range(100, 200) r(i)")
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert _source_part(plan) and "FileScan parquet" in plan
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


@pytest.mark.data_source
def test_where_on_a_table_the_data_source_reads(spark, make_lake):
    """A UUID column keeps the table on the data source: ``where`` filters (and the source
    prunes with the filters Spark pushes); a bad condition is still our typed error."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, u UUID)")
    for part in range(3):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, uuid() FROM range({part * 100}, {part * 100 + 100}) r(i)"
        )
    metadata = lake.reader_args()["metadata"]
    frame = read_table(spark, metadata, "main.t", where="k BETWEEN 150 AND 160")
    assert_same_rows(
        frame.select("k").toArrow(),
        lake.reference("SELECT k FROM lake.main.t WHERE k BETWEEN 150 AND 160"),
    )
    with pytest.raises(InvalidOptionError, match="main.t"):
        read_table(spark, metadata, "main.t", where="no_such_column = 1")


@pytest.mark.data_source
def test_a_column_named_like_the_metadata_column_stays_on_the_exact_path(spark, make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql('CREATE TABLE lake.main.t (k BIGINT, "_metadata" VARCHAR)')
    lake.sql("INSERT INTO lake.main.t SELECT i, 'm' || i FROM range(200) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 0")
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert "BroadcastHashJoin" not in plan and "parquet-deleted-rows" not in plan
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


def test_masks_hold_exactly_the_deleted_positions(monkeypatch):
    """Decoding the masks back gives the deleted positions, for any block and bit."""
    rng = np.random.default_rng(5)
    positions = np.unique(np.r_[0, 63, 64, 127, 128, rng.integers(0, 100_000, 3_000)])
    monkeypatch.setattr(_mask_join, "deleted_positions_of", lambda *a, **k: positions)

    class Plan:
        table, snapshot_id = "main.t", 1

    class Task:
        deletes, record_count = object(), 100_000
        file = type("F", (), {"url": "file:///x.parquet"})()

    keys, masks = _masks([Task()], [12_345], Plan(), None)
    assert np.all(keys >> _ID_SHIFT == 12_345)
    blocks = keys - (np.int64(12_345) << np.int64(_ID_SHIFT))
    words = len(masks.values) // len(masks)
    decoded = [
        (block * words + word) * 64 + bit
        for block, row in zip(blocks.tolist(), masks.to_pylist(), strict=True)
        for word, mask in enumerate(np.array(row, dtype=np.int64).view(np.uint64).tolist())
        for bit in range(64)
        if mask >> bit & 1
    ]
    assert decoded == positions.tolist()


def test_the_metadata_file_id_is_the_one_computed_on_the_driver(spark, tmp_path):
    """Contract: Spark's ``_metadata.file_size`` and ``file_modification_time``, which the
    masked join keys on (``_ID_SQL``), give the id ``_file_id`` computes from ``os.stat``,
    for paths with spaces, %, #, + and non-ASCII text, and a symlink."""
    folder = tmp_path / "a b%20c é#x+y"
    folder.mkdir()
    names = ["p q.parquet", "per%41cent.parquet", "ünï cödé.parquet", "h#a&s=h,@!$'()~.parquet"]
    for rows, name in enumerate(names, start=1):
        pq.write_table(pa.table({"k": list(range(rows * 100))}), folder / name)
    os.symlink(folder / names[0], folder / "link.parquet")
    paths = [os.path.join(folder, n) for n in [*names, "link.parquet"]]
    frame = spark.read.parquet(*[hadoop_path(p) for p in paths])
    reported = frame.select("_metadata.file_name", F.expr(_ID_SQL)).distinct().collect()

    class Task:
        def __init__(self, path):
            self.file = FileRef("file://" + path)

    assert sorted((unquote(name), file_id) for name, file_id in reported) == sorted(
        (os.path.basename(p), _mask_join._file_id(Task(p))) for p in paths
    )


@pytest.mark.data_source
def test_s3_without_a_connector_reads_through_the_source_and_says_so(
    spark, make_lake, caplog, monkeypatch
):
    """pyspark ships no s3a connector (a cluster without hadoop-aws, simulated):
    object-store files take the exact path, logged once."""
    monkeypatch.setattr(_hadoop, "_has_connector", lambda spark, scheme: False)
    lake = make_lake(LakeSpec("duckdb", "s3"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(300) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(300, 400) r(i)")  # clean
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 0 AND k < 300")
    args = lake.reader_args()
    _hadoop._said.clear()
    with caplog.at_level(logging.WARNING, logger="ducklake_datafusion.spark"):
        for _ in range(2):
            df = read_table(
                spark,
                args["metadata"],
                "main.t",
                native=True,
                storage_options=args["storage_options"],
            )
            assert "FileScan parquet" not in _plan(df)
            assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    said = [r.getMessage() for r in caplog.records if "s3a://" in r.getMessage()]
    assert len(said) == 1 and "hadoop-aws" in said[0]


def test_storage_options_map_onto_s3a_settings_of_the_lake_bucket():
    """MinIO-style options become per-bucket S3A read options; secrets stay out of repr."""
    storage = StorageOptions.from_user(
        {
            "endpoint_url": "http://127.0.0.1:9000",
            "aws_access_key_id": "AKID",
            "aws_secret_access_key": "SECRET",
            "aws_session_token": "TOKEN",
            "region": "eu-west-1",
        }
    )
    options = _hadoop.hadoop_options("s3://lake-bucket/data/a b.parquet", storage)
    prefix = "fs.s3a.bucket.lake-bucket."
    assert options[prefix + "endpoint"] == "http://127.0.0.1:9000"
    assert options[prefix + "connection.ssl.enabled"] == "false"
    assert options[prefix + "path.style.access"] == "true"  # MinIO serves paths
    assert options[prefix + "endpoint.region"] == "eu-west-1"
    assert (options[prefix + "access.key"], options[prefix + "secret.key"]) == ("AKID", "SECRET")
    assert options[prefix + "session.token"] == "TOKEN"
    assert options[prefix + "aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert all(not k.startswith("fs.s3a.") or k.startswith(prefix) for k in options)
    anonymous = _hadoop.hadoop_options(
        "s3://b/k.parquet", StorageOptions.from_user({"anonymous": True})
    )
    assert anonymous["fs.s3a.bucket.b.aws.credentials.provider"].endswith(
        "AnonymousAWSCredentialsProvider"
    )
    assert _hadoop.hadoop_url("s3://b/x/y z.parquet") == "s3a://b/x/y z.parquet"
    assert _hadoop.hadoop_url("abfss://c@acct.dfs.core.windows.net/p/q.parquet") == (
        "abfss://c@acct.dfs.core.windows.net/p/q.parquet"
    )
    assert (
        _hadoop.hadoop_options(
            "az://c/p.parquet", StorageOptions.from_user({"account_name": "a", "sas_token": "t"})
        )
        is None
    )  # no mapping: the Python source reads such files


# Which parts a table state is read from: (files Spark reads natively, files only the data
# source reads, inlined rows). Every mix of them, each also with a delete in every part.
PART_MIXES = [
    (native, source, inlined)
    for native in (False, True)
    for source in (False, True)
    for inlined in (False, True)
    if native or source or inlined
]


def _mixed_parts_table(lake, tmp_path, name: str, native: bool, source: bool, inlined: bool):
    """``main.<name>`` with the parts asked for: DuckDB-written files (field ids: native),
    files added with ``ducklake_add_data_files`` (no field ids: data source only), and
    rows small enough to stay inlined; then a delete that reaches every part."""
    lake.sql(f"CREATE TABLE lake.main.{name} (k BIGINT, s VARCHAR)")
    if native:
        lake.sql(f"INSERT INTO lake.main.{name} SELECT i, 'n' || i FROM range(0, 100) r(i)")
    if source:
        path = tmp_path / f"{name}_added.parquet"
        lake.sql(f"COPY (SELECT i AS k, 'a' || i AS s FROM range(100, 150) r(i)) TO '{path}'")
        lake.sql(f"CALL ducklake_add_data_files('lake', '{name}', '{path}')")
    if inlined:
        lake.sql(f"INSERT INTO lake.main.{name} VALUES (200, 'i200'), (201, 'i201')")
    lake.sql(f"DELETE FROM lake.main.{name} WHERE k IN (7, 107, 201)")


@pytest.mark.data_source
def test_every_mix_of_native_source_and_inlined_parts_reads_each_row_once(
    spark, make_lake, tmp_path
):
    """No row is read twice or lost wherever ``read_table`` splits a table between Spark's
    reader, the data source and the local frame of inlined rows (files registered with
    ``ducklake_add_data_files`` beside inlined rows once read those rows twice), at every
    snapshot of every mix, with and without ``where=``, and on the exact path."""
    lake = make_lake(inline_limit=10)
    states = {}  # table -> the snapshots of its history
    for native, source, inlined in PART_MIXES:
        name = f"t_{native:d}{source:d}{inlined:d}"
        created = lake.snapshot_id() + 1
        _mixed_parts_table(lake, tmp_path, name, native, source, inlined)
        states[name] = (source, range(created, lake.snapshot_id() + 1))
    metadata = lake.reader_args()["metadata"]
    source_parts = 0
    for name, (source, snapshots) in states.items():
        for snapshot in snapshots:
            table = f"lake.main.{name} AT (VERSION => {snapshot})"
            expected = lake.reference(f"SELECT * FROM {table}")
            for native in (True, False):
                df = read_table(spark, metadata, f"main.{name}", snapshot=snapshot, native=native)
                assert_same_rows(df.toArrow(), expected)
                source_parts += native and source and _source_part(_plan(df))
            where = "k % 2 = 0"
            df = read_table(spark, metadata, f"main.{name}", snapshot=snapshot, where=where)
            assert_same_rows(df.toArrow(), lake.reference(f"SELECT * FROM {table} WHERE {where}"))
    assert source_parts > 0  # the mixes did put files on the data source


def _row_grouped_lake(make_lake):
    """Two files of five row groups each, deletes in every row group of one of them and
    in a few of the other (inlined deletes too)."""
    lake = make_lake(inline_limit=0)
    row_grouped_deletes(lake)
    return lake


@pytest.mark.parametrize(
    "conf",
    [
        {},
        {"spark.sql.parquet.enableVectorizedReader": "false"},  # rows from parquet-mr
        {"spark.sql.codegen.wholeStage": "false"},  # rows out of columnar batches
        {"spark.sql.columnVector.offheap.enabled": "true"},
        {"spark.sql.files.maxPartitionBytes": "4096", "spark.sql.files.openCostInBytes": "0"},
        {"spark.sql.parquet.columnarReaderBatchSize": "100"},
    ],
    ids=["batches", "parquet-mr-rows", "batch-rows", "off-heap", "split-files", "small-batches"],
)
def test_the_reader_drops_deleted_rows_in_every_reading_mode(spark, make_lake, deletes_by, conf):
    """Spark's reader yields columnar batches or rows, on or off the heap, of whole files or
    of splits that start mid-file: every way, exactly DuckDB's rows (and the filters'
    answers, row groups pruned), on both ways of applying deletes."""
    lake = _row_grouped_lake(make_lake)
    metadata = lake.reader_args()["metadata"]
    with spark_settings(spark, conf):
        native = read_table(spark, metadata, "main.t")
        assert masked_natively(_plan(native), deletes_by)
        assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
        for where in ("k BETWEEN 4090 AND 6200", "k >= 14000 AND k < 14100", "s = 's10'"):
            expected = lake.reference(f"SELECT k FROM lake.main.t WHERE {where}")
            assert_same_rows(native.where(where).select("k").toArrow(), expected)
        got = native.groupBy((F.col("k") % 3).alias("m")).agg(F.count("*").alias("n"))
        expected = lake.reference("SELECT k % 3 AS m, count(*) AS n FROM lake.main.t GROUP BY m")
        assert_same_rows(got.toArrow(), expected)


def test_files_of_equal_length_and_time_share_one_reader_scan(spark, make_lake, deletes_by):
    """The reader names files by path: two masked files of one length and modification
    time are read in one scan, each with its own deletes."""
    if deletes_by != "reader":
        pytest.skip("the mask join's case: test_files_of_one_id_are_masked_in_separate_scans")
    lake = _twin_files(make_lake)
    native, _ = _both(spark, lake)
    plan = _plan(native)
    assert plan.count("parquet-deleted-rows") == 1 and not _source_part(plan)
    assert_same_rows(native.toArrow(), lake.reference("SELECT * FROM lake.main.t"))


def test_the_reader_refuses_a_file_whose_listed_length_is_not_the_catalogs(
    spark, make_lake, deletes_by, monkeypatch
):
    """Spark's listing disagreeing with the catalog's length (the file replaced after
    planning, simulated): the read fails naming the file, table and snapshot, never
    applying one file's deletes to another's rows."""
    if deletes_by != "reader":
        pytest.skip("the mask join leaves such files to the exact path")
    import dataclasses

    from ducklake_datafusion.spark.parquet import _deleted_rows

    real = _deleted_rows._encoded

    def lengthened(tasks, plan, storage):
        tasks = [
            dataclasses.replace(t, file=dataclasses.replace(t.file, size=t.file.size + 1))
            for t in tasks
        ]
        return real(tasks, plan, storage)

    monkeypatch.setattr(_deleted_rows, "_encoded", lengthened)
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 4 = 1")
    native = read_table(spark, lake.reader_args()["metadata"], "main.t")
    with pytest.raises(
        Exception,
        match=r"DataFileCorruptError: data file .*ducklake-.*\.parquet "
        r"of table main\.t \(snapshot \d+\) is \d+ bytes in Spark's listing",
    ):
        native.collect()


def test_deleted_rows_travel_sorted_or_as_a_bitmap_whichever_is_smaller(monkeypatch):
    """The reader's deleted positions (``_deleted_rows._encoded``): few deletes as sorted
    positions, more than one in 64 rows as a bitmap; both decode to the very positions."""
    import struct

    from ducklake_datafusion.spark.parquet import _deleted_rows

    sparse = np.array([0, 63, 64, 9_999], dtype=np.int64)
    dense = np.arange(3, 5_000, 7, dtype=np.int64)
    by_url = {"file:///a.parquet": sparse, "file:///b.parquet": dense}
    monkeypatch.setattr(
        _deleted_rows, "deleted_positions_of", lambda task, *a, **k: by_url[task.file.url]
    )

    class Plan:
        table, snapshot_id = "main.t", 4

    tasks = [type("T", (), {"file": FileRef(url, size=10)})() for url in by_url]
    blob = memoryview(_deleted_rows._encoded(tasks, Plan(), None))
    at = 0

    def take(fmt):
        nonlocal at
        values = struct.unpack_from(fmt, blob, at)
        at += struct.calcsize(fmt)
        return values

    (name_length,) = take("<i")
    assert bytes(blob[at : at + name_length]) == b"table main.t (snapshot 4)"
    at += name_length
    decoded, kinds = {}, {}
    for _ in range(take("<i")[0]):
        (url_length,) = take("<i")
        url = bytes(blob[at : at + url_length]).decode()
        at += url_length
        length, count = take("<qi")
        assert length == 10
        values = np.frombuffer(blob, dtype="<i8", count=abs(count), offset=at)
        at += 8 * abs(count)
        if count < 0:
            bits = np.unpackbits(values.view(np.uint8), bitorder="little")
            decoded[url], kinds[url] = np.flatnonzero(bits), "bitmap"
        else:
            decoded[url], kinds[url] = values, "sorted"
    assert at == len(blob)
    assert kinds == {"file:///a.parquet": "sorted", "file:///b.parquet": "bitmap"}
    for url, positions in by_url.items():
        assert decoded[url].tolist() == positions.tolist()


def test_deletes_in_hive_partitioned_folders(spark, make_lake, deletes_by):
    """Files in ``key=value`` folders (a partitioned table) with deletes: Spark's reader
    sees the folders' values as partition columns; the rows are still exactly DuckDB's."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    lake.sql("ALTER TABLE lake.main.t SET PARTITIONED BY (g)")
    lake.sql("INSERT INTO lake.main.t SELECT i, i % 3, 's' || i FROM range(3000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 5 = 0 AND g < 2")
    native = _masked_natively_as_duckdb(spark, lake, deletes_by)
    got = native.where("g = 1 AND k < 100").select("k", "s")
    expected = lake.reference("SELECT k, s FROM lake.main.t WHERE g = 1 AND k < 100")
    assert_same_rows(got.toArrow(), expected)
