"""Structured Streaming into the lake: ``df.writeStream.toTable("lake.main.t")`` through the
catalog, each micro-batch one snapshot, exactly once across restarts; read back by DuckDB.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import assert_same_rows

pytest.importorskip("pyspark")

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

    # died after batch 1's commit, before its checkpoint: no commit log entry (nor checksum)
    for entry in ("1", ".1.crc"):
        (checkpoint / "commits" / entry).unlink(missing_ok=True)
    written.append(_drop(source, 2, 20, 5))
    run()
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), pa.concat_tables(written))
    assert [m["batch_id"] for m in _streaming_snapshots(lake)] == [0, 1, 2]
    listed = lake.reference("SELECT count(*) AS n FROM ducklake_list_files('lake', 't')")
    files = sum(1 for p in lake_files(lake))
    assert listed.column(0)[0].as_py() == files, "the replayed batch's files were deleted"


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
