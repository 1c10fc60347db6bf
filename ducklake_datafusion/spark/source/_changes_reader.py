"""The change-feed mode of the ``ducklake`` source: the ``read_changes`` option.

``.option("read_changes", "3,7")`` (or ``changes_start`` [+ ``changes_end``]) makes the
source return the change feed of ``ducklake_table_changes`` instead of a table state:
``snapshot_id``, ``rowid``, ``change_type``, then the table's columns as of the end
snapshot. The function ``read_changes`` computes the same feed in Spark instead (executor
scans joined on rowid, ``spark/changes``); a data source returns rows of its own reads
and cannot hold that join, so the option keeps computing the feed on the driver, which
limits it to feeds that fit in the driver's memory. How pyspark 4.1 runs it:

* ``DataSource.schema()`` (planning worker, once per DataFrame) resolves both bounds to
  snapshot ids with the core's rules (``scan._changes.resolve_bound``: a time selects
  the first snapshot at or after it as the start, the last at or before it as the end; no
  end means the latest snapshot) and reads the table's columns at the end snapshot. The data source keeps the two ids, so every action on the
  DataFrame reads the same range and schema even while writers commit.
* ``partitions()`` (planning worker, once per query) computes the feed with the core's
  ``table_changes`` (the function behind the SQL table function), casts it to the Arrow
  schema Spark expects, and cuts it into row ranges of about ``partition_bytes`` (at least
  ``min_partitions``, at most one per row), each carried by its partition as Arrow IPC
  bytes. The partitions keep the feed's order (snapshot, rowid, change type).
* ``read()`` (executors) only decodes those bytes: executors never open the catalog and
  never read data files.

No filter is pushed down: the reader keeps pyspark's default ``pushFilters``, which hands
every filter back to Spark (so the plan-reuse bug described in ``_table_reader`` cannot
change any answer here: every plan of the scan returns the whole feed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .._core import SourceOptions
from ..changes import feed_table, feed_target

__all__ = ["ChangesPartition", "DuckLakeChangesReader"]

_BATCH_ROWS = 65536  # rows per Arrow batch handed to Spark


class ChangesPartition(InputPartition):
    """One Spark input partition of a change feed: a row range as Arrow IPC stream bytes.

    Attributes:
        index: position among the feed's partitions (= order in the feed).
        rows: number of rows.
        data: the rows, already in the Arrow schema Spark expects.
    """

    def __init__(self, index: int, rows: int, data: bytes) -> None:
        self.index = index
        self.rows = rows
        self.data = data

    def __repr__(self) -> str:
        return f"ChangesPartition({self.index}, rows={self.rows}, bytes={len(self.data)})"


class DuckLakeChangesReader(DataSourceReader):
    """Reads the change feed of one table between two snapshots for Spark.

    Args:
        options: the parsed options (bounds pinned to snapshot ids when the data source
            derived the schema).
        schema: the Spark schema to produce: the derived one, or the schema the user gave
            with ``spark.read.schema(...)``, whose fields select (and may re-type) feed
            columns by name.

    Raises:
        UnsupportedTypeError: a declared type Spark cannot receive from a Python source.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.target, self.declared = feed_target(schema)

    # -- planning (driver) ---------------------------------------------------------------

    def feed(self) -> pa.Table:
        """The change feed in Spark's Arrow schema (reads the catalog and the data files).

        Raises:
            InvalidOptionError: the schema names a column the feed lacks, or declares a
                type the column cannot be cast to.
            SnapshotNotFoundError, TableNotFoundError: as ``table_changes``.
        """
        return feed_table(self.options, self.target, self.declared)

    def partitions(self) -> Sequence[ChangesPartition]:
        """Row ranges of about ``partition_bytes`` each, at least ``min_partitions``.

        Both bounds are capped by the number of rows; an empty feed is one empty partition.
        """
        table = self.feed()
        count = max(-(-table.nbytes // self.options.partition_bytes), self.options.min_partitions)
        count = max(1, min(count, table.num_rows))
        edges = [table.num_rows * i // count for i in range(count + 1)]
        return [
            ChangesPartition(index, hi - lo, _ipc_bytes(table.slice(lo, hi - lo)))
            for index, (lo, hi) in enumerate(pairwise(edges))
        ]

    # -- execution (executors) -------------------------------------------------------------

    def read(self, partition: ChangesPartition | None) -> Iterator[pa.RecordBatch]:
        """Yield the rows of one partition (already in Spark's Arrow schema)."""
        if not isinstance(partition, ChangesPartition):  # no partitions: None (4.1) or a
            return iter(())  # bare InputPartition (4.2+)
        return _batches(partition.data)


def _ipc_bytes(table: pa.Table) -> bytes:
    """An Arrow IPC stream of ``table`` (slices are written without their parent's rows)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=_BATCH_ROWS)
    return sink.getvalue().to_pybytes()


def _batches(data: bytes) -> Iterator[pa.RecordBatch]:
    with pa.ipc.open_stream(data) as reader:
        yield from reader
