"""What one side of the distributed change feed reads, and the rows it yields.

``read_changes`` joins two scans of the internal ``ducklake_change_side`` source
(``_side_source``) on ``(snapshot, rowid)``: the *old* side yields, for every step
``(p, s)`` of the feed, rows of the table at ``p``, the *new* side rows at ``s``. Only
candidate rows leave the executors, never rows both states share unchanged:

* a data file only in ``p`` (only in ``s``) contributes its visible rows to the old (new)
  side: inserts, deletes or one half of an update whose other half lives elsewhere
  (:class:`StateRows`);
* a data file in both that only lost rows (``ChangeStep.shrunk``) contributes the rows at
  its newly deleted positions to the old side only: a physical row keeps its values, so
  the rows still visible are unchanged; one read of the file serves every step of the
  range (the positions of different steps are disjoint), not one read per step
  (:class:`PickedRows`);
* any other data file in both states (rows of later snapshots inside: merged or flushed
  files) is read at ``p`` and at ``s`` by the same task, which keeps the rows that are not
  identical in both (``read._changes.differing_rows``) for its side (:class:`FileDiff`);
* inlined rows are compared the same way in the planning worker, which holds them
  anyway, and only the differing ones travel in the partitions.

The units are plain data: they travel to the executors inside Spark's input partitions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...errors import DuckLakeError
from ...read import ROW_ID, differing_rows, execute_tasks, read_data_file, read_request
from ...scan import ChangePlan, ChangeStep, DataFileTask, InlinedRowsTask, ScanPlan

__all__ = ["FileDiff", "PickedRows", "StateRows", "Unit", "plan_of", "side_units", "unit_rows"]


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
    """What the ``side`` scan reads for every step of ``plan`` (see the module docstring)."""
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


def unit_rows(unit: Unit, where: str) -> Iterator[tuple[pa.RecordBatch | pa.Table, object]]:
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


def plan_of(unit: Unit) -> ScanPlan:
    return unit.old if isinstance(unit, FileDiff) else unit.plan
