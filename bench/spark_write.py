"""Spark write benchmark: an append through the lake's catalog vs ``df.write.parquet``.

    .venv/bin/python bench/spark_write.py                 # 10M rows, local files
    .venv/bin/python bench/spark_write.py --rows 1000000  # quicker
    .venv/bin/python bench/spark_write.py --minio         # also into MinIO (S3A), started here
                                                           # (the tests' minio, hadoop-aws)

The same DataFrame (``--rows`` rows of k BIGINT, g INT, v DOUBLE, s STRING, d DATE, made
by ``spark.range``, in ``--partitions`` tasks) is written, round-robin, ``--repeat`` times
each (medians):

* **parquet**: ``df.write.mode("overwrite").parquet(dir)``: Spark's own Parquet writer, the
  floor (its job commit renames the files into place);
* **ducklake**: ``df.writeTo("lake.main.t<n>").append()`` into an empty table of a DuckLake
  (DuckDB file catalog; the table created through the catalog, untimed): the executors write
  with Spark's Parquet writer, the driver commits once through the package's planner
  process (started by the first run's table creation), the commit included.

DuckDB reads every lake written back (row count and sum of ``k``). Spark runs ``local[2]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import duckdb_extensions
from pyspark.sql import SparkSession

from ducklake_datafusion.spark import spark_jar

ROOT = Path(__file__).resolve().parent.parent


def _session(extra: dict[str, str]) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("ducklake-datafusion-bench-write")
        .config("spark.jars", ",".join(filter(None, [spark_jar(), extra.pop("jars", "")])))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in extra.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _frame(spark, rows: int, partitions: int):
    return spark.range(0, rows, 1, partitions).selectExpr(
        "id AS k",
        "CAST(id % 97 AS INT) AS g",
        "id / 7 AS v",
        "concat('name-', id % 1000) AS s",
        "date_add(DATE '2020-01-01', CAST(id % 1461 AS INT)) AS d",
    )


def _duckdb(store) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    if store is not None:
        duckdb_extensions.import_extension("httpfs", con=con)
        con.execute(store.duckdb_secret_sql())
    return con


def _new_lake(root: str, data: str, store) -> str:
    """An empty lake; its catalog file."""
    metadata = os.path.join(root, "lake.ducklake")
    con = _duckdb(store)
    con.execute(f"ATTACH 'ducklake:{metadata}' AS lake (DATA_PATH '{data}')")
    con.close()
    return metadata


def _check(metadata: str, table: str, rows: int, store) -> None:
    con = _duckdb(store)
    con.execute(f"ATTACH 'ducklake:{metadata}' AS lake (READ_ONLY)")
    count, total = con.execute(f"SELECT count(*), sum(k) FROM lake.{table}").fetchone()
    con.close()
    assert (count, total) == (rows, rows * (rows - 1) // 2), (count, total)


def _run(spark, label: str, rows: int, args, roots: tuple[str, str], store=None) -> None:
    """``roots``: where Spark's Parquet goes (a Hadoop URL) and the lake's data path."""
    data_root, lake_root = roots
    options = {} if store is None else {k: str(v) for k, v in store.storage_options().items()}
    frame = _frame(spark, rows, args.partitions)
    scratch = tempfile.mkdtemp(prefix="bench-write-")
    metadata = _new_lake(scratch, f"{lake_root}/lake/", store)
    name = f"lake_{label}"
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
    spark.conf.set(prefix + ".metadata", metadata)
    spark.conf.set(prefix + ".python", sys.executable)
    for key, value in options.items():
        spark.conf.set(f"{prefix}.{key}", value)
    timings: dict[str, list[float]] = {"parquet": [], "ducklake": []}
    try:
        for n in range(args.repeat):
            start = time.perf_counter()
            frame.write.mode("overwrite").parquet(f"{data_root}/parquet-out")
            timings["parquet"].append(time.perf_counter() - start)

            # an empty table per run, created through the catalog (not timed): the planner
            # process is warm, as in a session that writes more than once
            table = f"t{n}"
            spark.sql(
                f"CREATE TABLE {name}.main.{table} (k BIGINT, g INT, v DOUBLE, s STRING, d DATE)"
            )
            start = time.perf_counter()
            frame.writeTo(f"{name}.main.{table}").append()
            timings["ducklake"].append(time.perf_counter() - start)
        spark.conf.unset(prefix)  # the planner lets go of the catalog file when idle
        time.sleep(1)
        for n in range(args.repeat):
            _check(metadata, f"t{n}", rows, store)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    parquet, ours = (statistics.median(timings[k]) for k in ("parquet", "ducklake"))
    print(
        f"{label:<8} {rows:>11,} rows  parquet {parquet:6.2f} s  ducklake {ours:6.2f} s  "
        f"ratio {ours / parquet:.2f}x  (medians of {args.repeat})"
    )


def _minio(workdir: str):
    """MinIO on 127.0.0.1 (the tests' starter) with a bucket, and its S3A settings."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.emulators import start_minio

    server, store = start_minio(Path(workdir))
    store.make_bucket("bench")
    jars = subprocess.run(
        ["bash", str(ROOT / ".ci" / "fetch_hadoop_jars.sh"), sys.executable],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    bucket = "spark.hadoop.fs.s3a.bucket.bench."
    conf = {
        "jars": jars,
        bucket + "endpoint": store.endpoint_url,
        bucket + "access.key": store.access_key,
        bucket + "secret.key": store.secret_key,
        bucket + "path.style.access": "true",
        bucket + "connection.ssl.enabled": "false",
    }
    return server, store, conf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--minio", action="store_true")
    args = parser.parse_args()
    local = tempfile.mkdtemp(prefix="bench-write-data-")
    extra: dict[str, str] = {}
    server = store = None
    if args.minio:
        server, store, extra = _minio(local)
    spark = _session(extra)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        _frame(spark, args.rows, args.partitions).write.mode("overwrite").parquet(
            f"{local}/warm"
        )  # warm-up: JIT, class loading
        _run(spark, "local", args.rows, args, (local, local))
        if store is not None:
            _run(spark, "minio", args.rows, args, ("s3a://bench", "s3://bench"), store)
    finally:
        spark.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(local, ignore_errors=True)


if __name__ == "__main__":
    main()
