"""Read and write DuckLake tables from Apache Spark (PySpark 3.5 to 4.3) with the same scan plan.

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

    >>> from ducklake_datafusion.spark import write_table        # one snapshot per write
    >>> write_table(df.where("amount > 0"), "lake.ducklake", "main.orders_clean", mode="create")

    >>> from ducklake_datafusion.spark import read_stream        # new rows, as a stream
    >>> stream = read_stream(spark, "lake.ducklake", "main.orders", starting_version=12)

    >>> spark.sql("CALL lake.system.merge_adjacent_files(table => 'main.orders')")  # Spark 4
    >>> from ducklake_datafusion.spark import call_procedure     # any release (3.5 too)
    >>> call_procedure(spark, "lake", "merge_adjacent_files", table="main.orders")

With the package's jar on the classpath, ``read_table`` is the scan of the jar's catalog,
configured at runtime for the lake (``_catalog_read``): filters on the DataFrame prune
files, and the catalog's planner reads what Spark's reader cannot. Otherwise (and with
``catalog_scan=False``) it reads the data files with Spark's own Parquet reader (``parquet/``), older
layouts projected by field id and deletes applied inside that reader by the package's jar
(``spark.jars`` = :func:`spark_jar`) or, without it, by a broadcast join of bit masks
(object stores through Hadoop connectors), inlined rows as a local DataFrame, and unions
the rest, read by the ``ducklake`` data source (``source/``); its ``where=`` prunes files
by catalog statistics first. For the data source, the driver plans the scan once (catalog metadata, files pruned with the filters Spark
pushes down) and ships task groups of about ``partition_bytes`` each to the executors,
which read Parquet with the very executor DataFusion uses: positional deletes, inlined
rows and schema evolution included. Executors never open the catalog. Filter pushdown is
on in ``read_table`` and opt-in on the format (``.option("pushdown", "true")``), because of
a pyspark 4.1 bug that ``read_table`` works around (see ``source/_table_reader.py``).
``read_changes`` computes the change feed in Spark: executor scans of the states that
differ, joined on rowid (see ``changes/``); the format's ``read_changes`` option computes
it in the planning worker with ``table_changes`` and ships it as Arrow batches
(``source/_changes_reader.py``).

On pyspark 3.5 and 4.0, which lack the Python data source API, ``read_table`` and
``register_spark_views`` without the catalog's scan read what Spark's Parquet reader reads exactly (tables of other
types, encrypted or name-mapped files raise :class:`UnsupportedFeatureError` saying so),
``read_changes`` computes the feed on the driver, and the ``ducklake`` format with the
classes behind it (``DuckLakeDataSource``, ``DuckLakeReader``, ...) needs pyspark 4.1+.

Importing :mod:`ducklake_datafusion` does not import pyspark; only this subpackage does.
"""

from __future__ import annotations

from ._core import require_supported_pyspark

require_supported_pyspark()

from ._core import (
    DEFAULT_PARTITION_BYTES,
    SourceOptions,
    has_data_source,
    require_data_source,
    spark_schema,
    spark_type,
)
from ._procedures import call_procedure
from ._read import PUSHDOWN_CONF, read_changes, read_table, register_spark
from ._stream import read_stream
from ._views import register_spark_views
from ._write import write_table
from .changes import changes_schema
from .parquet import spark_jar

# The data source's classes (``source``), imported on first use: pyspark 3.5 / 4.0 cannot
# import them.
_DATA_SOURCE_CLASSES = (
    "ChangesPartition",
    "DuckLakeChangesReader",
    "DuckLakeDataSource",
    "DuckLakeReader",
    "ScanPartition",
)

__all__ = [
    "DEFAULT_PARTITION_BYTES",
    "PUSHDOWN_CONF",
    "SourceOptions",
    "call_procedure",
    "changes_schema",
    "read_changes",
    "read_stream",
    "read_table",
    "register_spark",
    "register_spark_views",
    "spark_jar",
    "spark_schema",
    "spark_type",
    "write_table",
]
if has_data_source():
    __all__ += list(_DATA_SOURCE_CLASSES)


def __getattr__(name: str):
    if name not in _DATA_SOURCE_CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_data_source(f"ducklake_datafusion.spark.{name}")
    from . import source  # pyspark 4.1+: the data source API

    return getattr(source, name)
