"""Read DuckLake tables from Apache Spark (PySpark 4.1 to 4.3) with the same scan plan.

    >>> from ducklake_datafusion.spark import register_spark
    >>> register_spark(spark)
    >>> df = (spark.read.format("ducklake")
    ...         .option("metadata", "lake.ducklake")
    ...         .option("snapshot", "12")
    ...         .load("main.orders"))

    >>> from ducklake_datafusion.spark import read_table
    >>> df = read_table(spark, "lake.ducklake", "main.orders")   # Spark's own reader
    >>> old = read_table(spark, "lake.ducklake", "main.orders@v12")  # time travel
    >>> few = read_table(spark, "lake.ducklake", "main.orders", where="id < 100")  # pruned

    >>> from ducklake_datafusion.spark import read_changes       # the change feed
    >>> changes = read_changes(spark, "lake.ducklake", "main.orders", 3, 7)

    >>> from ducklake_datafusion.spark import register_spark_views   # Spark SQL
    >>> register_spark_views(spark, "lake.ducklake")               # lake_main_orders ...
    >>> spark.sql("SELECT count(*) FROM lake_main_orders")

``read_table`` reads the data files with Spark's own Parquet reader, older layouts
projected by field id and deletes applied by a broadcast join of bit masks
(``_native.py``; object stores through Hadoop connectors, ``_hadoop.py``), inlined rows
as a local DataFrame, and unions the rest, read by the ``ducklake`` data source; its
``where=`` prunes files by catalog statistics first (``_where.py``). For the data source,
the driver plans the scan once (catalog metadata, files pruned with the filters Spark
pushes down) and ships task groups of about ``partition_bytes`` each to the executors,
which read Parquet with the very executor DataFusion uses: positional deletes, inlined
rows and schema evolution included. Executors never open the catalog. Filter pushdown is
on in ``read_table`` and opt-in on the format (``.option("pushdown", "true")``), because of
a pyspark 4.1 bug that ``read_table`` works around (see ``_reader.py``). ``read_changes``
computes the change feed in Spark: executor scans of the states that differ, joined on
rowid (see ``_change_feed.py``); the format's ``read_changes`` option computes it in the
planning worker with ``table_changes`` and ships it as Arrow batches (``_changes.py``).

Importing :mod:`ducklake_datafusion` does not import pyspark; only this subpackage does.
"""

from __future__ import annotations

from ._versions import require_supported_pyspark

require_supported_pyspark()

from ._changes import ChangesPartition, DuckLakeChangesReader, changes_schema
from ._options import DEFAULT_PARTITION_BYTES, SourceOptions
from ._reader import DuckLakeReader, ScanPartition
from ._source import (
    PUSHDOWN_CONF,
    DuckLakeDataSource,
    read_changes,
    read_table,
    register_spark,
)
from ._types import spark_schema, spark_type
from ._views import register_spark_views

__all__ = [
    "DEFAULT_PARTITION_BYTES",
    "PUSHDOWN_CONF",
    "ChangesPartition",
    "DuckLakeChangesReader",
    "DuckLakeDataSource",
    "DuckLakeReader",
    "ScanPartition",
    "SourceOptions",
    "changes_schema",
    "read_changes",
    "read_table",
    "register_spark",
    "register_spark_views",
    "spark_schema",
    "spark_type",
]
