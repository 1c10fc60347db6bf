"""A Spark job on a real multi-process cluster, run by ``test_spark_cluster`` in its own
process (one SparkContext per process; the suite's own session is ``local[2]``).

Reads the tables a spec names through every Spark path and writes each answer as a
Parquet file (or the error it raised, as text) for the test to compare with DuckDB:

    python spark_cluster_job.py SPEC.json

SPEC: ``master``, ``metadata``, ``out`` (a directory), optional ``spark_jar`` (the
package's jar, for ``spark.jars``: Spark ships it to the executors), ``reads``: a list of
``{"name", "kind", ...}`` where kind is ``read_table`` (``table``, optional ``native``,
``where``, ``catalog_scan``), ``view_sql`` (``sql`` over the views of ``register_spark_views``),
``changes`` (``table``, ``start``, ``end``) or ``format`` (``table``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from ducklake_datafusion.spark import read_changes, read_table, register_spark_views
from ducklake_datafusion.spark.parquet._deleted_rows import has_reader


def _session(master: str, jar: str | None) -> SparkSession:
    builder = SparkSession.builder
    if jar is not None:  # the package's jar: its reader, its catalog, ducklake_table_changes
        builder = builder.config("spark.jars", jar).config(
            "spark.sql.extensions", "io.ducklake_datafusion.spark.DuckLakeExtensions"
        )
    return (
        builder.master(master)
        .appName("ducklake-datafusion-cluster-test")
        .config("spark.executor.memory", "512m")  # below the worker's 1024m
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )


def _executors(spark, wanted: int, timeout: float = 180.0) -> int:
    """Wait until ``wanted`` executors have registered (they start one by one); their
    number (the driver's own block manager aside)."""
    deadline = time.monotonic() + timeout
    while True:
        count = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        if count >= wanted or time.monotonic() > deadline:
            return count
        time.sleep(0.5)


def _arrow(frame):
    """``frame.toArrow()``; pyspark 3.5 has only the batches its ``toPandas`` collects."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = frame._collect_as_arrow()
    return (
        pa.Table.from_batches(batches) if batches else to_arrow_schema(frame.schema).empty_table()
    )


def _frame(spark, spec: dict, read: dict):
    metadata = spec["metadata"]
    kind = read["kind"]
    if kind == "read_table":
        return read_table(
            spark,
            metadata,
            read["table"],
            native=read.get("native", True),
            where=read.get("where"),
            catalog_scan=read.get("catalog_scan", True),
        )
    if kind == "view_sql":
        register_spark_views(spark, metadata)
        return spark.sql(read["sql"])
    if kind == "changes":
        return read_changes(spark, metadata, read["table"], read["start"], read["end"])
    if kind == "catalog_sql":  # the lake as a Spark catalog, its planner on the driver
        prefix = "spark.sql.catalog.lake"
        spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
        spark.conf.set(prefix + ".metadata", metadata)
        spark.conf.set(prefix + ".python", sys.executable)
        return spark.sql(read["sql"])
    if kind == "format":
        return spark.read.format("ducklake").option("metadata", metadata).load(read["table"])
    raise ValueError(f"unknown read kind {kind!r}")


def main(path: str) -> None:
    spec = json.loads(Path(path).read_text())
    out = Path(spec["out"])
    spark = _session(spec["master"], spec.get("spark_jar"))
    spark.sparkContext.setLogLevel("ERROR")
    (out / "executors.txt").write_text(str(_executors(spark, wanted=2)))
    (out / "deleted_rows_reader.txt").write_text(str(has_reader(spark)))
    for read in spec["reads"]:
        try:
            table = _arrow(_frame(spark, spec, read))
        except Exception as exc:  # noqa: BLE001 - the test inspects the error text
            (out / f"{read['name']}.error").write_text(f"{type(exc).__name__}: {exc}")
            continue
        pq.write_table(table, out / f"{read['name']}.parquet")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
