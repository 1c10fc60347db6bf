"""``read_table``'s default path: the lake's files read by Spark's own Parquet reader.

Clean files and files of older layouts are read by ``spark.read.parquet`` (``_scan``,
``_projection``); positional deletes are applied inside Spark's reader by the package's
jar (``_deleted_rows``) or, without it, by a broadcast join of bit masks
(``_mask_join``); object stores go through Spark's Hadoop connectors (``_hadoop``); and a
``where=`` condition prunes files by catalog statistics before Spark lists any
(``_where``). What this path cannot read exactly is left to the Python data source
(``spark/source``), which is told the files read here. Nothing here needs pyspark's data
source API: this is all of ``read_table`` on pyspark 3.5 and 4.0.
"""

from ._deleted_rows import ROW_INDEX, has_reader, spark_jar
from ._exact_types import spark_reads_exactly
from ._hadoop import abfs_mode_problem, hadoop_options, hadoop_url, parse_hadoop_version
from ._scan import ParquetScan, parquet_scan
from ._where import pruning_filter

__all__ = [
    "ROW_INDEX",
    "ParquetScan",
    "abfs_mode_problem",
    "hadoop_options",
    "hadoop_url",
    "has_reader",
    "parquet_scan",
    "parse_hadoop_version",
    "pruning_filter",
    "spark_jar",
    "spark_reads_exactly",
]
