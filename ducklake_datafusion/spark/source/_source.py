"""The ``ducklake`` Python data source (pyspark 4.1+; registered by ``register_spark``).

pyspark creates the data source in a planning worker, calls :meth:`schema` there (unless
the user gave a schema) and pickles the object back to the JVM; every later plan of the
same DataFrame unpickles that object. :meth:`schema` therefore records the snapshot it
read, so all actions on one DataFrame read one snapshot even while writers commit.

``read_table`` is the recommended entry point: it reads what it can with Spark's own
Parquet reader (``spark/parquet``), turns filter pushdown on and adds the guard that keeps
pushdown correct on pyspark 4.1 (see ``_table_reader``). The ``read_changes`` option reads
the change feed between two snapshots instead (see ``_changes_reader``).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .._core import SourceOptions, guard_field, spark_schema
from ..changes import changes_schema, resolve_changes
from ._changes_reader import DuckLakeChangesReader
from ._table_reader import DuckLakeReader

__all__ = ["DuckLakeDataSource"]


class DuckLakeDataSource(DataSource):
    """``spark.read.format("ducklake")``: a DuckLake table at one snapshot, or its changes.

    Options: ``metadata`` (catalog string, required), the table as ``load("schema.table")``
    or ``.option("table", ...)``, ``snapshot`` or ``snapshot_time``, ``data_path``,
    ``partition_bytes``, ``min_partitions``, ``pushdown`` (default false; see
    ``read_table``), and any storage option of ``DuckLakeCatalog``. With ``read_changes``
    (``"start,end"``) or ``changes_start`` [+ ``changes_end``] it reads the change feed
    between two snapshots instead (see ``read_changes``).
    """

    @classmethod
    def name(cls) -> str:
        return "ducklake"

    def _source_options(self) -> SourceOptions:
        options = SourceOptions.parse(self.options)
        if options.changes:
            bounds = getattr(self, "_change_range", None)
            return options.pinned_changes(*bounds) if bounds is not None else options
        pinned = getattr(self, "_snapshot_id", None)
        return options.pinned(pinned) if pinned is not None else options

    def schema(self) -> StructType:
        options = self._source_options()
        if options.changes:
            found = resolve_changes(options)
            self._change_range = (found.first, found.last)
            return changes_schema(found.columns)
        with options.open_table() as table:
            self._snapshot_id = table.snapshot_id
            schema = spark_schema(table.columns)
        return schema.add(guard_field()) if options.guard else schema

    def reader(self, schema: StructType) -> DuckLakeReader | DuckLakeChangesReader:
        options = self._source_options()
        if options.changes:
            return DuckLakeChangesReader(options, schema)
        opened = options.resolve()  # kept open for partitions(), in this same worker
        try:
            return DuckLakeReader(options.pinned(opened.table.snapshot_id), schema, opened)
        except BaseException:
            opened.close()
            raise
