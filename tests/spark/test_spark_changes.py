"""``read_changes`` computed by Spark: side scans of the differing files joined on rowid.

Every feed is compared with DuckDB's ``ducklake_table_changes`` for the same range and with
the core's ``table_changes`` (row for row, in its order); where the two deliberately
differ (compaction, flush, rewrites and no-op updates show no changes) with the core only.
The Spark session is shared (``conftest.spark``); each test builds its own small lake.
"""

from __future__ import annotations

import datetime as dt
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import has_data_source

if not has_data_source():  # test_spark_versions.py covers what older releases do
    pytest.skip("the ducklake data source needs pyspark 4.1+", allow_module_level=True)

from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructType
from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from ducklake_datafusion.provider.functions import table_changes
from ducklake_datafusion.read._changes import plan_changes
from ducklake_datafusion.spark import read_changes
from ducklake_datafusion.spark._core._options import SourceOptions
from ducklake_datafusion.spark.changes._side_source import DuckLakeChangeSideReader
from ducklake_datafusion.spark.changes._side_units import (
    FileDiff,
    PickedRows,
    StateRows,
    side_units,
)

pytestmark = pytest.mark.spark


def _duckdb(lake, a, b, columns: str = "*"):
    return lake.reference(
        f"SELECT {columns} FROM ducklake_table_changes('lake', 'main', 't', {a}, {b})"
    )


def _core(lake, a, b) -> pa.Table:
    catalog = DuckLakeCatalog(**lake.reader_args())
    try:
        return table_changes(catalog, "main", "t", a, b)
    finally:
        catalog.backend.close()  # a DuckDB catalog file: release it for the writer


def _plan(lake, a, b):
    catalog = DuckLakeCatalog(**lake.reader_args())
    try:
        return plan_changes(catalog, "main", "t", a, b)
    finally:
        catalog.backend.close()


def _ours(spark, lake, a, b=None, **kw):
    return read_changes(spark, lake.reader_args()["metadata"], "main.t", a, b, **kw)


def _check(spark, lake, ranges, *, duckdb: bool = True) -> list[pa.Table]:
    """Ours equals DuckDB's feed (as multisets) and the core's (in order) on every range."""
    expected = [_duckdb(lake, a, b) if duckdb else None for a, b in ranges]
    feeds = []
    for (a, b), want in zip(ranges, expected):
        got = _ours(spark, lake, a, b).toArrow()
        if want is not None:
            assert_same_rows(got, want)
        assert_same_rows(got, _core(lake, a, b), ordered=True)
        feeds.append(got)
    return feeds


def _per_snapshot(feed: pa.Table) -> dict[int, int]:
    counts = pc.value_counts(feed["snapshot_id"]).to_pylist()
    return {c["values"]: c["counts"] for c in counts}


# --------------------------------------------------------------------------------------------


def test_inserts_deletes_updates_and_inlined_rows(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, v DOUBLE, l INTEGER[])")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i / 2, [i] FROM range(300) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 't', i, [] FROM range(300, 400) r(i)")  # 3
    lake.sql(
        "INSERT INTO lake.main.t VALUES (1000, 'a', 1, [1]), (1001, NULL, 'nan', NULL), "
        "(1002, 'b', NULL, [])"
    )  # 4: inlined
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")  # 5: delete files
    lake.sql("DELETE FROM lake.main.t WHERE id IN (5, 1000)")  # 6: a file row, an inlined row
    lake.sql("UPDATE lake.main.t SET v = -v WHERE id % 25 = 7")  # 7: updates across files
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id IN (1001, 1002)")  # 8: inlined, NaN kept
    lake.sql("UPDATE lake.main.t SET l = [id, id] WHERE id = 301")  # 9: only a list changes
    lake.sql("UPDATE lake.main.t SET v = v WHERE id = 302")  # 10: a no-op update
    lake.sql("DELETE FROM lake.main.t WHERE id >= 300 AND id < 400")  # 11: a whole file
    _check(spark, lake, [(0, 11), (4, 8)], duckdb=False)
    _check(spark, lake, [(0, 9)])  # before the no-op update: DuckDB agrees
    assert _ours(spark, lake, 10, 10).count() == 0  # a no-op update is no change


def test_schema_change_inside_the_range(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, x INTEGER)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i FROM range(50) r(i)")  # 2
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")  # 3: no changes
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n', i, i FROM range(50, 60) r(i)")  # 4
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")  # 5
    lake.sql("UPDATE lake.main.t SET w = id WHERE id < 5")  # 6: the added column
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN id TYPE BIGINT")  # 7
    lake.sql("UPDATE lake.main.t SET x = -x WHERE id BETWEEN 20 AND 22")  # 8
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN x")  # 9
    lake.sql("INSERT INTO lake.main.t VALUES (3000, 'z', 3)")  # 10: inlined
    shown, until_8 = _check(spark, lake, [(2, 6), (5, 8)])
    whole = _check(spark, lake, [(0, 10)], duckdb=False)[0]  # see below
    assert whole.schema.names == ["snapshot_id", "rowid", "change_type", "id", "s2", "w"]
    assert [f.type for f in whole.schema][3:] == [pa.int64(), pa.string(), pa.int32()]
    # the update of x at 8 is a pair while x exists, and nothing once the feed's end
    # snapshot has dropped x (the rows are equal in its columns), as table_changes
    assert 8 not in _per_snapshot(whole) and _per_snapshot(until_8)[8] == 6
    assert 3 not in _per_snapshot(shown)  # ADD COLUMN with a default changes no row
    before = _ours(spark, lake, 2, 4)
    assert before.columns == ["snapshot_id", "rowid", "change_type", "id", "s", "x", "w"]


def test_compaction_flush_and_rewrites_show_no_changes(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' FROM range(20) r(i)")  # 2
    lake.sql("INSERT INTO lake.main.t SELECT i, 'b' FROM range(20, 40) r(i)")  # 3
    lake.sql("INSERT INTO lake.main.t VALUES (100, 'x'), (101, 'y')")  # 4: inlined
    lake.sql("UPDATE lake.main.t SET s = 'z' WHERE id = 101")  # 5: inlined update
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")  # 6
    lake.sql("DELETE FROM lake.main.t WHERE id IN (1, 25)")  # 7: rows of the merged file
    lake.sql("CALL ducklake_flush_inlined_data('lake')")  # 8
    lake.sql("UPDATE lake.main.t SET s = 'w' WHERE id IN (100, 2)")  # 9
    lake.sql("DELETE FROM lake.main.t WHERE id >= 3 AND id < 20")  # 10
    lake.sql("CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.3)")  # 11
    lake.sql("UPDATE lake.main.t SET s = 'v' WHERE id = 0")  # 12
    last = lake.snapshot_id()
    assert last == 12
    plan = _plan(lake, 0, last)
    kinds = {type(u) for side in ("old", "new") for u in side_units(plan, side)}
    assert kinds == {StateRows, PickedRows, FileDiff}  # every way a side reads
    whole = _check(spark, lake, [(0, last), (5, 9)], duckdb=False)[0]
    _check(spark, lake, [(9, 10)])
    counts = _per_snapshot(whole)
    assert 6 not in counts and 8 not in counts and 11 not in counts
    assert counts[7] == 2 and counts[9] == 4 and counts[12] == 2


def test_time_bounds(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER)")  # 1
    for i in range(2, 7):
        lake.sql(f"INSERT INTO lake.main.t SELECT i FROM range({i * 10}, {i * 10 + 10}) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 3 = 0")  # 7
    times = {
        r["snapshot_id"]: r["snapshot_time"]
        for r in lake.reference("SELECT * FROM lake.snapshots()").to_pylist()
    }
    us = dt.timedelta(microseconds=1)
    utc = dt.timezone.utc
    expected = _duckdb(lake, 3, 5)
    latest = _duckdb(lake, 4, 7)
    cases = [
        (times[3], times[5]),  # exact times
        (times[3] - us, times[5] + us),  # first at or after, last at or before
        (times[3].astimezone(utc).replace(tzinfo=None).isoformat(), "5"),  # naive ISO: UTC
        (times[3].isoformat(), times[6] - us),
    ]
    for start, end in cases:
        assert_same_rows(_ours(spark, lake, start, end).toArrow(), expected)
    assert_same_rows(_ours(spark, lake, times[4]).toArrow(), latest)  # no end: the latest
    assert _ours(spark, lake, times[5], times[3]).count() == 0  # start after end: no rows
    with pytest.raises(SnapshotNotFoundError, match="at or after"):
        _ours(spark, lake, times[7] + us)
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        _ours(spark, lake, 0, dt.datetime(2001, 1, 1, tzinfo=utc))


def test_exact_values_maps_nested_and_nanoseconds(spark, make_lake):
    """Updates Spark's types would hide (nanoseconds, INTERVAL) and maps Spark cannot compare."""
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.t (id INTEGER, ts TIMESTAMP_NS, m MAP(VARCHAR, INTEGER), "
        "st STRUCT(a INTEGER, b VARCHAR[]), iv INTERVAL, d DOUBLE)"
    )  # 1
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, TIMESTAMP_NS '2024-01-01 00:00:00.000000001', "
        "MAP {'k': i}, {'a': i, 'b': ['x']}, INTERVAL 1 DAY, 'nan' FROM range(10) r(i)"
    )  # 2
    lake.sql(
        "UPDATE lake.main.t SET ts = TIMESTAMP_NS '2024-01-01 00:00:00.000000002' WHERE id = 1"
    )  # 3: only nanoseconds
    lake.sql("UPDATE lake.main.t SET m = MAP {'k': 99} WHERE id = 2")  # 4
    lake.sql("UPDATE lake.main.t SET st = {'a': 2, 'b': ['x', NULL]} WHERE id = 3")  # 5
    lake.sql("UPDATE lake.main.t SET iv = INTERVAL 24 HOUR WHERE id = 4")  # 6: INTERVAL only
    lake.sql("UPDATE lake.main.t SET d = 'nan' WHERE id = 5")  # 7: NaN -> NaN: no change
    lake.sql("UPDATE lake.main.t SET m = MAP {'k': 2} WHERE id = 2")  # 8: back
    columns = "snapshot_id, rowid, change_type, id"
    expected = _duckdb(lake, 0, 6, columns)
    schema = "snapshot_id BIGINT, rowid BIGINT, change_type STRING, id INT"
    got = _ours(spark, lake, 0, 8, schema=schema).toArrow()
    assert_same_rows(got.filter(pc.less_equal(got["snapshot_id"], 6)), expected)
    assert _per_snapshot(got) == {2: 10, 3: 2, 4: 2, 5: 2, 6: 2, 8: 2}
    core = _core(lake, 0, 8).select(["snapshot_id", "rowid", "change_type", "id"])
    assert_same_rows(got, core, ordered=True)
    # the other columns read back as the core's (nanoseconds cut by Spark)
    feed = _ours(
        spark,
        lake,
        3,
        5,
        schema=f"{schema}, ts TIMESTAMP_NTZ, m MAP<STRING, INT>, "
        "st STRUCT<a: INT, b: ARRAY<STRING>>, d DOUBLE",
    ).toArrow()
    want = _core(lake, 3, 5).drop_columns(["iv"])
    micros = pc.CastOptions(pa.timestamp("us"), allow_time_truncate=True)
    want = want.set_column(4, "ts", pc.cast(want["ts"], options=micros))
    assert feed.column_names == want.column_names
    assert_same_rows(feed, want, ordered=True)


def test_user_schema_selects_and_retypes(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, v DOUBLE)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's', i FROM range(20) r(i)")  # 2
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id < 3")  # 3: a column not selected
    lake.sql("DELETE FROM lake.main.t WHERE id = 10")  # 4
    expected = _duckdb(lake, 2, 4, 'change_type, id::BIGINT AS "ID", v')
    user = StructType().add("change_type", StringType()).add("ID", LongType())
    user = user.add("v", DoubleType())
    got = _ours(spark, lake, 2, 4, schema=user)
    assert got.columns == ["change_type", "ID", "v"]
    assert_same_rows(got.toArrow(), expected)
    narrowed = _ours(spark, lake, 3, 3, schema="id INT, rowid INT")
    assert narrowed.schema.simpleString() == "struct<id:int,rowid:int>"
    assert narrowed.count() == 6  # the update pairs of column s
    with pytest.raises(InvalidOptionError, match="'nope', which is none"):
        _ours(spark, lake, 2, 4, schema=StructType().add("nope", IntegerType()))
    with pytest.raises(InvalidOptionError, match="cannot be read as"):
        _ours(spark, lake, 2, 4, schema="s ARRAY<INT>")


def test_feed_is_computed_by_spark_not_collected_on_the_driver(spark, make_lake):
    """The plan joins two executor scans; planning ships plans and positions, never rows."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(5000) r(i)")  # 2
    lake.sql("DELETE FROM lake.main.t WHERE id = 4321")  # 3: one row of a big file
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id = 7")  # 4
    df = _ours(spark, lake, 3, 4)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "SortMergeJoin" in plan and "FullOuter" in plan, plan
    assert plan.count("BatchScan ducklake_change_side") == 2, plan
    assert "LocalTableScan" not in plan, plan
    assert_same_rows(df.toArrow(), _duckdb(lake, 3, 4))

    # only the differing rows of the big file are picked (at positions), on the old side,
    # in one read for both steps
    feed_plan = _plan(lake, 3, 4)
    old, new = side_units(feed_plan, "old"), side_units(feed_plan, "new")
    assert [type(u) for u in old] == [PickedRows]
    positions, snapshots = old[0].ordered()
    assert positions.tolist() == [7, 4321] and snapshots.tolist() == [4, 3]
    assert [type(u) for u in new] == [StateRows]  # the updated row's new file
    # the reader pickles as plain data; partitions hold plans, not feed rows
    options = SourceOptions.parse(
        {
            "metadata": lake.reader_args()["metadata"],
            "path": "main.t",
            "changes_start": "3",
            "changes_end": "4",
        }
    )
    schema = StructType.fromDDL("__snapshot BIGINT, __rowid BIGINT, __c_0 INT, __c_1 STRING")
    reader = pickle.loads(pickle.dumps(DuckLakeChangeSideReader(options, "old", schema)))
    partitions = pickle.loads(pickle.dumps(reader.partitions()))
    rows = [r for p in partitions for b in reader.read(p) for r in b.to_pylist()]
    assert sorted(r["__c_0"] for r in rows) == [7, 4321]
    assert list(reader.read(None)) == []


def test_expired_snapshots_and_errors(spark, make_lake):
    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' FROM range(20) r(i)")  # 2
    lake.sql("INSERT INTO lake.main.t SELECT i, 'b' FROM range(20, 40) r(i)")  # 3
    lake.sql("DELETE FROM lake.main.t WHERE id % 4 = 0")  # 4
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id % 4 = 2")  # 5
    lake.sql("CALL ducklake_expire_snapshots('lake', versions => [2, 3])")
    _check(spark, lake, [(1, 5)], duckdb=False)  # 2, 3 folded into 4
    _check(spark, lake, [(4, 5)])
    metadata = lake.reader_args()["metadata"]
    with pytest.raises(SnapshotNotFoundError, match="no snapshot 3"):
        read_changes(spark, metadata, "main.t", 3, 5)
    with pytest.raises(TableNotFoundError, match="no table main.nope"):
        read_changes(spark, metadata, "main.nope", 1, 5)
    with pytest.raises(InvalidOptionError, match="unknown option"):
        read_changes(spark, metadata, "main.t", 1, 5, change_side="old")
    with pytest.raises(InvalidOptionError, match="neither a snapshot id"):
        read_changes(spark, metadata, "main.t", "yesterday")


@pytest.mark.parametrize("storage", ["s3", "minio", "gcs", "azure"])
def test_object_storage_from_executors(spark, make_lake, storage):
    """Both side scans reach the store with the storage options (executors, not the driver):
    S3 on moto and MinIO, GCS and Azure on their emulators."""
    from support.lakes import LakeSpec

    lake = make_lake(LakeSpec("duckdb", storage), inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")  # 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' FROM range(500) r(i)")  # 2
    lake.sql("INSERT INTO lake.main.t SELECT i, 't' FROM range(500, 900) r(i)")  # 3
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id % 100 = 1")  # 4
    lake.sql("DELETE FROM lake.main.t WHERE id BETWEEN 600 AND 610")  # 5
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inl')")  # 6
    expected = _duckdb(lake, 2, 6)
    args = lake.reader_args()
    df = read_changes(
        spark,
        args["metadata"],
        "main.t",
        2,
        6,
        storage_options=args["storage_options"],
        data_path=args.get("data_path"),
        partition_bytes="1",
    )
    assert_same_rows(df.toArrow(), expected)
