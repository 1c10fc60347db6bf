"""The ``ducklake`` Python data source: ``spark.read.format("ducklake")`` (pyspark 4.1+).

The driver plans the scan once and ships task groups to the executors, which read them
with the core executor (``_table_reader``); the ``read_changes`` option returns the change
feed instead (``_changes_reader``). ``read_table`` reads through this source whatever
Spark's own Parquet reader cannot read exactly. Importing this package needs pyspark's
data source API, so ``spark`` imports it only where a read needs it.
"""

from ._changes_reader import ChangesPartition, DuckLakeChangesReader
from ._source import DuckLakeDataSource
from ._table_reader import DuckLakeReader, ScanPartition

__all__ = [
    "ChangesPartition",
    "DuckLakeChangesReader",
    "DuckLakeDataSource",
    "DuckLakeReader",
    "ScanPartition",
]
