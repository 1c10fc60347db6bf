"""One side of the distributed change feed: the internal ``ducklake_change_side`` source.

``read_changes`` (``_feed``) joins two scans of this data source,
``format("ducklake_change_side")``, on ``(snapshot, rowid)``: the *old* side yields, for
every step ``(p, s)`` of the feed, rows of the table at ``p``, the *new* side rows at
``s``; what each side reads, so that only candidate rows leave the executors, is in
``_side_units``.

Internal options (added by ``read_changes``, not for users): ``change_side`` (``old`` or
``new``) and the bounds as ``changes_start`` / ``changes_end`` snapshot ids; the schema is
always given by ``read_changes``: ``__snapshot``, ``__rowid``, then fields named
``__c_<i>`` (table column ``i`` of the end snapshot in its Spark type), ``__x_<i>`` (the
same column in an exact comparison form, where its Spark type loses information:
``timestamp_ns`` as nanoseconds, a top-level INTERVAL as a struct) or ``__u<j>_<i>`` (the
column cast to the type a user schema declares for output field ``j``).

Planning (``partitions()``, in Spark's planning worker on the driver) reads metadata and
delete files only, with the core's ``plan_changes``; both sides plan the same steps. No
filter is pushed down (pyspark's default ``pushFilters``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

from ...catalog import ColumnSpec
from ...errors import InvalidOptionError
from ...read import plan_changes
from ...scan import balanced_groups
from .._core import (
    INTERVAL_STRUCT,
    SourceOptions,
    check_castable,
    interval_struct,
    spark_arrow_field,
    spark_arrow_type,
    to_spark_batch,
)
from ._side_units import Unit, plan_of, side_units, unit_rows

__all__ = [
    "SIDES",
    "SIDE_FORMAT",
    "SIDE_OPTION",
    "ChangeSidePartition",
    "DuckLakeChangeSideReader",
    "DuckLakeChangeSideSource",
    "compare_type",
    "side_key_fields",
]

SIDE_FORMAT = "ducklake_change_side"
SIDE_OPTION = "change_side"
SIDES = ("old", "new")
SNAPSHOT_FIELD = "__snapshot"
ROWID_FIELD = "__rowid"
_FIELD = re.compile(r"^__(c|x|u\d+)_(\d+)$")


def side_key_fields() -> list[StructField]:
    """The two key fields every side scan starts with."""
    return [
        StructField(SNAPSHOT_FIELD, LongType(), nullable=False),
        StructField(ROWID_FIELD, LongType(), nullable=False),
    ]


# -- exact comparison forms -------------------------------------------------------------------


def compare_type(column: ColumnSpec) -> pa.DataType | None:
    """The Arrow type a column is compared in when its Spark type would lose information.

    ``None``: the column's Spark type holds it exactly. Not so: ``timestamp_ns`` at any
    depth (Spark keeps microseconds; compared as its int64 nanoseconds) and a top-level
    INTERVAL (compared as its three exact parts, whatever Spark type it is read as).
    """
    arrow_type = column.arrow_type
    if pa.types.is_interval(arrow_type):
        return INTERVAL_STRUCT
    exact = _without_nanos(arrow_type)
    return None if exact == arrow_type else exact


def _without_nanos(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every nanosecond timestamp replaced by its int64 value."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        return pa.int64()
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_without_nanos(f.type)) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return pa.map_(_without_nanos(arrow_type.key_type), _without_nanos(arrow_type.item_type))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_without_nanos(arrow_type.value_type))
    return arrow_type


def _exact(array: pa.Array, exact: pa.DataType) -> pa.Array:
    """``array`` in its comparison type (``compare_type``)."""
    if pa.types.is_interval(array.type):
        return interval_struct(array)
    return array.cast(exact)


# -- partitions and the reader ----------------------------------------------------------------


class ChangeSidePartition(InputPartition):
    """One Spark input partition of a side scan: a balanced group of units.

    Attributes:
        index: position among the scan's partitions.
        units: what to read (plain data: plans, positions, inlined rows).
    """

    def __init__(self, index: int, units: tuple[Unit, ...]) -> None:
        self.index = index
        self.units = units

    def __repr__(self) -> str:
        weight = sum(u.weight for u in self.units)
        return f"ChangeSidePartition({self.index}, units={len(self.units)}, bytes={weight})"


@dataclass(frozen=True)
class _Output:
    """One output field: which table column it comes from, in which Arrow type."""

    column: int
    field: pa.Field
    exact: pa.DataType | None = None  # a comparison field: convert to this type first


class DuckLakeChangeSideReader(DataSourceReader):
    """Reads one side of a change feed (see ``_side_units``); plain data when pickled.

    Raises:
        InvalidOptionError: a field name that is not a side field, or a column index or
            type that does not fit the table at the end snapshot (found at planning).
    """

    def __init__(self, options: SourceOptions, side: str, schema: StructType) -> None:
        self.options = options
        self.side = side
        self.schema = schema
        self.where = f"change feed of {options.table_label}"

    def _outputs(self, columns: tuple[ColumnSpec, ...]) -> list[_Output]:
        fields = self.schema.fields
        keys = [f.name for f in fields[:2]]
        if keys != [SNAPSHOT_FIELD, ROWID_FIELD]:
            raise InvalidOptionError(
                f"the {SIDE_FORMAT} source is internal to read_changes; its schema must start "
                f"with {SNAPSHOT_FIELD}, {ROWID_FIELD} (got {keys})"
            )
        outputs = []
        for field in fields[2:]:
            match = _FIELD.match(field.name)
            index = int(match.group(2)) if match else len(columns)
            if match is None or index >= len(columns):
                raise InvalidOptionError(
                    f"{SIDE_FORMAT}: field {field.name!r} names no column of {self.where} "
                    "at the end of the change feed"
                )
            column = columns[index]
            target = spark_arrow_type(field.dataType, field.name)
            exact = compare_type(column) if match.group(1) == "x" else None
            if exact is None:
                check_castable(
                    column.arrow_type, target, column.name, field.dataType.simpleString()
                )
            outputs.append(_Output(index, spark_arrow_field(field, target), exact))
        return outputs

    def partitions(self) -> Sequence[ChangeSidePartition]:
        """Plan the feed (metadata and delete files only) and group this side's units."""
        options = self.options
        with options.open_lake() as lake:
            plan = plan_changes(
                lake,
                options.schema_name,
                options.table_name,
                options.changes_start,
                options.changes_end,
            )
        self._outputs(plan.columns)  # fail here, not on an executor
        units = side_units(plan, self.side)
        total = sum(u.weight for u in units)
        count = max(-(-total // options.partition_bytes), options.min_partitions)
        return [ChangeSidePartition(i, g) for i, g in enumerate(balanced_groups(units, count))]

    def read(self, partition: ChangeSidePartition | None) -> Iterator[pa.RecordBatch]:
        """Yield the partition's rows in the side schema."""
        if not isinstance(partition, ChangeSidePartition):  # no partitions: None (4.1) or
            return  # a bare InputPartition (4.2+)
        outputs: list[_Output] | None = None
        for unit in partition.units:
            if outputs is None:
                outputs = self._outputs(plan_of(unit).columns)
            for rows, snapshots in unit_rows(unit, self.where):
                if rows.num_rows:
                    yield from _side_batches(rows, snapshots, outputs)


def _side_batches(rows, snapshots, outputs: list[_Output]) -> Iterator[pa.RecordBatch]:
    """Rows (table columns + rowid) -> batches of the side schema.

    ``snapshots``: the step snapshot of every row (an int), or one per row (an array).
    """
    batches = rows.to_batches() if isinstance(rows, pa.Table) else [rows]
    # as side_key_fields() declares them: pyspark 4.2+ checks the batches' nullability too
    fields = [
        pa.field(SNAPSHOT_FIELD, pa.int64(), nullable=False),
        pa.field(ROWID_FIELD, pa.int64(), nullable=False),
    ]
    target = pa.schema(fields + [o.field for o in outputs])
    start = 0
    for batch in batches:
        n = batch.num_rows
        if isinstance(snapshots, np.ndarray):
            tags = snapshots[start : start + n]
        else:
            tags = np.full(n, snapshots, dtype=np.int64)
        start += n
        if n == 0:
            continue
        arrays = [pa.array(tags), batch.column(batch.num_columns - 1).cast(pa.int64())]
        for output in outputs:
            array = batch.column(output.column)
            if output.exact is not None:  # our own exact form, never _arrow's lossy cast
                array = _exact(array, output.exact)
            arrays.append(array)
        yield to_spark_batch(pa.RecordBatch.from_arrays(arrays, names=target.names), target)


class DuckLakeChangeSideSource(DataSource):
    """``format("ducklake_change_side")``: one side of ``read_changes``' join (internal).

    Takes the options of the ``ducklake`` format with both bounds as snapshot ids, plus
    ``change_side`` (``old`` or ``new``), and needs the schema ``read_changes`` builds.
    """

    @classmethod
    def name(cls) -> str:
        return SIDE_FORMAT

    def _parsed(self) -> tuple[SourceOptions, str]:
        values = {str(k).lower(): v for k, v in self.options.items()}
        side = str(values.pop(SIDE_OPTION, "")).strip().lower()
        if side not in SIDES:
            raise InvalidOptionError(
                f"{SIDE_FORMAT} is internal to read_changes: option {SIDE_OPTION!r} must be "
                f"'old' or 'new', got {side!r}"
            )
        options = SourceOptions.parse(values)
        if not options.changes or options.changes_end is None:
            raise InvalidOptionError(f"{SIDE_FORMAT} needs both change feed bounds")
        return options, side

    def schema(self) -> StructType:
        raise InvalidOptionError(
            f"{SIDE_FORMAT} is internal to read_changes, which gives its schema; use "
            "read_changes(spark, metadata, table, start, end)"
        )

    def reader(self, schema: StructType) -> DuckLakeChangeSideReader:
        options, side = self._parsed()
        return DuckLakeChangeSideReader(options, side, schema)
