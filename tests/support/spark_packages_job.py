"""A Spark session that takes the package's jar from Maven coordinates, run by
``test_spark_maven`` in its own process (``spark.jars.packages`` is read when the JVM starts,
so the suite's running session cannot take it):

    python spark_packages_job.py SPEC.json

SPEC: ``package`` (``group:artifact:version``), ``ivy`` (a fresh Ivy home, so the jar is
resolved now rather than taken from an earlier run's cache), ``metadata``, ``sql`` (over the
catalog ``lake``), ``out`` (a directory). Writes ``answer.parquet``, the executed plan
(``plan.txt``) and the jars Spark loaded (``jars.txt``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import SparkSession


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out = Path(spec["out"])
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("ducklake-datafusion-maven-test")
        .config("spark.jars.packages", spec["package"])
        .config("spark.jars.ivy", spec["ivy"])
        .config("spark.sql.catalog.lake", "io.ducklake_datafusion.spark.DuckLakeCatalog")
        .config("spark.sql.catalog.lake.metadata", spec["metadata"])
        .config("spark.sql.catalog.lake.python", sys.executable)
        .config("spark.sql.catalog.lake.planner_idle_seconds", "5")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.sql(spec["sql"])
        plan = frame._jdf.queryExecution().executedPlan().toString()
        pq.write_table(frame.toArrow(), out / "answer.parquet")
        (out / "plan.txt").write_text(plan)
        jars = spark.sparkContext._jsc.sc().listJars()
        (out / "jars.txt").write_text("\n".join(jars.apply(i) for i in range(jars.size())))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
