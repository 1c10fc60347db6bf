"""One side of the distributed change feed: the rows a step's old or new state contributes.

``read_changes`` (``_change_feed.py``) joins two scans of this internal data source,
``format("ducklake_change_side")``, on ``(snapshot, rowid)``: the *old* side yields, for
every step ``(p, s)`` of the feed, rows of the table at ``p``, the *new* side rows at
``s``. Only candidate rows leave the executors, never rows both states share unchanged:

* a data file only in ``p`` (only in ``s``) contributes its visible rows to the old (new)
  side: inserts, deletes or one half of an update whose other half lives elsewhere;
* a data file in both that only lost rows (``ChangeStep.shrunk``) contributes the rows at
  its newly deleted positions to the old side only: a physical row keeps its values, so
  the rows still visible are unchanged; one read of the file serves every step of the
  range (the positions of different steps are disjoint), not one read per step;
* any other data file in both states (rows of later snapshots inside: merged or flushed
  files) is read at ``p`` and at ``s`` by the same task, which keeps the rows that are not
  identical in both (``read._changes.differing_rows``) for its side;
* inlined rows are compared the same way in the planning worker, which holds them
  anyway, and only the differing ones travel in the partitions.

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

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

from ..errors import DuckLakeError, InvalidOptionError
from ..read import execute_tasks, read_request
from ..read._changes import differing_rows, plan_changes
from ..read._reader import ROW_ID, read_data_file
from ..scan import DataFileTask, InlinedRowsTask, ScanPlan
from ..scan._changes import ChangePlan, ChangeStep
from ..types import ColumnSpec
from ._arrow import check_castable, to_spark_batch
from ._options import SourceOptions
from ._types import spark_arrow_field, spark_arrow_type

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
_INTERVAL_STRUCT = pa.struct(
    [("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())]
)


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
        return _INTERVAL_STRUCT
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
        return _interval_struct(array)
    return array.cast(exact)


def _interval_struct(array: pa.Array) -> pa.Array:
    """A month-day-nano interval array as ``struct<months, days, nanoseconds>`` (exact)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    values = np.frombuffer(
        array.buffers()[1],
        dtype=np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")]),
        count=array.offset + len(array),
    )[array.offset :]
    mask = array.is_null().to_numpy(zero_copy_only=False) if array.null_count else None
    parts = [pa.array(values[name], mask=mask) for name in ("months", "days", "nanoseconds")]
    nulls = pa.array(mask) if mask is not None else None
    return pa.StructArray.from_arrays(parts, fields=list(_INTERVAL_STRUCT), mask=nulls)


# -- units of work ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StateRows:
    """Every visible row of ``plan`` (one state, narrowed), tagged with ``snapshot``."""

    snapshot: int
    plan: ScanPlan

    @property
    def weight(self) -> int:
        return sum(task.weight for task in self.plan.tasks)


@dataclass(frozen=True)
class PickedRows:
    """Rows at given positions of the one data file of ``plan``, each tagged with a step.

    One unit per data file for the whole range: a physical row keeps its values, and the
    positions newly deleted at different steps are disjoint, so the file is read once
    (at ``plan``'s snapshot, the latest predecessor, where every picked row is visible)
    instead of once per step.

    Attributes:
        picks: per step, its feed ``snapshot_id`` and the positions deleted then (int32:
            4 bytes per changed row is all the driver ships).
    """

    plan: ScanPlan
    picks: tuple[tuple[int, np.ndarray], ...] = dataclasses.field(compare=False)

    @property
    def weight(self) -> int:
        return sum(task.weight for task in self.plan.tasks)

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """All picked positions ascending, and the step snapshot of each."""
        positions = np.concatenate([p for _, p in self.picks]).astype(np.int64)
        snapshots = np.concatenate([np.full(len(p), s, dtype=np.int64) for s, p in self.picks])
        order = np.argsort(positions, kind="stable")
        return positions[order], snapshots[order]


@dataclass(frozen=True)
class FileDiff:
    """One data file read in both states; the side's rows that are not identical in both."""

    snapshot: int
    old: ScanPlan
    new: ScanPlan
    side: str

    @property
    def weight(self) -> int:
        return 2 * sum(task.weight for task in self.old.tasks)


Unit = StateRows | PickedRows | FileDiff


def side_units(plan: ChangePlan, side: str) -> list[Unit]:
    """What the ``side`` scan reads for every step of ``plan`` (see the module notes)."""
    units: list[Unit] = []
    picks: dict[int, list[tuple[ScanPlan, int, np.ndarray]]] = {}
    for step in plan.steps:
        units += _step_units(step, side, plan.where)
        if side == "old":
            for fid, positions in step.shrunk.items():
                task = _data_files(step.old)[fid]
                picks.setdefault(fid, []).append((_only(step.old, task), step.snapshot, positions))
    return units + [_picked(found) for _, found in sorted(picks.items())]


def _picked(found: list[tuple[ScanPlan, int, np.ndarray]]) -> PickedRows:
    """One file's picks of every step as one unit, read at the latest predecessor."""
    plan = max(found, key=lambda f: f[0].snapshot_id)[0]
    return PickedRows(plan, tuple((s, p.astype(np.int32)) for _, s, p in found))


def _step_units(step: ChangeStep, side: str, where: str) -> list[Unit]:
    """A step's whole-file and compared-file units (its shrunk files: ``side_units``)."""
    old, new = _data_files(step.old), _data_files(step.new)
    mine = old if side == "old" else new
    other = new if side == "old" else old
    state = step.old if side == "old" else step.new
    units: list[Unit] = [
        StateRows(step.snapshot, _only(state, task))
        for fid, task in mine.items()
        if fid not in other
    ]
    for fid in sorted(set(old) & set(new) - set(step.shrunk)):
        units.append(
            FileDiff(step.snapshot, _only(step.old, old[fid]), _only(step.new, new[fid]), side)
        )
    inlined = _inlined_difference(step, side, where)
    if inlined is not None:
        units.append(StateRows(step.snapshot, inlined))
    return units


def _data_files(plan: ScanPlan | None) -> dict[int, DataFileTask]:
    if plan is None:
        return {}
    return {t.data_file_id: t for t in plan.tasks if isinstance(t, DataFileTask)}


def _only(plan: ScanPlan, *tasks) -> ScanPlan:
    return dataclasses.replace(plan, tasks=tuple(tasks))


def _inlined_rows(plan: ScanPlan | None) -> pa.Table | None:
    """The state's inlined rows (columns + rowid), None when it has none."""
    if plan is None:
        return None
    tasks = [t for t in plan.tasks if isinstance(t, InlinedRowsTask)]
    if not tasks:
        return None
    return _collect(_only(plan, *tasks))


def _inlined_difference(step: ChangeStep, side: str, where: str) -> ScanPlan | None:
    """The side's inlined rows that the other state does not hold identically, as a plan."""
    mine_plan = step.old if side == "old" else step.new
    mine = _inlined_rows(mine_plan)
    if mine is None:
        return None
    other = _inlined_rows(step.new if side == "old" else step.old)
    if other is not None:
        pair = (mine, other) if side == "old" else (other, mine)
        old_rows, new_rows = differing_rows(*pair, step.snapshot, where)
        mine = old_rows if side == "old" else new_rows
    if mine.num_rows == 0:
        return None
    return _only(mine_plan, InlinedRowsTask(mine))


def _collect(plan: ScanPlan) -> pa.Table:
    """Every visible row of ``plan`` with ``rowid``, in the plan's table schema."""
    schema = plan.table_schema.append(pa.field(ROW_ID, pa.int64()))
    request = read_request(plan, with_row_ids=True)
    batches = [
        b.cast(schema) if b.schema != schema else b
        for b in execute_tasks(plan, plan.tasks, request)
    ]
    return pa.Table.from_batches(batches, schema=schema)


def _unit_rows(unit: Unit, where: str) -> Iterator[tuple[pa.RecordBatch | pa.Table, object]]:
    """The rows (table columns + rowid) a unit contributes, with their step snapshot(s)."""
    if isinstance(unit, StateRows):
        request = read_request(unit.plan, with_row_ids=True)
        for batch in execute_tasks(unit.plan, unit.plan.tasks, request):
            yield batch, unit.snapshot
    elif isinstance(unit, PickedRows):
        positions, snapshots = unit.ordered()
        yield _picked_rows(unit.plan, positions, where), snapshots
    else:
        old, new = differing_rows(_collect(unit.old), _collect(unit.new), unit.snapshot, where)
        yield (old if unit.side == "old" else new), unit.snapshot


def _picked_rows(plan: ScanPlan, positions: np.ndarray, where: str) -> pa.Table:
    """The rows at ``positions`` (ascending), in that order (every other row as deleted)."""
    (task,) = plan.tasks
    others = np.setdiff1d(
        np.arange(task.record_count, dtype=np.int64), positions, assume_unique=True
    )
    request = read_request(plan, with_row_ids=True)
    schema = plan.table_schema.append(pa.field(ROW_ID, pa.int64()))
    batches = [
        b.cast(schema) if b.schema != schema else b
        for b in read_data_file(task, request, positions=others)
    ]
    rows = pa.Table.from_batches(batches, schema=schema)
    if rows.num_rows != len(positions):
        raise DuckLakeError(
            f"{where}: data file {task.file.url} yields {rows.num_rows} of its "
            f"{len(positions)} rows deleted in the range at snapshot {plan.snapshot_id}; "
            "please report this lake"
        )
    return rows


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


def _groups(units: Sequence[Unit], count: int) -> list[tuple[Unit, ...]]:
    """Greedy balance by weight, largest first (as ``ScanPlan.groups``)."""
    if not units:
        return []
    count = max(1, min(count, len(units)))
    buckets: list[list[Unit]] = [[] for _ in range(count)]
    loads = [0] * count
    for unit in sorted(units, key=lambda u: u.weight, reverse=True):
        target = loads.index(min(loads))
        buckets[target].append(unit)
        loads[target] += unit.weight
    return [tuple(b) for b in buckets if b]


@dataclass(frozen=True)
class _Output:
    """One output field: which table column it comes from, in which Arrow type."""

    column: int
    field: pa.Field
    exact: pa.DataType | None = None  # a comparison field: convert to this type first


class DuckLakeChangeSideReader(DataSourceReader):
    """Reads one side of a change feed (see the module notes); plain data when pickled.

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
        return [ChangeSidePartition(i, g) for i, g in enumerate(_groups(units, count))]

    def read(self, partition: ChangeSidePartition | None) -> Iterator[pa.RecordBatch]:
        """Yield the partition's rows in the side schema."""
        if not isinstance(partition, ChangeSidePartition):  # no partitions: None (4.1) or
            return  # a bare InputPartition (4.2+)
        outputs: list[_Output] | None = None
        for unit in partition.units:
            if outputs is None:
                outputs = self._outputs(_plan_of(unit).columns)
            for rows, snapshots in _unit_rows(unit, self.where):
                if rows.num_rows:
                    yield from _side_batches(rows, snapshots, outputs)


def _plan_of(unit: Unit) -> ScanPlan:
    return unit.old if isinstance(unit, FileDiff) else unit.plan


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
