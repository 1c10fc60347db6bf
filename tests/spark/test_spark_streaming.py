"""Structured Streaming into the lake: ``df.writeStream.toTable("lake.main.t")`` through the
catalog, each micro-batch one snapshot, exactly once across restarts; read back by DuckDB.
"""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.ddl_twins import assert_evolved_alike
from support.lakes import LakeSpec, assert_same_rows
from support.twins import twin_lakes

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import pyspark_at_least

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT, s STRING"


def _drop(directory, batch: int, start: int, count: int) -> pa.Table:
    """A new input file of ``count`` rows for the stream to pick up."""
    rows = pa.table(
        {"id": pa.array(range(start, start + count), pa.int64()), "s": [f"b{batch}"] * count}
    )
    pq.write_table(rows, directory / f"part-{batch}.parquet")
    return rows


def _streaming_snapshots(lake) -> list[dict]:
    rows = lake.reference(
        "SELECT snapshot_id, commit_extra_info FROM __ducklake_metadata_lake."
        "ducklake_snapshot_changes WHERE commit_extra_info LIKE '{\"spark_streaming%' "
        "ORDER BY snapshot_id"
    ).to_pylist()
    return [json.loads(r["commit_extra_info"]) for r in rows]


def test_a_stream_appends_each_batch_once_across_restarts(spark, make_lake, catalog, tmp_path):
    """Two micro-batches, two snapshots; the query dies after the second batch's commit and
    before its checkpoint (its commit log entry removed), and is started again: the batch
    runs again, its commit is recognised and skipped, and the next batch is appended. DuckDB
    reads every row exactly once."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    name = catalog(lake)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()

    def run() -> None:
        query = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source))
            .writeStream.option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .toTable(f"{name}.main.t")
        )
        query.awaitTermination()
        assert query.exception() is None

    written = [_drop(source, 0, 0, 10), _drop(source, 1, 10, 10)]
    run()
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), pa.concat_tables(written))
    marks = _streaming_snapshots(lake)
    assert [m["batch_id"] for m in marks] == [0, 1]
    assert len({m["spark_streaming_query_id"] for m in marks}) == 1
    query_id = marks[0]["spark_streaming_query_id"]
    # the query's record, one row DuckDB lists among the table's options
    assert _stream_records(lake) == {
        f"ducklake_datafusion_stream:{query_id}": f"1:{lake.snapshot_id()}"
    }

    # died after batch 1's commit, before its checkpoint: no commit log entry (nor checksum)
    for entry in ("1", ".1.crc"):
        (checkpoint / "commits" / entry).unlink(missing_ok=True)
    # and its batches were committed by a release that kept no record: the markers say it
    lake.detach()
    con = duckdb.connect(lake.metadata)
    con.execute("DELETE FROM ducklake_metadata WHERE key LIKE 'ducklake_datafusion_stream:%'")
    con.close()
    written.append(_drop(source, 2, 20, 5))
    run()
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), pa.concat_tables(written))
    assert [m["batch_id"] for m in _streaming_snapshots(lake)] == [0, 1, 2]
    assert _stream_records(lake) == {
        f"ducklake_datafusion_stream:{query_id}": f"2:{lake.snapshot_id()}"
    }
    listed = lake.reference("SELECT count(*) AS n FROM ducklake_list_files('lake', 't')")
    files = sum(1 for p in lake_files(lake))
    assert listed.column(0)[0].as_py() == files, "the replayed batch's files were deleted"


def _stream_records(lake) -> dict[str, str]:
    rows = lake.reference(
        "SELECT option_name, value FROM ducklake_options('lake') WHERE scope = 'TABLE'"
    ).to_pylist()
    return {r["option_name"]: r["value"] for r in rows}


def lake_files(lake):
    import os

    for root, _, names in os.walk(lake.data_path):
        yield from (os.path.join(root, n) for n in names if n.endswith(".parquet"))


def test_complete_mode_replaces_the_rows_each_batch(spark, make_lake, catalog, tmp_path):
    """An aggregation in ``complete`` mode: every batch replaces the table's rows (one
    snapshot each), so the table holds the latest result."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.totals (s VARCHAR, n BIGINT)")
    name = catalog(lake)
    source = tmp_path / "in"
    source.mkdir()
    _drop(source, 0, 0, 10)
    _drop(source, 1, 10, 4)
    query = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .groupBy("s")
        .count()
        .withColumnRenamed("count", "n")
        .writeStream.outputMode("complete")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .toTable(f"{name}.main.totals")
    )
    query.awaitTermination()
    assert query.exception() is None
    assert_same_rows(
        lake.reference("SELECT * FROM lake.main.totals"),
        pa.table({"s": ["b0", "b1"], "n": pa.array([10, 4], pa.int64())}),
    )
    assert len(_streaming_snapshots(lake)) == 2


# A planner that dies right after the catalog committed, the first time only: started by the
# JVM through ``spark.sql.catalog.<name>.python`` as ``<python> -m <planner> ...``.
_DYING_PLANNER = """#!{python}
import os, runpy, sys
from ducklake_datafusion.spark.planner import _write

once = {once!r}
real = _write.commit_files


def commit_then_die(*args, **kwargs):
    snapshot = real(*args, **kwargs)
    if not os.path.exists(once):
        open(once, "w").close()
        os._exit(3)  # the snapshot is committed; its answer never reaches the JVM
    return snapshot


_write.commit_files = commit_then_die
assert sys.argv[1] == "-m"
sys.argv = [sys.argv[2], *sys.argv[3:]]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def test_a_planner_that_dies_after_committing_loses_no_batch(spark, make_lake, catalog, tmp_path):
    """The planner dies after the catalog committed a micro-batch: Spark aborts the epoch,
    which must keep the batch's files (the snapshot lists them); the restarted query finds
    the batch committed and skips it. DuckDB reads every row once, every listed file exists.
    (Before, the abort deleted the committed files and the batch's rows were lost.)"""
    import os
    import stat
    import sys

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    wrapper = tmp_path / "dying-planner"
    wrapper.write_text(_DYING_PLANNER.format(python=sys.executable, once=str(tmp_path / "died")))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    name = catalog(lake, python=str(wrapper))
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()

    def run():
        query = (
            spark.readStream.schema(SCHEMA)
            .parquet(str(source))
            .writeStream.option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .toTable(f"{name}.main.t")
        )
        try:
            query.awaitTermination()
        except Exception as exc:  # noqa: BLE001 - the first run fails with the planner
            return str(exc)
        return None if query.exception() is None else str(query.exception())

    written = _drop(source, 0, 0, 10)
    error = run()
    assert error is not None  # (the abort's "were kept" is suppressed into Spark's error)
    assert os.path.exists(tmp_path / "died")
    after_crash = lake.reference("SELECT * FROM lake.main.t")
    assert_same_rows(after_crash, written)  # committed, and its files are there to read
    assert run() is None  # restarted: the batch is found committed
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), written)
    assert [m["batch_id"] for m in _streaming_snapshots(lake)] == [0]
    listed = lake.reference("SELECT count(*) AS n FROM ducklake_list_files('lake', 't')")
    assert listed.column(0)[0].as_py() == sum(1 for _ in lake_files(lake))


@pytest.mark.skipif(
    not pyspark_at_least(4, 0), reason="the planner's compaction: the newest pyspark's pass"
)
def test_a_stream_with_compact_every_merges_its_small_files_in_the_background(
    spark, make_lake, catalog, tmp_path
):
    """``compact_every=2``: after the 2nd and 4th micro-batch the planner merges the table's
    files while the stream goes on; every batch lands once, the merges are DuckDB's
    ``merge_adjacent`` snapshots, and DuckDB reads every row, at every snapshot, as a
    stream without compaction wrote them."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    name = catalog(lake)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    written = [_drop(source, batch, batch * 10, 10) for batch in range(5)]
    query = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .writeStream.option("checkpointLocation", str(checkpoint))
        .option("compact_every", "2")
        .trigger(availableNow=True)
        .toTable(f"{name}.main.t")
    )
    query.awaitTermination()
    assert query.exception() is None
    spark.sql(f"SELECT count(*) FROM {name}.main.t").collect()  # the planner is idle again
    assert [m["batch_id"] for m in _streaming_snapshots(lake)] == list(range(5))
    changes = lake.reference(
        "SELECT snapshot_id, changes_made FROM __ducklake_metadata_lake.ducklake_snapshot_changes "
        "ORDER BY snapshot_id"
    ).to_pylist()
    merges = [c["snapshot_id"] for c in changes if c["changes_made"].startswith("merge_adjacent")]
    assert 1 <= len(merges) <= 2, changes
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), pa.concat_tables(written))
    live = lake.reference("SELECT count(*) FROM ducklake_list_files('lake', 't')")
    assert live.column(0)[0].as_py() < 5
    # time travel: a merge's snapshot reads what the one before it read; a batch's adds
    # its ten rows to it
    before: list = []
    for change in changes[2:]:  # (0: the lake, 1: the table)
        version = change["snapshot_id"]
        rows = lake.reference(f"SELECT id, s FROM lake.main.t AT (VERSION => {version})")
        rows = sorted(zip(rows.column("id").to_pylist(), rows.column("s").to_pylist()))
        if change["snapshot_id"] in merges:
            assert rows == before, version
        else:
            added = sorted(set(rows) - set(before))
            assert set(before) <= set(rows) and len(added) == 10, version
            assert len({label for _, label in added}) == 1
        before = rows


# -- the stream's columns: matched to the table's by name (Spark leaves a stream's rows
# unresolved), the table's new columns NULL, new ones added with mergeSchema ---------------


def _stream_once(spark, source, checkpoint, schema: str, table: str, **options) -> None:
    writer = spark.readStream.schema(schema).parquet(str(source)).writeStream
    for key, value in options.items():
        writer = writer.option(key, value)
    query = (
        writer.option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .toTable(table)
    )
    query.awaitTermination()
    assert query.exception() is None


def test_a_stream_writes_its_columns_by_name(spark, make_lake, catalog, tmp_path):
    """A stream whose columns come in another order, one of them a narrower integer, and
    without two of the table's columns: every value lands in its column (the integer
    widened as a batch write widens it), the missing columns their default (one a DuckDB
    expression of a constant), else NULL: what DuckDB's INSERT of the same rows by name
    writes on a twin lake."""
    setup = [
        (
            "CREATE TABLE lake.main.t (id BIGINT, s VARCHAR, n INTEGER DEFAULT 7, "
            "on_ BOOLEAN DEFAULT true, z DOUBLE)"
        )
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    source = tmp_path / "in"
    source.mkdir()
    rows = pa.table({"s": ["a", "b", None], "id": pa.array([-3, 2**31 - 1, 7], pa.int32())})
    pq.write_table(rows, source / "part-0.parquet")
    _stream_once(spark, source, tmp_path / "checkpoint", "s STRING, id INT", f"{name}.main.t")
    theirs.sql(f"INSERT INTO lake.main.t BY NAME SELECT * FROM read_parquet('{source}/*')")
    theirs.detach()
    sql = "SELECT * FROM lake.main.t"
    assert_same_rows(ours.reference(sql), theirs.reference(sql))
    assert (
        ours.reference("SELECT count(*) AS n FROM lake.main.t WHERE n = 7").column(0)[0].as_py()
        == 3
    )


def test_a_stream_keeps_running_across_an_added_column(spark, make_lake, catalog, tmp_path):
    """DuckDB adds a column while the stream runs: the stream's next micro-batch is written
    against the table's new columns (the new one NULL), not the ones it started with."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    name = catalog(lake)
    source = tmp_path / "in"
    source.mkdir()
    first = _drop(source, 0, 0, 5)
    query = (
        spark.readStream.schema(SCHEMA)
        .parquet(str(source))
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .toTable(f"{name}.main.t")
    )
    try:
        query.processAllAvailable()
        lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER")
        altered = lake.snapshot_id()
        lake.detach()
        second = _drop(source, 1, 5, 5)
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert [m["batch_id"] for m in _streaming_snapshots(lake)] == [0, 1]
    both = pa.concat_tables([first, second])
    expected = both.append_column("extra", pa.nulls(10, pa.int32()))
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), expected)
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t", snapshot=altered - 1), first)


def test_a_stream_with_merge_schema_adds_its_columns_as_duckdb_does(
    spark, make_lake, catalog, tmp_path
):
    """``mergeSchema``: the stream's new column and new struct field are added to the table
    before its batch is written, with the catalog rows DuckDB's ALTERs (one transaction)
    write on a twin lake; then the rows, as DuckDB's INSERT of them. Every snapshot reads
    the same on both."""
    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, st STRUCT(a INTEGER))",
        "INSERT INTO lake.main.t SELECT i, {'a': i} FROM range(3) r(i)",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    source = tmp_path / "in"
    source.mkdir()
    struct = pa.struct([("a", pa.int32()), ("b", pa.string())])
    rows = pa.table(
        {
            "id": pa.array([10, 11], pa.int64()),
            "st": pa.array([{"a": 1, "b": "x"}, None], struct),
            "extra": pa.array([5, None], pa.int32()),
        }
    )
    pq.write_table(rows, source / "part-0.parquet")
    schema = "id BIGINT, st STRUCT<a: INT, b: STRING>, extra INT"
    _stream_once(spark, source, tmp_path / "cp", schema, f"{name}.main.t", mergeSchema="true")
    theirs.sql(
        "BEGIN; ALTER TABLE lake.main.t ADD COLUMN st.b VARCHAR; "
        "ALTER TABLE lake.main.t ADD COLUMN extra INTEGER; COMMIT"
    )
    theirs.sql(f"INSERT INTO lake.main.t SELECT * FROM read_parquet('{source}/part-0.parquet')")
    assert_evolved_alike(ours, theirs, "lake.main.t")


@pytest.mark.parametrize(
    ("schema", "options", "words"),
    [
        ("id BIGINT, s STRING, extra INT", {}, "has no column 'extra'.*mergeSchema"),
        ("id DOUBLE, s STRING", {}, "column 'id' is bigint but the rows' is double"),
        ("id BIGINT, s STRING", {"mergeSchema": "maybe"}, "mergeSchema .* true or false"),
    ],
    ids=["new-column", "narrowing", "bad-option"],
)
def test_a_stream_the_table_cannot_take_is_refused_by_name(
    spark, make_lake, catalog, tmp_path, schema, options, words
):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    name = catalog(lake)
    last = lake.snapshot_id()
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), source / "part-0.parquet")
    with pytest.raises(Exception, match=words):
        _stream_once(spark, source, tmp_path / "cp", schema, f"{name}.main.t", **options)
    assert lake.snapshot_id() == last
