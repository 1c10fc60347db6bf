"""The rows a range of snapshots inserted, for a stream: scans where snapshots only added
files, the change feed elsewhere.

A stream of inserts reads, per micro-batch, what the snapshots after its last offset
inserted. The change feed (``_changes``) answers that exactly for any snapshot by comparing
the table's states before and after it, but it reads two states per snapshot: a backlog of
1,000 one-file appends took 1,001 reads of a growing file list (45 s in
``bench/spark_stream.py``). Most snapshots of a stream's table only add files, and their
changes row says so (``inserted_into_table`` is all that names the table, and no inlined
row began there): the rows they inserted are the rows of the files they added, deletes of
the same snapshot applied.

Consecutive such snapshots form a *run* (snapshots that do not name the table may sit in
between). A run's files are read from one state, its last snapshot's, cut to the files
begun after the run started (``catalog.BeganCut``): no snapshot inside the run ends them
or deletes from them. Every other snapshot that names the table (deletes, updates, inlined
inserts, compaction, flushes, schema changes), has no changes row, or follows expired ids
ends a run, and the change feed compares it as it always does. So does a run whose rows
a file written later by compaction or a flush holds (``partial_max``): such a file began
before the run, and the run's own files may be gone.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..catalog import BeganCut, SnapshotRecord, list_snapshot_records, metadata, table_by_id
from ..scan import ChangePlan, DataFileTask, ScanPlan, build_scan_plan, require_table
from ._changes import neutral_lake, read_change_states

__all__ = ["InsertPlan", "plan_inserts"]

_APPEND = "inserted_into_table"


@dataclass(frozen=True)
class InsertPlan:
    """What a range of snapshots inserted, planned two ways.

    Attributes:
        changes: the change feed of the snapshots outside runs (their inserts, and the
            deletes and updates a stream of inserts must refuse or skip).
        appended: one plan per run, at its last snapshot, holding only the data files the
            run's snapshots added (every row of them, less that snapshot's deletes, was
            inserted by the run).
        appending: the snapshots of the runs.
    """

    changes: ChangePlan
    appended: tuple[ScanPlan, ...]
    appending: frozenset[int]


def plan_inserts(lake, schema: str, table: str, after: int, through: int) -> InsertPlan:
    """Plan the rows ``schema.table``'s snapshots after ``after`` through ``through``
    inserted (one catalog transaction). Errors as ``table_changes``."""
    lake = neutral_lake(lake)
    with lake.backend.session() as session:
        entry = require_table(
            session, lake.description, through, schema, table, context=", the end of a stream"
        )
        records = [r for r in list_snapshot_records(session) if after < r.snapshot_id <= through]
        inlined = metadata.inlined_insert_snapshots(session, entry.table_id, after, through)
        runs = [
            run
            for run in _runs(records, entry.table_id, after, inlined)
            if not metadata.holds_merged_rows(session, entry.table_id, run[0], run[1])
        ]
        appending = frozenset(s for run in runs for s in run[2])
        states = read_change_states(
            session,
            lake,
            schema,
            table,
            None,
            through,
            after=after,
            compare=lambda snapshot: snapshot not in appending,
        )
        appended = tuple(
            _run_plan(session, lake, entry.table_id, start, end, states) for start, end, _ in runs
        )
    return InsertPlan(states.plan(lake.storage), appended, appending)


def _runs(
    records: list[SnapshotRecord], table_id: int, after: int, inlined: set[int]
) -> list[tuple[int, int, tuple[int, ...]]]:
    """``(after, last, snapshots)`` of each run: its files began after ``after``, its last
    snapshot is ``last``."""
    runs = []
    start, current, previous = after, [], after
    for record in records:
        snapshot = record.snapshot_id
        gap = snapshot - previous > 1
        previous = snapshot
        kinds = (
            None
            if record.changes is None
            else {t.kind for t in record.changes if t.table_id() == table_id}
        )
        if not gap and kinds == {_APPEND} and snapshot not in inlined:
            current.append(snapshot)
        elif gap or kinds is None or kinds:  # names the table otherwise: a run ends
            if current:
                runs.append((start, current[-1], tuple(current)))
            start, current = snapshot, []
    if current:
        runs.append((start, current[-1], tuple(current)))
    return runs


def _run_plan(session, lake, table_id: int, start: int, end: int, states) -> ScanPlan:
    """The files of one run, at its last snapshot, through the stream's columns."""
    entry = table_by_id(session, end, table_id)
    files = metadata.read_table_files(session, entry, end, cut=BeganCut(start))
    plan = build_scan_plan(
        table=entry,
        catalog=lake.description,
        snapshot_id=end,
        column_entries=states.column_entries,
        columns=states.columns,
        files=files,
        data_path=states.data_path,
        storage=lake.storage,
        inlined_values_are_text=lake.backend.inlined_values_are_text,
    )
    began = {f.data_file_id for f in files.files if f.begin_snapshot > start}
    tasks = tuple(t for t in plan.tasks if isinstance(t, DataFileTask) and t.data_file_id in began)
    return dataclasses.replace(plan, tasks=tasks)
