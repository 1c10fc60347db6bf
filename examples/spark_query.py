"""Build a small DuckLake lake with DuckDB (the reference writer), then query it from Spark.

    .venv/bin/python examples/spark_query.py

The lake goes to ``./demo_spark_lake`` (recreated each run). Spark runs ``local[2]``; its
Python workers use this interpreter, which must have ``ducklake_datafusion`` installed.
"""

from __future__ import annotations

import os
import shutil
import sys

import duckdb
import duckdb_extensions

HERE = os.path.abspath("demo_spark_lake")


def build_lake() -> str:
    """Three snapshots of an ``orders`` table: a bulk insert, a delete, a schema change."""
    shutil.rmtree(HERE, ignore_errors=True)
    os.makedirs(HERE)
    catalog = os.path.join(HERE, "lake.ducklake")
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{HERE}/data')")
    con.execute(
        "CREATE TABLE lake.main.orders (id BIGINT, region VARCHAR, day DATE, amount DECIMAL(10,2))"
    )
    for part in range(4):  # four files with disjoint id ranges: filters on id prune files
        con.execute(
            "INSERT INTO lake.main.orders SELECT i, ['north','south','east','west'][i % 4 + 1], "
            "DATE '2024-01-01' + (i % 60)::INTEGER, (i % 997) / 10 "
            f"FROM range({part * 50_000}, {(part + 1) * 50_000}) r(i)"
        )
    con.execute("DELETE FROM lake.main.orders WHERE id % 10 = 0")  # positional deletes
    con.execute("ALTER TABLE lake.main.orders RENAME COLUMN amount TO total")  # schema evolution
    con.execute("INSERT INTO lake.main.orders VALUES (1000000, 'north', DATE '2024-03-01', 5.00)")
    con.execute("DETACH lake")
    return catalog


def main() -> None:
    catalog = build_lake()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this interpreter
    from pyspark.sql import SparkSession

    from ducklake_datafusion.spark import read_table, register_spark

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register_spark(spark)  # the "ducklake" format (raw format: no pushdown unless asked)

    orders = spark.read.format("ducklake").option("metadata", catalog).load("main.orders")
    orders.printSchema()
    print("orders now:", orders.count())
    (
        orders.where("day >= DATE '2024-02-01'")
        .groupBy("region")
        .agg({"total": "sum", "*": "count"})
        .orderBy("region")
        .show()
    )

    # read_table() pushes filters down: the planner keeps only the files whose catalog
    # statistics can match. With one partition per task (partition_bytes=1) that shows as
    # the number of Spark partitions: 4 files + the inlined row for the table; one file +
    # the inlined row (no statistics) for id >= 150000.
    per_file = read_table(spark, catalog, "main.orders", partition_bytes=1)
    late = per_file.where("id >= 150000")
    print(
        f"partitions: table {per_file.rdd.getNumPartitions()}, id >= 150000: "
        f"{late.rdd.getNumPartitions()} ({late.count()} rows)"
    )

    # Time travel: snapshot 5 is the table after the four inserts, before the delete and
    # the rename (the column is still called 'amount' there).
    first = read_table(spark, catalog, "main.orders", snapshot=5)
    print("columns at snapshot 5:", first.columns, "rows:", first.count())

    # A schema is a projection: only these columns are read and shipped to Spark.
    slim = read_table(spark, catalog, "main.orders", schema="id BIGINT, total DECIMAL(10,2)")
    slim.orderBy("id", ascending=False).show(3)
    spark.stop()


if __name__ == "__main__":
    main()
