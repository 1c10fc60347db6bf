"""The change feed: which rows of a table changed between two snapshots, and how.

Bounds, steps and the plan's data types are plain planning (``scan/_changes.py``); this
module reads what they name: delete files to narrow each step, and the rows to compare.

Output is DuckDB's ``ducklake_table_changes``: ``snapshot_id``, ``rowid``,
``change_type`` (``insert``, ``delete``, ``update_preimage``, ``update_postimage``), then
the table's columns as of the end snapshot.

Derivation: a *state difference keyed by rowid*. For every
existing snapshot ``s`` in the range whose changes row names the table, the table is read
at ``s`` and at its predecessor ``p``, both through the end snapshot's columns, and rowids
only in ``s`` are inserts, only in ``p`` deletes, in both with other values an update
pair. Unlike DuckDB's own derivation (which re-reads files and delete files by their
recorded snapshots) this only uses the ordinary read path, so compaction, flushes and
rewrites, which keep rowids and values, never show up as changes.

Efficiency: only snapshots whose ``ducklake_snapshot_changes`` mention a row change of
the table are compared, and of those only the data files that differ between ``p`` and
``s`` (added, ended, other deleted positions, or rows of later snapshots inside) are read;
inlined rows are in memory already. All metadata is read in one catalog transaction.

Predecessors: ``p`` of the first snapshot ``a`` is ``a - 1`` even when that id was expired:
the catalog rows that survive expiry still describe what was live then, which matches
DuckDB (changes recorded before ``a`` are out of range). Inside the range, expired ids
are folded into the next existing snapshot.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import (
    ColumnEntry,
    ColumnSpec,
    DataFileEntry,
    MetadataSession,
    arrow_schema,
    build_column_tree,
    list_snapshot_records,
    metadata,
    table_by_id,
)
from ..errors import DuckLakeError
from ..scan import (
    CHANGE_TYPES,
    ChangePlan,
    ChangeStep,
    DataFileTask,
    FileRef,
    Lake,
    ScanPlan,
    build_scan_plan,
    change_schema,
    change_steps,
    require_table,
    resolve_bound,
    snapshot_bounds,
)
from ._deletes import deleted_positions
from ._executor import execute_plan
from ._reader import ROW_ID, open_file

__all__ = [
    "ChangeStates",
    "differing_rows",
    "neutral_lake",
    "plan_changes",
    "read_change_states",
    "step_feed",
    "table_changes",
]

_RANK = {name: rank for rank, name in enumerate(CHANGE_TYPES)}


# -- states -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    """The table at one snapshot, planned through the end snapshot's columns."""

    snapshot: int
    plan: ScanPlan | None  # None: the table did not exist then
    files: dict[int, DataFileEntry]


def _read_state(
    session: MetadataSession,
    lake,
    table_id: int,
    snapshot: int,
    column_entries: tuple[ColumnEntry, ...],
    columns: tuple[ColumnSpec, ...],
    data_path: str,
) -> _State:
    entry = table_by_id(session, snapshot, table_id)
    if entry is None:
        return _State(snapshot, None, {})
    files = metadata.read_table_files(session, entry, snapshot)
    plan = build_scan_plan(
        table=entry,
        catalog=lake.description,
        snapshot_id=snapshot,
        column_entries=column_entries,
        columns=columns,
        files=files,
        data_path=data_path,
        storage=lake.storage,
        inlined_values_are_text=lake.backend.inlined_values_are_text,
    )
    return _State(snapshot, plan, {f.data_file_id: f for f in files.files})


class _DeleteCache:
    """Deleted positions per (data file, snapshot), each delete file fetched once."""

    def __init__(self, storage) -> None:
        self._storage = storage
        self._bytes: dict[str, bytes] = {}

    def _open(self, ref: FileRef):
        data = self._bytes.get(ref.url)
        if data is None:
            with open_file(ref, self._storage) as handle:
                data = self._bytes[ref.url] = handle.read()
        return pa.BufferReader(data)

    def positions(self, task: DataFileTask, snapshot: int, table: str) -> np.ndarray:
        what = f"data file {task.file.url} of table {table} (snapshot {snapshot})"
        return deleted_positions(task.deletes, snapshot, self._open, what, task.record_count)


def _file_tasks(state: _State) -> dict[int, DataFileTask]:
    if state.plan is None:
        return {}
    return {t.data_file_id: t for t in state.plan.tasks if isinstance(t, DataFileTask)}


def _touched(
    old: _State, new: _State, deletes: _DeleteCache
) -> tuple[set[int], dict[int, np.ndarray]]:
    """Data files whose visible rows may differ between the two states.

    Also returns, for touched files present in both states that only *lost* rows (no rows
    of later snapshots inside, every position deleted before still deleted), the positions
    deleted at ``new`` only: those rows are the file's whole difference, since a physical
    row keeps its values.
    """
    before, after = _file_tasks(old), _file_tasks(new)
    touched = set(before) ^ set(after)
    shrunk: dict[int, np.ndarray] = {}
    for file_id in set(before) & set(after):
        entry = new.files[file_id]
        if entry.partial_max is not None and entry.partial_max > old.snapshot:
            touched.add(file_id)  # holds rows of later snapshots (merge, flush)
            continue
        table = new.plan.table
        was = deletes.positions(before[file_id], old.snapshot, table)
        now = deletes.positions(after[file_id], new.snapshot, table)
        if not np.array_equal(was, now):
            touched.add(file_id)
            if np.isin(was, now, assume_unique=True).all():
                shrunk[file_id] = np.setdiff1d(now, was, assume_unique=True)
    return touched, shrunk


def _narrowed(state: _State, files: set[int] | None) -> ScanPlan | None:
    """The state's plan with only the data files in ``files`` (all: None) and inlined rows."""
    if state.plan is None:
        return None
    tasks = state.plan.tasks
    if files is not None:
        tasks = tuple(
            t for t in tasks if not isinstance(t, DataFileTask) or t.data_file_id in files
        )
    return dataclasses.replace(state.plan, tasks=tasks)


def _rows(plan: ScanPlan | None, schema: pa.Schema) -> pa.Table:
    """Visible rows (with ``rowid``) of a narrowed state plan."""
    if plan is None or not plan.tasks:
        return schema.empty_table()
    return execute_plan(plan, with_row_ids=True)


# -- comparing rows ---------------------------------------------------------------------------


def _py_same(left, right) -> bool:
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_py_same(a, b) for a, b in zip(left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_py_same(left[k], right[k]) for k in left)
    return left == right


def _same_values(left: pa.Array, right: pa.Array) -> np.ndarray:
    """Per row: equal values, with NULL = NULL and NaN = NaN (as DuckDB's IS NOT DISTINCT)."""
    if isinstance(left.type, pa.ExtensionType):
        left, right = left.storage, right.storage
    try:
        equal = pc.fill_null(pc.equal(left, right), False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return np.fromiter(
            (_py_same(a, b) for a, b in zip(left.to_pylist(), right.to_pylist())),
            dtype=bool,
            count=len(left),
        )
    same = pc.or_(equal, pc.and_(pc.is_null(left), pc.is_null(right)))
    if pa.types.is_floating(left.type):
        nan = pc.and_(pc.is_nan(left), pc.is_nan(right))
        same = pc.or_(same, pc.fill_null(nan, False))
    return same.to_numpy(zero_copy_only=False)


def _changed(old: pa.Table, new: pa.Table, width: int) -> np.ndarray:
    """Rows (aligned by rowid) that differ in any of the first ``width`` columns."""
    changed = np.zeros(old.num_rows, dtype=bool)
    for index in range(width):
        left = old.column(index).combine_chunks()
        right = new.column(index).combine_chunks()
        changed |= ~_same_values(left, right)
    return changed


def _tagged(rows: pa.Table, snapshot: int, change: str, schema: pa.Schema) -> pa.Table:
    n = rows.num_rows
    arrays = [
        pa.array(np.full(n, snapshot, dtype=np.int64)),
        rows.column(ROW_ID).cast(pa.int64()),
        pa.array([change] * n, pa.string()),
    ]
    arrays += [rows.column(index) for index in range(len(schema) - 3)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _diff(old: pa.Table, new: pa.Table, snapshot: int, schema: pa.Schema, where: str) -> list:
    """Tables of deletes, update pairs and inserts at ``snapshot`` (rows: columns + rowid)."""
    match = _match(old, new, snapshot, where)
    return [
        _tagged(old.filter(pc.invert(match.survived)), snapshot, "delete", schema),
        _tagged(match.before.filter(match.changed), snapshot, "update_preimage", schema),
        _tagged(match.after.filter(match.changed), snapshot, "update_postimage", schema),
        _tagged(new.filter(pc.invert(match.kept)), snapshot, "insert", schema),
    ]


@dataclass(frozen=True)
class _Match:
    """Two reads of one set of rows paired by rowid (see ``_match``)."""

    survived: pa.ChunkedArray  # per old row: its rowid is in the new read
    kept: pa.ChunkedArray  # per new row: its rowid is in the old read
    before: pa.Table  # the old rows of both reads, by rowid
    after: pa.Table  # the new rows of both reads, by rowid (aligned with ``before``)
    changed: pa.Array  # per pair: the values differ


def _match(old: pa.Table, new: pa.Table, snapshot: int, where: str) -> _Match:
    """Pair the rows of two reads (columns + ``rowid``) by rowid; rowids must be unique."""
    old_ids, new_ids = old.column(ROW_ID), new.column(ROW_ID)
    kept = pc.is_in(new_ids, value_set=old_ids.combine_chunks())
    survived = pc.is_in(old_ids, value_set=new_ids.combine_chunks())
    before = old.filter(survived).sort_by(ROW_ID)
    after = new.filter(kept).sort_by(ROW_ID)
    if before.num_rows != after.num_rows or not before.column(ROW_ID).equals(after.column(ROW_ID)):
        raise DuckLakeError(
            f"{where}: row ids are not unique at snapshot {snapshot} or its predecessor, "
            "so the change feed cannot be derived; please report this lake"
        )
    changed = pa.array(_changed(before, after, old.num_columns - 1))
    return _Match(survived, kept, before, after, changed)


def differing_rows(
    old: pa.Table, new: pa.Table, snapshot: int, where: str
) -> tuple[pa.Table, pa.Table]:
    """The rows of two reads of the same rows (columns + ``rowid``) that are not identical.

    Returns the rows of ``old`` whose rowid is missing from ``new`` or whose values differ
    there, and the same for ``new``. Lets a distributed engine compare the two states of
    one data file (or of the inlined rows) where they are, and ship only what differs.
    """
    match = _match(old, new, snapshot, where)
    return (
        pa.concat_tables(
            [old.filter(pc.invert(match.survived)), match.before.filter(match.changed)]
        ),
        pa.concat_tables([new.filter(pc.invert(match.kept)), match.after.filter(match.changed)]),
    )


def _ordered(table: pa.Table) -> pa.Table:
    keys = pa.table(
        {
            "s": table.column(0),
            "r": table.column(1),
            "c": pa.array([_RANK[c] for c in table.column(2).to_pylist()], pa.int8()),
        }
    )
    order = pc.sort_indices(
        keys, sort_keys=[("s", "ascending"), ("r", "ascending"), ("c", "ascending")]
    )
    return table.take(order)


# -- entry point ------------------------------------------------------------------------------


def neutral_lake(lake) -> Lake:
    """The ``scan.Lake`` of ``lake``: itself, or the one an engine's catalog holds.

    ``table_changes`` is public and takes a ``DuckLakeCatalog``; Spark passes the neutral
    handle. Both hold the same lake, so the feed reads the same snapshots.
    """
    return lake if isinstance(lake, Lake) else lake.lake


def plan_changes(
    lake,
    schema: str,
    table: str,
    start: object,
    end: object,
    *,
    full_states: bool = False,
    after: int | None = None,
) -> ChangePlan:
    """Plan the change feed of ``schema.table`` for snapshots ``start`` through ``end``.

    Reads the catalog (one transaction) and the delete files of the data files present in
    both states of a step; never a data file. Bounds, errors and arguments as
    :func:`table_changes`.

    ``after`` (a snapshot id, instead of ``start``): the snapshots after it, as a stream
    reads on from the last one it read: snapshots expired since then fold into the first
    existing one, compared with the state at ``after``.
    """
    lake = neutral_lake(lake)
    with lake.backend.session() as session:
        found = read_change_states(session, lake, schema, table, start, end, after=after)
    return found.plan(lake.storage, full_states=full_states)


@dataclass(frozen=True)
class ChangeStates:
    """The states a change feed compares, read in one catalog transaction: what
    :func:`plan_changes` narrows into its steps."""

    entry: object  # the table's TableEntry at ``last``
    description: str
    first: int
    last: int
    column_entries: tuple[ColumnEntry, ...]
    columns: tuple[ColumnSpec, ...]
    data_path: str
    pairs: tuple[tuple[int, int], ...]
    states: dict[int, _State]

    def plan(self, storage, *, full_states: bool = False) -> ChangePlan:
        """The feed's plan: each pair narrowed to the data files that differ (reads the
        delete files of the files present in both states)."""
        deletes = _DeleteCache(storage)
        steps = []
        for previous, snapshot in self.pairs:
            old, new = self.states[previous], self.states[snapshot]
            files, shrunk = (None, {}) if full_states else _touched(old, new, deletes)
            steps.append(
                ChangeStep(previous, snapshot, _narrowed(old, files), _narrowed(new, files), shrunk)
            )
        entry = self.entry
        return ChangePlan(
            table=f"{entry.schema_name}.{entry.table_name}",
            where=f"change feed of {entry.schema_name}.{entry.table_name} in {self.description}",
            first=self.first,
            last=self.last,
            columns=self.columns,
            steps=tuple(steps),
        )


def read_change_states(
    session: MetadataSession,
    lake,
    schema: str,
    table: str,
    start: object,
    end: object,
    *,
    after: int | None = None,
    compare: Callable[[int], bool] | None = None,
) -> ChangeStates:
    """The bounds, columns and compared states of a change feed (see :func:`plan_changes`),
    in ``session``. ``compare``: which snapshots' steps to compare (a predicate on the
    snapshot id; default all)."""
    description = lake.backend.description
    settings = metadata.read_settings(session, description)
    records = list_snapshot_records(session)

    def bounds() -> str:
        return snapshot_bounds(session)

    last = resolve_bound(records, end, lower=False, description=description, bounds=bounds)
    if after is None:
        first = resolve_bound(records, start, lower=True, description=description, bounds=bounds)
    else:
        first = next((r.snapshot_id for r in records if r.snapshot_id > after), last + 1)
    entry = require_table(
        session, description, last, schema, table, context=", the end of the change feed"
    )
    column_entries = metadata.read_columns(session, entry.table_id, last)
    columns = tuple(build_column_tree(column_entries))
    pairs = (
        change_steps(records, first, last, entry.table_id, previous=after) if first <= last else []
    )
    if compare is not None:
        pairs = [pair for pair in pairs if compare(pair[1])]
    data_path = lake.data_path(settings)
    states = {
        snapshot: _read_state(
            session, lake, entry.table_id, snapshot, column_entries, columns, data_path
        )
        for snapshot in sorted({s for pair in pairs for s in pair})
    }
    return ChangeStates(
        entry, description, first, last, column_entries, columns, data_path, tuple(pairs), states
    )


def table_changes(
    lake, schema: str, table: str, start: object, end: object, *, full_states: bool = False
) -> pa.Table:
    """The change feed of ``schema.table`` for snapshots ``start`` through ``end``.

    Args:
        lake: a :class:`~ducklake_datafusion.DuckLakeCatalog` or a ``scan.Lake``.
        start, end: inclusive bounds: snapshot ids, datetimes, or text of either.
        full_states: compare whole table states instead of only the files that differ
            (slower; used by tests to check the file selection).

    Raises:
        SnapshotNotFoundError: a bound names no existing snapshot.
        TableNotFoundError: the table does not exist at the end snapshot.
    """
    plan = plan_changes(lake, schema, table, start, end, full_states=full_states)
    if not plan.steps:
        return change_schema(plan.columns).empty_table()
    return _ordered(pa.concat_tables([step_feed(plan, step) for step in plan.steps]))


def step_feed(plan: ChangePlan, step: ChangeStep) -> pa.Table:
    """The feed rows of one step of ``plan`` (``table_changes``' schema, unordered)."""
    out_schema = change_schema(plan.columns)
    rows_schema = arrow_schema(plan.columns).append(pa.field(ROW_ID, pa.int64()))
    pieces = _diff(
        _rows(step.old, rows_schema),
        _rows(step.new, rows_schema),
        step.snapshot,
        out_schema,
        plan.where,
    )
    return pa.concat_tables(pieces)
