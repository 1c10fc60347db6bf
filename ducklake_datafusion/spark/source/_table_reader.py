"""The Spark reader: plan once on the driver, execute task groups on the executors.

How pyspark 4.1 drives it (``pyspark/sql/worker/data_source_pushdown_filters.py``): in a
planning worker on the driver it calls ``DataSource.reader(schema)``, then
``pushFilters(filters)``, then pickles the reader for the executors, then calls
``partitions()``. So:

* the reader pickles as plain data (options, column specs, the target Arrow schema, the
  accepted filter); the catalog handle it keeps between ``reader()`` and ``partitions()``
  in the planning worker is dropped by ``__getstate__``, since it is pickled *before*
  ``partitions()`` runs;
* ``partitions()`` builds the :class:`ScanPlan` with the accepted filter (files pruned by
  statistics) in one catalog transaction, releases the catalog, splits the tasks into
  groups of about ``partition_bytes`` each, and returns one :class:`ScanPartition` per
  group: the plan restricted to that group, which is everything an executor needs;
* ``read(partition)`` runs the core executor on that group and casts the batches to the
  Arrow schema Spark expects. Executors never open the catalog.

Filter pushdown and a Spark 4.1 bug. pyspark 4.1.1's ``PythonDataSourceV2`` keeps the read
plan of the last scan that pushed filters and reuses it for any later scan *of the same
DataFrame* that has no pushable filter at all (``df.filter("k > 5").count()`` then
``df.count()`` counts only ``k > 5``). So pushdown is opt-in on the format
(``.option("pushdown", "true")``) and on by default only through ``read_table``, which
adds a *guard*: a constant column :data:`GUARD_COLUMN` and a ``WHERE guard`` filter on
top of the scan, then drops the column. Every query on that DataFrame then has one
pushable filter, so Spark plans every scan afresh. The guard filter is taken as a no-op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, EqualTo, Filter, InputPartition, IsNotNull
from pyspark.sql.types import StructType

from ...catalog import ColumnSpec
from ...errors import InvalidOptionError, UnsupportedTypeError
from ...read import execute_tasks, read_request
from ...scan import InlinedRowsTask, ScanPlan
from .._core import (
    GUARD_COLUMN,
    FilterColumn,
    OpenTable,
    SourceOptions,
    check_castable,
    combine,
    spark_arrow_field,
    spark_arrow_type,
    spark_type,
    to_spark_batch,
)
from ._pushed import pushed_filter

__all__ = ["DuckLakeReader", "ScanPartition"]


class ScanPartition(InputPartition):
    """One Spark input partition: the scan plan restricted to one group of tasks.

    Attributes:
        index: position among the scan's partitions.
        plan: the full plan (snapshot, columns, filter, storage options, stats) with
            ``tasks`` narrowed to this partition's group.
    """

    def __init__(self, index: int, plan: ScanPlan) -> None:
        self.index = index
        self.plan = plan

    @property
    def weight(self) -> int:
        return sum(task.weight for task in self.plan.tasks)

    def __repr__(self) -> str:
        return (
            f"ScanPartition({self.index}, {self.plan.table}@{self.plan.snapshot_id}, "
            f"tasks={len(self.plan.tasks)}, bytes={self.weight})"
        )


class DuckLakeReader(DataSourceReader):
    """Reads one DuckLake table at one snapshot for Spark.

    Args:
        options: the parsed options, pinned to the snapshot ``columns`` belong to.
        schema: the Spark schema to produce: the table's derived schema, or the schema the
            user gave with ``spark.read.schema(...)``, whose fields select (and may re-type)
            table columns by name.
        opened: the table at that snapshot, resolved by the data source in this planning
            worker; kept (never pickled) so that ``partitions()`` reuses it.

    Raises:
        InvalidOptionError: the schema names a column the table lacks, or declares a type
            the column cannot be cast to.
        UnsupportedTypeError: a requested column has a type Spark cannot receive.
    """

    def __init__(self, options: SourceOptions, schema: StructType, opened: OpenTable) -> None:
        self.options = options
        self.columns: tuple[ColumnSpec, ...] = opened.table.columns
        self._opened: OpenTable | None = opened
        columns = self.columns
        requested = list(schema.fields)
        self.guarded = options.guard and bool(requested) and requested[-1].name == GUARD_COLUMN
        if self.guarded:
            requested.pop()
        projection: list[str] = []
        fields: list[pa.Field] = []
        filter_columns: dict[str, FilterColumn] = {}
        for field in requested:
            column = _find_column(columns, field.name, options.table_label)
            target = spark_arrow_type(field.dataType, field.name)
            check_castable(column.arrow_type, target, field.name, field.dataType.simpleString())
            projection.append(column.name)
            fields.append(spark_arrow_field(field, target))
            filter_columns[field.name] = FilterColumn(
                column.name, column.arrow_type, _derived(column) == field.dataType
            )
        self.projection: tuple[str, ...] = tuple(projection)
        self.target: pa.Schema = pa.schema(fields)
        self._filter_columns = filter_columns
        self.pushed: list = []

    # -- planning (driver) ---------------------------------------------------------------

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters that translate exactly; return the rest for Spark to apply.

        Without the ``pushdown`` option every filter goes back to Spark (only the guard
        filter of ``read_table`` is taken, as a no-op).
        """
        accepted, rejected = [], []
        for spark_filter in filters:
            if self.guarded and _is_guard_filter(spark_filter):
                continue
            expression = None
            if self.options.pushdown:
                expression = pushed_filter(spark_filter, self._filter_columns)
            if expression is None:
                rejected.append(spark_filter)
            else:
                accepted.append(expression)
        self.pushed = accepted
        return rejected

    @property
    def filter(self):
        """The accepted filters AND-ed as one scan ``Filter`` (or None)."""
        return combine(self.pushed)

    def scan_plan(self) -> ScanPlan:
        """Plan the scan now (reads the catalog): files pruned with the accepted filters.

        The catalog handle is released afterwards; a later call opens it again.
        """
        opened, self._opened = self._opened or self.options.resolve(), None
        try:
            plan = opened.table.scan_plan(filter=self.filter, columns=list(self.projection))
        finally:
            opened.close()
        if self.options.already_read:
            # read by Spark's own Parquet reader beside this source (read_table, spark/parquet)
            kept = tuple(t for t in plan.tasks if not self._already_read(t))
            plan = dataclasses.replace(plan, tasks=kept)
        return plan

    def _already_read(self, task) -> bool:
        """Whether ``read_table``'s Spark Parquet part already holds ``task``'s rows."""
        already = self.options.already_read
        if isinstance(task, InlinedRowsTask):
            return already.inlined
        return task.data_file_id in already.data_file_ids

    def __getstate__(self) -> dict:
        """Pickle plain data only: the catalog handle stays in the planning worker."""
        state = dict(self.__dict__)
        state["_opened"] = None
        return state

    def partitions(self) -> Sequence[ScanPartition]:
        """One partition per ~``partition_bytes`` of tasks, at least ``min_partitions``.

        Both bounds are capped by the number of tasks (a file is never split).
        """
        plan = self.scan_plan()
        total = sum(task.weight for task in plan.tasks)
        count = max(-(-total // self.options.partition_bytes), self.options.min_partitions)
        groups = plan.groups(count)
        return [
            ScanPartition(index, dataclasses.replace(plan, tasks=group))
            for index, group in enumerate(groups)
        ]

    # -- execution (executors) -------------------------------------------------------------

    def read(self, partition: InputPartition | None) -> Iterator[pa.RecordBatch]:
        """Yield the rows of one partition as Arrow batches in Spark's schema.

        A scan without partitions still reads one: pyspark 4.0-4.1 hand over ``None``,
        4.2+ a bare ``InputPartition(None)``. Both hold no rows.
        """
        if not isinstance(partition, ScanPartition):
            return iter(())
        return _read(partition.plan, self.target, self.guarded)


def _read(plan: ScanPlan, target: pa.Schema, guarded: bool) -> Iterator[pa.RecordBatch]:
    request = read_request(plan)
    guard = pa.field(GUARD_COLUMN, pa.bool_(), nullable=False)
    for batch in execute_tasks(plan, plan.tasks, request):
        batch = to_spark_batch(batch, target)
        if guarded:
            batch = batch.append_column(guard, pa.array(np.ones(batch.num_rows, dtype=bool)))
        yield batch


def _is_guard_filter(spark_filter: Filter) -> bool:
    """``WHERE guard`` (EqualTo(guard, True)) and the IsNotNull Spark infers from it."""
    if getattr(spark_filter, "attribute", None) != (GUARD_COLUMN,):
        return False
    if isinstance(spark_filter, IsNotNull):
        return True
    return isinstance(spark_filter, EqualTo) and spark_filter.value is True


def _derived(column: ColumnSpec):
    try:
        return spark_type(column.arrow_type, column.name)
    except UnsupportedTypeError:
        return None


def _find_column(columns: tuple[ColumnSpec, ...], name: str, table: str) -> ColumnSpec:
    """Spark resolves names case-insensitively by default; so do we, unless ambiguous."""
    for column in columns:
        if column.name == name:
            return column
    matches = [c for c in columns if c.name.lower() == name.lower()]
    if len(matches) == 1:
        return matches[0]
    raise InvalidOptionError(
        f"the schema given for {table} names column {name!r}, which the table does not have "
        f"(columns: {', '.join(c.name for c in columns)})"
    )
