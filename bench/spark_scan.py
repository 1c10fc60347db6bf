"""Spark benchmark: our ``ducklake`` data source vs Spark's own Parquet reader, same files.

    .venv/bin/python bench/spark_scan.py            # 10M rows in 40 files (the scan.py lake)
    .venv/bin/python bench/spark_scan.py --quick    # 1M rows in 8 files

The lake is ``bench/scan.py``'s table ``t`` (k BIGINT clustered by file, g, v, s, d; 10% of
the rows of every odd file deleted), built once by the reference writer and cached under
``./bench_lakes/``. It is read in two states: the snapshot before the DELETE (no deletes)
and the latest (10% deleted in half the files). Spark runs ``local[2]``. Readers, each
timed on the same queries round-robin (median of ``--repeat`` runs after one warm-up):

* ``ducklake``: ``read_table(spark, lake, "main.t", native=False)``: every file through the
  Python data source (filter pushdown; all five columns, a Python source cannot prune
  columns by itself);
* ``ducklake native``: ``read_table(..., native=True)``: with the package's jar on the
  classpath (``spark.jars`` = ``spark_jar()``), as here, the catalog's scan below
  (``spark/_catalog_read.py``), so the query's filter prunes files; without it,
  current-layout files on Spark's own Parquet reader (``spark/parquet/``);
* ``ducklake native, mask join`` (states with deletes): the same, as a session without the
  jar reads it: deletes applied by the broadcast mask join (``spark/parquet/_mask_join.py``);
* ``ducklake native, where=`` (selective query): ``read_table(..., where=condition)``: the
  files pruned by catalog statistics before Spark lists them (by the catalog's scan, or
  without the jar by ``spark/parquet/_where.py``);
* ``catalog``: ``SELECT ... FROM <catalog>.main.t VERSION AS OF n`` through the
  ``DuckLakeCatalog`` of the package's jar: planned by the package's planner process with
  the query's filters (files pruned before Spark lists them), read by Spark's own Parquet
  reader with deletes dropped inside it; planned anew for every query (timed);
* ``parquet``: ``spark.read.parquet(*files)`` over the very same data files, deletes ignored
  (so it counts more rows on the second state), with Spark's column pruning and row-group
  filters: the floor;
* ``memory source`` (full aggregate, first state): a trivial Python data source yielding the
  same number of rows of the same five columns from memory, without reading anything: the
  floor of pyspark's Python data source path (Arrow batches through a Python worker into the
  JVM, then rows), which no Python data source can beat.

Answers of the ``ducklake`` readers are checked against DuckDB's reader of the same lake.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    attach,
    connect,
    environment,
    load_average,
    markdown_table,
    measure_interleaved,
    ratio,
    seconds,
)
from scan import FULL, QUICK, scan_lake

BATCH_ROWS = 131_072
ROOT = Path(__file__).resolve().parent.parent
S3_BUCKET = "bench"


def _memory_source():
    """A Python data source of ``rows`` rows shaped like ``t``, generated in the workers."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    def batch() -> pa.RecordBatch:
        k = pa.array(np.arange(BATCH_ROWS, dtype=np.int64))
        return pa.record_batch(
            {
                "k": k,
                "g": pa.array((np.arange(BATCH_ROWS) % 97).astype(np.int32)),
                "v": pa.array(np.random.default_rng(0).random(BATCH_ROWS)),
                "s": pc.binary_join_element_wise(
                    "item_", pc.cast(pc.bit_wise_and(k, 8191), pa.string()), ""
                ),
                "d": pc.cast(pc.cast(pc.bit_wise_and(k, 1023), pa.int32()), pa.date32()),
            }
        )

    class Reader(DataSourceReader):
        def __init__(self, rows: int, parts: int) -> None:
            self.rows, self.parts = rows, parts

        def partitions(self):
            return [InputPartition(self.rows // self.parts) for _ in range(self.parts)]

        def read(self, partition):
            one, left = batch(), partition.value
            while left > 0:
                yield one.slice(0, min(left, BATCH_ROWS))
                left -= BATCH_ROWS

    class Memory(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_memory"

        def schema(self) -> str:
            return "k BIGINT, g INT, v DOUBLE, s STRING, d DATE"

        def reader(self, schema):
            return Reader(int(self.options["rows"]), int(self.options["partitions"]))

    return Memory


QUERIES = {
    "full aggregate": ("count(*) AS n, sum(v) AS sv, max(k) AS mk", None, None),
    "group by g": ("g, count(*) AS n, sum(v) AS sv", None, "g"),
    "selective 0.5%": ("count(*) AS n, sum(v) AS sv", "k BETWEEN {lo} AND {hi}", None),
}


def _spark(partitions: int, *, with_s3a: bool):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ducklake_datafusion.spark import spark_jar

    jars = [spark_jar()]  # the package's jar: deletes applied inside Spark's reader
    if with_s3a:  # the S3A connector of pyspark's Hadoop, from Maven's cache
        jars.append(
            subprocess.run(
                ["bash", str(ROOT / ".ci" / "fetch_hadoop_jars.sh"), sys.executable],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    builder = SparkSession.builder.config("spark.jars", ",".join(jars))
    session = (
        builder.master(f"local[{partitions}]")
        .appName("ducklake-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _s3_copy(lake):
    """The lake's data files copied to a moto S3 server on 127.0.0.1, read through our
    ``data_path`` override; returns ``(metadata, read_table options, local path -> the
    s3a:// URL of its copy)``."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=S3_BUCKET)
    root = Path(lake.data_path)
    for path in root.rglob("*.parquet"):
        client.upload_file(str(path), S3_BUCKET, f"data/{path.relative_to(root)}")
    storage = {
        "data_path": f"s3://{S3_BUCKET}/data/",
        "storage_options": {
            "endpoint": endpoint,
            "access_key_id": "bench",
            "secret_access_key": "bench",
            "region": "us-east-1",
            "allow_http": True,
        },
    }
    return (
        lake.metadata,
        storage,
        lambda path: f"s3a://{S3_BUCKET}/data/{Path(path).relative_to(root)}",
        _hadoop_read_options(f"s3://{S3_BUCKET}/data/", storage["storage_options"]),
    )


def _hadoop_read_options(url: str, storage_options: dict) -> dict[str, str]:
    """The S3A settings ``spark.read.parquet`` of the copy needs, as options of the read
    (as ``read_table`` hands them to Spark's reader), so the floor reads with the same
    connector settings and no session-wide state."""
    from ducklake_datafusion.pathres import StorageOptions
    from ducklake_datafusion.spark.parquet import hadoop_options

    return hadoop_options(url, StorageOptions.from_user(storage_options)) or {}


def _with_mask_join(spark, metadata: str, snapshot: int, kwargs: dict):
    """``read_table`` as a session without the package's jar runs it: deletes applied by
    the mask join (its native scans built apart from the cached ones)."""
    from ducklake_datafusion.spark import read_table
    from ducklake_datafusion.spark.parquet import _scan

    built = _scan._built
    cached = [(key, built.get(key)) for key in built.ordered_keys()]
    has_reader = _scan.has_reader
    built.clear()
    _scan.has_reader = lambda spark: False
    try:
        return read_table(spark, metadata, "main.t", snapshot=snapshot, **kwargs)
    finally:
        _scan.has_reader = has_reader
        built.clear()
        for key, value in cached:
            built.put(key, value)


def _duckdb_answer(lake, snapshot: int, select: str, where: str | None, group: str | None):
    """DuckDB's answer (sorted rows) and the live data files at ``snapshot``."""
    con = connect(lake.kind)
    try:
        attach(con, lake, read_only=True)
        sql = f"SELECT {select} FROM lake.main.t AT (VERSION => {snapshot})"
        sql += (f" WHERE {where}" if where else "") + (f" GROUP BY {group}" if group else "")
        rows = sorted(con.execute(sql).fetchall())
        files = [
            r[0]
            for r in con.execute(
                f"SELECT data_file FROM ducklake_list_files('lake', 't', snapshot_version => {snapshot})"
            ).fetchall()
        ]
        con.execute("DETACH lake")
        return rows, files
    finally:
        con.close()


def _snapshots(lake) -> dict[str, int]:
    """The lake's two states: before the DELETE (no deletes) and the latest (deletes)."""
    con = connect(lake.kind)
    try:
        attach(con, lake, read_only=True)
        rows = con.execute(
            "SELECT snapshot_id, changes FROM ducklake_snapshots('lake') ORDER BY snapshot_id"
        ).fetchall()
        con.execute("DETACH lake")
    finally:
        con.close()
    deleting = min(s for s, changes in rows if "tables_deleted_from" in changes)
    latest = max(
        s
        for s, changes in rows
        if "tables_inserted_into" in changes or "tables_deleted_from" in changes
    )
    return {"no deletes": deleting - 1, "10% deleted in half the files": latest}


def _query(df, select: str, group: str | None):
    """One timed run: a fresh query on ``df`` (Spark would reuse a repeated one's shuffle),
    its rows collected and sorted on the driver."""
    from pyspark.sql import functions as F

    columns = select.split(", ")
    if group:
        aggregates = [F.expr(c) for c in columns if c != group]
        return lambda: sorted(tuple(r) for r in df.groupBy(group).agg(*aggregates).collect())
    return lambda: [tuple(df.selectExpr(*columns).collect()[0])]


def _catalog(spark, store: str, metadata: str, kwargs: dict) -> str:
    """A DuckLake catalog of the lake (``DuckLakeCatalog``) in the session; its name."""
    name = "bench_" + "".join(c for c in store.lower() if c.isalnum())
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
    spark.conf.set(prefix + ".metadata", metadata)
    spark.conf.set(prefix + ".python", sys.executable)
    if kwargs.get("data_path"):
        spark.conf.set(prefix + ".data_path", kwargs["data_path"])
    for key, value in (kwargs.get("storage_options") or {}).items():
        spark.conf.set(
            f"{prefix}.{key}", str(value).lower() if isinstance(value, bool) else str(value)
        )
    return name


def _catalog_files(frame) -> int | None:
    """How many files the catalog's scan hands to Spark's reader (from its plan); None
    when the frame is not the catalog's scan."""
    import re

    plan = frame._jdf.queryExecution().executedPlan().toString()
    found = re.search(r"files: (\d+) read by Spark", plan)
    return int(found.group(1)) if found else None


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        all(
            abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(y)))
            if x is not None
            else y is None
            for x, y in zip(ra, rb)
        )
        for ra, rb in zip(a, b)
    )


def _wanted(wanted: set[str] | None, reader: str) -> bool:
    """Whether ``--readers`` asks for ``reader`` (all readers when it is not given)."""
    return wanted is None or reader in wanted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows in 8 files")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 5, quick 3)")
    parser.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    parser.add_argument(
        "--partition-bytes", default=None, help="the source's partition_bytes (default 128 MiB)"
    )
    parser.add_argument(
        "--no-s3", action="store_true", help="skip the copy of the lake on S3 (moto)"
    )
    parser.add_argument(
        "--readers",
        default=None,
        help="comma-separated readers to time besides parquet (default all), e.g. catalog",
    )
    parser.add_argument(
        "--query",
        action="append",
        choices=sorted(QUERIES),
        help="run only this query (repeatable; default: every query)",
    )
    args = parser.parse_args()
    wanted = set(args.readers.split(",")) if args.readers else None
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or (3 if args.quick else 5)
    queries = {k: v for k, v in QUERIES.items() if not args.query or k in args.query}
    print(environment())
    print(f"repeats:  {repeat} timed runs after 1 warm-up; medians in seconds\n")
    started = time.perf_counter()

    lake, built = scan_lake(sizes)
    print(f"lake {lake.metadata}: " + (f"built in {built:.1f} s" if built else "cached"))
    mid = (sizes.files // 2) | 1  # an odd file: its deletes apply
    lo = mid * sizes.rows + sizes.rows // 4
    hi = lo + sizes.total // 200 - 1

    stores = {"local": (lake.metadata, {}, lambda path: path, {})}
    if not args.no_s3:
        stores["S3 (moto)"] = _s3_copy(lake)
    spark = _spark(args.cores, with_s3a="S3 (moto)" in stores)
    import pyspark

    from ducklake_datafusion.spark import read_table

    print(f"spark:    pyspark {pyspark.__version__}, local[{args.cores}]")
    options = {"partition_bytes": args.partition_bytes}
    spark.dataSource.register(_memory_source())
    timing_rows, builds = [], []
    for store, (metadata, store_options, spark_file, parquet_options) in stores.items():
        kwargs = {**options, **store_options}
        for state, snapshot in _snapshots(lake).items():
            label = f"{store}, {state}"
            readers = {}
            if _wanted(wanted, "ducklake"):
                readers["ducklake"] = read_table(
                    spark, metadata, "main.t", snapshot=snapshot, native=False, **kwargs
                )
            # Built even when not timed: its build time is printed below.
            started_build = time.perf_counter()
            native = read_table(spark, metadata, "main.t", snapshot=snapshot, **kwargs)
            builds.append((f"read_table on '{label}'", time.perf_counter() - started_build))
            if _wanted(wanted, "ducklake native"):
                readers["ducklake native"] = native
            if _wanted(wanted, "catalog"):
                readers["catalog"] = spark.sql(
                    f"SELECT * FROM {_catalog(spark, store, metadata, kwargs)}.main.t "
                    f"VERSION AS OF {snapshot}"
                )
            if state != "no deletes" and _wanted(wanted, "ducklake native, mask join"):
                readers["ducklake native, mask join"] = _with_mask_join(
                    spark, metadata, snapshot, kwargs
                )
            for name, (select, where, group) in queries.items():
                condition = where.format(lo=lo, hi=hi) if where else None
                expected, files = _duckdb_answer(lake, snapshot, select, condition, group)
                files = [spark_file(path) for path in files]
                baseline = spark.read.options(**parquet_options).parquet(*files)
                frames = dict(readers, parquet=baseline)
                if condition:
                    frames = {k: df.where(condition) for k, df in frames.items()}
                if condition and _wanted(wanted, "ducklake native, where="):
                    started_build = time.perf_counter()
                    frames["ducklake native, where="] = read_table(
                        spark, metadata, "main.t", snapshot=snapshot, where=condition, **kwargs
                    )
                    builds.append(
                        (f"read_table(where=...) on '{label}'", time.perf_counter() - started_build)
                    )
                elif (
                    not condition
                    and not group
                    and state == "no deletes"
                    and store == "local"
                    and _wanted(wanted, "memory source")
                ):
                    frames["memory source"] = (
                        spark.read.format("bench_memory")
                        .option("rows", expected[0][0])
                        .option("partitions", args.cores)
                        .load()
                    )
                runs = {k: _query(df, select, group) for k, df in frames.items()}
                timed = measure_interleaved(runs, repeat=repeat)
                floor = timed["parquet"][0].median
                for reader, (timing, answer) in timed.items():
                    if reader != "memory source":  # read_table may be the catalog's scan
                        listed = _catalog_files(frames[reader])
                        if listed is None:
                            listed = len(frames[reader].inputFiles())
                    else:
                        listed = 0
                    if reader == "parquet":
                        check = "the floor" + ("" if state == "no deletes" else ": deletes ignored")
                    elif reader == "memory source":
                        check = "no reading: the Python source floor"
                    else:
                        check = "ok" if _same(answer, expected) else "MISMATCH with DuckDB"
                    timing_rows.append(
                        [
                            label,
                            name,
                            reader,
                            seconds(timing.median),
                            seconds(timing.best),
                            ratio(timing.median, floor),
                            f"{listed}/{len(files)}"
                            if listed or "native" in reader or reader == "catalog"
                            else "-",
                            check,
                        ]
                    )
    print(f"\n## {sizes.total:,} rows in {sizes.files} files, before and after the DELETE\n")
    for name, (select, where, group) in queries.items():
        where_text = f" WHERE {where.format(lo=lo, hi=hi)}" if where else ""
        group_text = f" GROUP BY {group}" if group else ""
        print(f"- {name}: SELECT {select} FROM t{where_text}{group_text}")
    print()
    print(
        markdown_table(
            ["lake", "query", "reader", "median s", "best s", "vs parquet", "files", "answer"],
            timing_rows,
        )
    )
    print(
        "\nvs parquet = median time / spark.read.parquet's median on the same query and files; "
        "files = files Spark lists (and opens) / live files; the data source (-) prunes its "
        "own. Every reader's DataFrame is built once, before the timed runs (a fresh query on "
        "it per run): read_table's catalog read, masks and listing are not in the times."
    )
    for what, took in builds:
        print(f"{what}: DataFrame built in {took:.3f} s (first call; later calls reuse it)")
    print(
        f"load average now: {load_average()}; total bench time {time.perf_counter() - started:.0f} s"
    )
    spark.stop()


if __name__ == "__main__":
    main()
