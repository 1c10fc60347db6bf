"""The lake as a Structured Streaming source: ``spark.readStream.table("lake.main.t")``
emits the rows each new snapshot inserted, and ``lake.main.t.changes`` every change,
exactly as DuckDB's change feed lists them, across restarts of the query, compaction and
expiry."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from support.lakes import LakeSpec, assert_same_rows, deleting_history
from test_spark_catalog import LOCAL_CATALOGS

pytest.importorskip("pyspark")

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.scan import Lake
from ducklake_datafusion.spark import read_stream, spark_schema
from ducklake_datafusion.spark.planner._stream import stream_rows_response

pytestmark = pytest.mark.spark

CELLS = [LakeSpec("sqlite", "local"), *LOCAL_CATALOGS[:2]]


def _drain(reader, out, checkpoint, **trigger):
    """Run ``reader`` into Parquet at ``out`` until it has read what is there (or, with
    ``trigger``, until stopped by the caller); returns the query."""
    query = (
        reader.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(**(trigger or {"availableNow": True}))
        .start()
    )
    if not trigger:
        query.awaitTermination()
        assert query.exception() is None
    return query


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def _inserts(lake, start: int, end: int, columns: str = "id, s"):
    return lake.reference(
        f"SELECT {columns} FROM ducklake_table_changes('lake', 'main', 't', {start}, {end}) "
        "WHERE change_type = 'insert'"
    )


def _arrow(frame) -> pa.Table:
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    return pa.Table.from_batches(frame._collect_as_arrow())


@pytest.mark.parametrize("spec", CELLS, ids=lambda s: s.id)
def test_new_rows_stream_once_across_restarts(spark, make_lake, catalog, tmp_path, spec):
    lake = make_lake(spec, inline_limit=3)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (0, 'before')")
    start = lake.snapshot_id() + 1
    name = catalog(lake)
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> None:
        query = (
            spark.readStream.option("startingVersion", str(start))
            .table(f"{name}.main.t")
            .writeStream.format("parquet")
            .option("path", str(tmp_path / "out"))
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None

    for i in range(1, 4):  # inlined, then files
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 'a{i}' FROM range({i * 10}, {i * 10 + i * 2}) r(i)"
        )
    lake.detach()
    run()
    first_end = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i, 'later' FROM range(100, 110) r(i)")
    lake.detach()
    run()
    got = _arrow(spark.read.parquet(str(tmp_path / "out")))
    expected = lake.reference(
        f"SELECT id, s FROM ducklake_table_changes('lake', 'main', 't', {start}, "
        f"{lake.snapshot_id()}) WHERE change_type = 'insert'"
    )
    assert_same_rows(got, expected)
    assert first_end < lake.snapshot_id()


def test_a_deleting_snapshot_stops_the_stream_unless_skipped(spark, make_lake, catalog, tmp_path):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 'x' FROM range(10) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id = 3")
    deleting = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i, 'y' FROM range(20, 25) r(i)")
    lake.detach()
    name = catalog(lake)

    def run(skip: bool, out: str):
        query = (
            spark.readStream.option("startingVersion", str(start))
            .option("skipChangeCommits", str(skip).lower())
            .table(f"{name}.main.t")
            .writeStream.format("parquet")
            .option("path", str(tmp_path / out))
            .option("checkpointLocation", str(tmp_path / (out + "-checkpoint")))
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination()
        except Exception as exc:  # noqa: BLE001 - the test reads the error
            return str(exc)
        return None

    error = run(False, "strict")
    assert error is not None and f"snapshot {deleting}" in error and "skipChangeCommits" in error
    assert run(True, "skipping") is None
    got = _arrow(spark.read.parquet(str(tmp_path / "skipping")))
    expected = lake.reference(
        "SELECT i AS id, 'x' AS s FROM range(10) r(i) UNION ALL "
        "SELECT i, 'y' FROM range(20, 25) r(i)"
    )
    assert_same_rows(got, expected)


def test_admission_control_reads_one_snapshot_per_batch(spark, make_lake, catalog, tmp_path):
    """``maxSnapshotsPerTrigger=1`` with ``Trigger.AvailableNow``: one micro-batch per new
    snapshot, and every row once."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    for i in range(4):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 'b{i}' FROM range({i * 10}, {i * 10 + 5}) r(i)"
        )
    lake.detach()
    name = catalog(lake)
    query = (
        spark.readStream.option("startingVersion", str(start))
        .option("maxSnapshotsPerTrigger", "1")
        .table(f"{name}.main.t")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [5, 5, 5, 5]
    assert_same_rows(
        _arrow(spark.read.parquet(str(tmp_path / "out"))),
        lake.reference("SELECT * FROM lake.main.t"),
    )


def test_appended_files_are_planned_as_a_scan(make_lake):
    """A snapshot that only added files (deletes of its own included) goes to Spark's reader
    as a scan; inlined inserts, updates and compaction are computed from the change feed.
    The rows of both together are DuckDB's inserts."""
    lake = make_lake(inline_limit=2)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'inlined')")
    lake.sql(
        "BEGIN; INSERT INTO lake.main.t SELECT i, 'f' FROM range(10, 20) r(i); "
        "DELETE FROM lake.main.t WHERE id = 12; COMMIT"
    )
    appended = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i, 'g' FROM range(30, 40) r(i)")
    lake.detach()
    opened = Lake.open(**lake.reader_args())
    try:
        request = {
            "namespace": "main",
            "name": "t",
            "after": start - 1,
            "through": lake.snapshot_id(),
            "schema": spark_schema(opened.table("main", "t").columns).json(),
        }
        header, blobs = stream_rows_response(opened, request)
    finally:
        opened.close()
    assert header["files_spark"] == 2 and header["files_exact"] == 0
    assert header["exact_rows"] == 1  # the inlined row
    exported = pa.ipc.open_stream(blobs[0]).read_all()
    deleted = sum(len(d or ()) for d in exported.column("deleted").to_pylist())
    kept = sum(exported.column("record_count").to_pylist()) - deleted
    expected = _inserts(lake, start, lake.snapshot_id())
    assert kept + header["exact_rows"] == expected.num_rows == 1 + 9 + 10
    assert appended < lake.snapshot_id()


@pytest.mark.parametrize("spec", CELLS[:2], ids=lambda s: s.id)
def test_change_feed_streams_every_change(spark, make_lake, catalog, tmp_path, spec):
    """``lake.main.t.changes``: inserts, deletes and update pairs with their snapshot, time
    and rowid, as DuckDB's ``ducklake_table_changes`` gives them, across a restart."""
    lake = make_lake(spec, inline_limit=2)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'a')")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'f' FROM range(10, 20) r(i)")
    lake.detach()
    name = catalog(lake)
    reader = spark.readStream.option("startingVersion", str(start)).table(f"{name}.main.t.changes")
    assert reader.columns == [
        "id",
        "s",
        "_change_type",
        "_commit_snapshot_id",
        "_commit_timestamp",
        "_rowid",
    ]
    picked = reader.selectExpr(
        "id",
        "s",
        "_change_type",
        "_commit_snapshot_id",
        "unix_micros(_commit_timestamp) AS micros",
        "_rowid",
    )
    _drain(picked, tmp_path / "out", tmp_path / "checkpoint")
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id IN (1, 11)")
    lake.sql("DELETE FROM lake.main.t WHERE id = 15")
    lake.sql("INSERT INTO lake.main.t VALUES (2, 'b')")
    lake.detach()
    _drain(picked, tmp_path / "out", tmp_path / "checkpoint")
    expected = lake.reference(
        "SELECT c.id, c.s, c.change_type, c.snapshot_id, epoch_us(s.snapshot_time) AS micros, "
        f"c.rowid FROM ducklake_table_changes('lake', 'main', 't', {start}, {lake.snapshot_id()}) c "
        "JOIN lake.snapshots() s USING (snapshot_id)"
    )
    got = _arrow(spark.read.parquet(str(tmp_path / "out")))
    assert_same_rows(got.rename_columns(expected.column_names), expected)
    assert {"update_preimage", "update_postimage", "delete"} <= set(
        got.column("_change_type").to_pylist()
    )


def test_change_feed_option_on_the_table_names_the_changes_table(
    spark, make_lake, catalog, tmp_path
):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (id BIGINT)")
    lake.detach()
    name = catalog(lake)
    with pytest.raises(Exception, match=rf"{name}\.main\.t\.changes"):
        reader = spark.readStream.option("readChangeFeed", "true").table(f"{name}.main.t")
        _drain(reader, tmp_path / "out", tmp_path / "checkpoint")


def test_compaction_and_expiry_while_streaming(spark, make_lake, catalog, tmp_path):
    """Files merged by ``ducklake_merge_adjacent_files`` and inlined rows flushed between two
    runs are not emitted again; snapshots expired between runs lose no row; a stream that
    starts at an expired snapshot is refused, naming it."""
    lake = make_lake(inline_limit=3)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    for i in range(4):
        lake.sql(f"INSERT INTO lake.main.t SELECT i, 'a' FROM range({i * 10}, {i * 10 + 5}) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (100, 'inlined')")
    lake.detach()
    name = catalog(lake)
    reader = spark.readStream.option("startingVersion", str(start)).table(f"{name}.main.t")
    _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'b' FROM range(50, 60) r(i)")
    expired = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i, 'c' FROM range(60, 70) r(i)")
    lake.sql(f"CALL ducklake_expire_snapshots('lake', versions => [{start}, {expired}])")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'd' FROM range(70, 80) r(i)")
    lake.detach()
    _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
    got = _arrow(spark.read.parquet(str(tmp_path / "out")))
    assert_same_rows(got, lake.reference("SELECT id, s FROM lake.main.t"))
    with pytest.raises(Exception, match=rf"snapshot {expired}\b.*expired"):
        again = spark.readStream.option("startingVersion", str(expired)).table(f"{name}.main.t")
        _drain(again, tmp_path / "out2", tmp_path / "checkpoint2")


def test_admission_by_files_bytes_and_time(spark, make_lake, catalog, tmp_path):
    """``maxFilesPerTrigger`` admits snapshots while their new files fit (at least one),
    ``maxBytesPerTrigger`` by their bytes, and ``startingTimestamp`` starts at the first
    snapshot at or after it."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    for i in range(5):
        lake.sql(f"INSERT INTO lake.main.t SELECT i, 'x' FROM range({i * 10}, {i * 10 + 3}) r(i)")
    lake.detach()
    name = catalog(lake)
    times = lake.reference("SELECT snapshot_id, snapshot_time FROM lake.snapshots()")
    third = times.column("snapshot_id").to_pylist()[-3]
    when = times.column("snapshot_time").to_pylist()[-3].isoformat()

    def batches(option, value, out):
        reader = (
            spark.readStream.option("startingTimestamp", when)
            .option(option, value)
            .table(f"{name}.main.t")
        )
        query = _drain(reader, tmp_path / out, tmp_path / (out + "-checkpoint"))
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]

    assert batches("maxFilesPerTrigger", "2", "files") == [6, 3]
    assert batches("maxBytesPerTrigger", "1b", "bytes") == [3, 3, 3]
    assert_same_rows(
        _arrow(spark.read.parquet(str(tmp_path / "files"))),
        _inserts(lake, third, lake.snapshot_id()),
    )
    with pytest.raises(Exception, match="maxFilesPerTrigger.*positive"):
        reader = spark.readStream.option("maxFilesPerTrigger", "0").table(f"{name}.main.t")
        _drain(reader, tmp_path / "bad", tmp_path / "bad-checkpoint")


def test_a_running_stream_sees_concurrent_writers_once(spark, make_lake, catalog, tmp_path):
    """DuckDB and this package's own appends commit in a loop while a stream runs on a short
    trigger; the query is stopped mid-stream and restarted from its checkpoint. The union of
    its micro-batches is DuckDB's change feed of the range: nothing lost, nothing doubled."""
    lake = make_lake(inline_limit=2)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    lake.detach()
    name = catalog(lake)
    ours = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    reader = spark.readStream.option("startingVersion", str(start)).table(f"{name}.main.t")

    def write(first: int, count: int) -> None:
        for i in range(first, first + count):
            if i % 2:
                lake.sql(
                    f"INSERT INTO lake.main.t SELECT i, 'duck' FROM range({i * 10}, {i * 10 + i % 4}) r(i)"
                )
                lake.detach()
            else:
                ours.append(pa.table({"id": pa.array([i * 10, i * 10 + 1]), "s": ["ours"] * 2}))
            time.sleep(0.05)

    for first in (0, 12):
        query = _drain(
            reader, tmp_path / "out", tmp_path / "checkpoint", processingTime="200 milliseconds"
        )
        writer = threading.Thread(target=write, args=(first, 12))
        writer.start()
        writer.join()
        query.stop()  # mid-stream: the last commits may not be read yet
        assert query.exception() is None
    _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
    got = _arrow(spark.read.parquet(str(tmp_path / "out")))
    expected = _inserts(lake, start, lake.snapshot_id())
    assert expected.num_rows > 40
    assert_same_rows(got, expected)


@pytest.mark.parametrize("spec", [LakeSpec("duckdb", "minio")], ids=lambda s: s.id)
def test_read_stream_from_an_object_store(request, make_lake, spark_package_jar, spec, tmp_path):
    """``read_stream`` (no catalog configured beforehand) on MinIO: Spark reads the new files
    through S3A with the lake's storage options."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    spark = request.getfixturevalue("s3a")
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    for i in range(3):
        lake.sql(f"INSERT INTO lake.main.t SELECT i, 's3' FROM range({i * 10}, {i * 10 + 4}) r(i)")
    lake.detach()
    args = lake.reader_args()
    stream = read_stream(
        spark,
        args["metadata"],
        "main.t",
        storage_options=args["storage_options"],
        data_path=args.get("data_path"),
        starting_version=start,
        max_snapshots_per_trigger=2,
    )
    query = _drain(stream, tmp_path / "out", tmp_path / "checkpoint")
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [8, 4]
    assert_same_rows(
        _arrow(spark.read.parquet(str(tmp_path / "out"))),
        _inserts(lake, start, lake.snapshot_id()),
    )


def test_a_new_stream_starts_with_the_tables_rows(spark, make_lake, catalog, tmp_path):
    """Without a starting option a query first reads the table as it is (one micro-batch,
    deletes of its history applied), then the snapshots after; the change feed the same,
    the table's rows as inserts of the snapshot it started at."""
    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    begun = lake.snapshot_id()
    lake.detach()
    name = catalog(lake)
    rows = spark.readStream.option("maxSnapshotsPerTrigger", "1").table(f"{name}.main.t")
    changes = spark.readStream.table(f"{name}.main.t.changes").selectExpr(
        "k", "g", "s", "_change_type", "_commit_snapshot_id", "_rowid"
    )
    first = _drain(rows, tmp_path / "rows", tmp_path / "rows-checkpoint")
    assert [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]] == [
        lake.reference("SELECT count(*) AS n FROM lake.main.t").column("n")[0].as_py()
    ]
    _drain(changes, tmp_path / "changes", tmp_path / "changes-checkpoint")
    lake.sql("INSERT INTO lake.main.t SELECT i, 2, 'new' FROM range(6000, 6100) r(i)")
    lake.detach()
    _drain(rows, tmp_path / "rows", tmp_path / "rows-checkpoint")
    assert_same_rows(
        _arrow(spark.read.parquet(str(tmp_path / "rows"))),
        lake.reference("SELECT * FROM lake.main.t"),
    )
    lake.sql("DELETE FROM lake.main.t WHERE k = 5000")
    lake.detach()
    _drain(changes, tmp_path / "changes", tmp_path / "changes-checkpoint")
    got = _arrow(spark.read.parquet(str(tmp_path / "changes")))
    expected = lake.reference(
        f"SELECT k, g, s, 'insert' AS change_type, {begun} AS snapshot_id, rowid "
        f"FROM lake.main.t AT (VERSION => {begun}) UNION ALL "
        "SELECT k, g, s, change_type, snapshot_id, rowid FROM "
        f"ducklake_table_changes('lake', 'main', 't', {begun + 1}, {begun + 2})"
    )
    assert_same_rows(got.rename_columns(expected.column_names), expected)


def test_the_readme_streaming_pipeline_runs(spark, make_lake, catalog, tmp_path):
    """The README's continuous pipeline, as written, on a catalog named for the test: the
    orders' rows and a later snapshot's, cleaned into a table DuckDB reads back."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (block,) = [b for b in _blocks(readme, "python") if "readStream" in b]
    lake = make_lake(inline_limit=2)
    lake.sql("CREATE TABLE lake.main.orders (id BIGINT, amount DOUBLE)")
    lake.sql("INSERT INTO lake.main.orders SELECT i, i - 5 FROM range(10) r(i)")
    lake.detach()
    name = catalog(lake)
    # (the README's trigger, at a tenth of its interval: each micro-batch waits for one)
    assert 'processingTime="10 seconds"' in block
    code = (
        block.replace("lake.main.", f"{name}.main.")
        .replace("/tmp/orders_clean", str(tmp_path / "checkpoint"))
        .replace('processingTime="10 seconds"', 'processingTime="1 second"')
    )
    namespace = {"spark": spark}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    query = namespace["query"]
    try:
        query.processAllAvailable()
        lake.sql("INSERT INTO lake.main.orders VALUES (100, 7.5), (101, -1.0)")
        lake.detach()
        query.processAllAvailable()
    finally:
        query.stop()
    assert_same_rows(
        lake.reference("SELECT * FROM lake.main.orders_clean"),
        lake.reference("SELECT * FROM lake.main.orders WHERE amount > 0"),
    )


def test_added_columns_are_left_out_and_renames_stop_the_stream(
    spark, make_lake, catalog, tmp_path
):
    """A column added while a stream runs is left out of it (the stream goes on, new files
    read by Spark's reader); a renamed column stops it, naming the change."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    start = lake.snapshot_id() + 1
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' FROM range(5) r(i)")
    lake.detach()
    name = catalog(lake)
    reader = spark.readStream.option("startingVersion", str(start)).table(f"{name}.main.t")
    _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 7")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'b', i FROM range(10, 15) r(i)")
    lake.detach()
    _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
    assert_same_rows(
        _arrow(spark.read.parquet(str(tmp_path / "out"))),
        lake.reference("SELECT id, s FROM lake.main.t"),
    )
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'c', i FROM range(20, 25) r(i)")
    lake.detach()
    with pytest.raises(Exception, match="columns changed.*renamed, dropped or retyped"):
        _drain(reader, tmp_path / "out", tmp_path / "checkpoint")
