"""The lake as a Structured Streaming source: ``spark.readStream.table("lake.main.t")``
emits the rows each new snapshot inserted, exactly as DuckDB's change feed lists them,
across restarts of the query."""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.lakes import assert_same_rows

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def _arrow(frame) -> pa.Table:
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    return pa.Table.from_batches(frame._collect_as_arrow())


def test_new_rows_stream_once_across_restarts(spark, make_lake, catalog, tmp_path):
    lake = make_lake(inline_limit=3)
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
