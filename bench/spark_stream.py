"""Spark streaming benchmark: the lake as a Structured Streaming source.

    .venv/bin/python bench/spark_stream.py                     # 1,000 snapshots of 1,000 rows
    .venv/bin/python bench/spark_stream.py --snapshots 200     # quicker

Two measurements, on one DuckLake (DuckDB file catalog, local files), Spark ``local[2]``:

* **Throughput**: ``--snapshots`` snapshots, each one ``INSERT`` of ``--rows`` rows (one data
  file each) by DuckDB, read by ``spark.readStream.table(...)`` from the first of them with
  ``Trigger.AvailableNow`` into Spark's ``noop`` sink: in one micro-batch, and in batches of
  ``maxSnapshotsPerTrigger=100``. Against a batch read of the same table into ``noop``
  (``spark.table(...)``, the catalog's scan: the floor). ``--repeat`` runs each, round-robin,
  medians. Every run's row count is checked.
* **Latency**: a query on a 1 s processing-time trigger, ``foreachBatch`` noting when each
  row arrives; DuckDB commits one row ``--commits`` times, 1.5 s apart. The latency is from
  the commit's return to the batch that holds its row (the trigger's wait included: on
  average half a trigger interval, plus planning and reading the batch).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import duckdb
import duckdb_extensions
from pyspark.sql import SparkSession

from ducklake_datafusion.spark import spark_jar


def _session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName("ducklake-datafusion-bench-stream")
        .config("spark.jars", spark_jar())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )


def _duckdb(metadata: str, data: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{metadata}' AS lake (DATA_PATH '{data}')")
    con.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    return con


def _build(metadata: str, data: str, snapshots: int, rows: int) -> int:
    """The table with ``snapshots`` inserts; the first of them."""
    con = _duckdb(metadata, data)
    con.execute("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    first = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0] + 1
    started = time.perf_counter()
    for n in range(snapshots):
        con.execute(
            f"INSERT INTO lake.main.t SELECT i, (i % 13)::INTEGER, 's' || i "
            f"FROM range({n * rows}, {(n + 1) * rows}) r(i)"
        )
    con.close()
    print(f"built {snapshots} snapshots of {rows} rows in {time.perf_counter() - started:.1f} s")
    return first


def _stream_once(spark, table: str, first: int, checkpoint: str, per_trigger: int | None):
    reader = spark.readStream.option("startingVersion", str(first))
    if per_trigger:
        reader = reader.option("maxSnapshotsPerTrigger", str(per_trigger))
    started = time.perf_counter()
    query = (
        reader.table(table)
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    batches = sum(1 for p in query.recentProgress if p["numInputRows"])
    return elapsed, rows, batches


def _throughput(spark, table: str, first: int, expected: int, args, scratch: str) -> None:
    timings: dict[str, list[float]] = {"batch": [], "stream": [], "stream/100": []}
    counts = {}
    for n in range(args.repeat):
        started = time.perf_counter()
        spark.table(table).write.format("noop").mode("overwrite").save()
        timings["batch"].append(time.perf_counter() - started)
        for label, per in (("stream", None), ("stream/100", 100)):
            elapsed, rows, batches = _stream_once(
                spark, table, first, os.path.join(scratch, f"cp-{label[-3:]}-{n}"), per
            )
            assert rows == expected, (label, rows, expected)
            timings[label].append(elapsed)
            counts[label] = batches
    batch = statistics.median(timings["batch"])
    print(f"batch read        {batch:6.2f} s  ({expected:,} rows)")
    for label in ("stream", "stream/100"):
        ours = statistics.median(timings[label])
        print(
            f"{label:<17} {ours:6.2f} s  {counts[label]:>3} micro-batches  "
            f"{expected / ours:>12,.0f} rows/s  ratio {ours / batch:.2f}x of the batch read"
        )


def _latency(spark, table: str, metadata: str, data: str, args, scratch: str) -> None:
    seen: dict[int, float] = {}
    marker = 10**12

    def note(frame, _batch_id) -> None:
        now = time.time()
        for row in frame.where(f"k >= {marker}").select("k").collect():
            seen.setdefault(row.k, now)

    query = (
        spark.readStream.option("startingVersion", "latest")
        .table(table)
        .writeStream.foreachBatch(note)
        .option("checkpointLocation", os.path.join(scratch, "cp-latency"))
        .trigger(processingTime="1 second")
        .start()
    )
    time.sleep(3)  # the first (empty) batches
    committed: dict[int, float] = {}
    for n in range(args.commits):
        con = _duckdb(metadata, data)  # as a separate writer would: attach, commit, detach
        con.execute(f"INSERT INTO lake.main.t VALUES ({marker + n}, 0, 'latency')")
        committed[marker + n] = time.time()
        con.close()
        time.sleep(1.5)
    deadline = time.time() + 30
    while len(seen) < args.commits and time.time() < deadline:
        time.sleep(0.2)
    query.stop()
    assert len(seen) == args.commits, f"{len(seen)} of {args.commits} rows arrived"
    latencies = sorted(seen[k] - committed[k] for k in committed)
    p90 = latencies[max(0, round(0.9 * len(latencies)) - 1)]
    print(
        f"latency (1 s trigger, {args.commits} commits): median "
        f"{statistics.median(latencies):.2f} s, p90 {p90:.2f} s, max {latencies[-1]:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commits", type=int, default=10)
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="bench-stream-")
    metadata, data = os.path.join(scratch, "lake.ducklake"), os.path.join(scratch, "data/")
    first = _build(metadata, data, args.snapshots, args.rows)
    spark = _session()
    spark.sparkContext.setLogLevel("ERROR")
    name = "lake"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
    spark.conf.set(prefix + ".metadata", metadata)
    spark.conf.set(prefix + ".python", sys.executable)
    table = f"{name}.main.t"
    try:
        spark.table(table).write.format("noop").mode("overwrite").save()  # warm-up
        _throughput(spark, table, first, args.snapshots * args.rows, args, scratch)
        _latency(spark, table, metadata, data, args, scratch)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
