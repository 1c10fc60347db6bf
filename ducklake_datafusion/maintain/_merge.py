"""``merge_adjacent_files``: a table's small files merged into larger ones, rows unchanged.

For each run of files ``_groups`` picks, the sources are read whole (they have no deletes)
in the catalog's order and written as one file (``write.DataFileWriter``) with the columns
the table had when the first source began, plus each row's snapshot id and, unless the
sources' row ids are contiguous and implicit, its row id: so time travel and the change
feed read at every snapshot exactly what they read before. All runs of all tables commit as
one snapshot (``catalog.MergeFiles``, DuckDB's ``merge_adjacent`` change), required to find
every source still live and never deleted from (``FilesUnchanged``); a failed commit deletes
the merged files.

One deliberate difference from DuckDB 1.5.5: a source holding its rows' own ids (an
update's new rows) makes the run non-contiguous. DuckDB tests contiguity on ``row_id_start``
alone and then drops that file's ids, so its merge renumbers updated rows
(``tests/maintain/test_merge_adjacent.py`` shows it); here every row keeps its id.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..catalog import (
    CommitOptions,
    CompactionCandidate,
    FilesUnchanged,
    MergeFiles,
    NewDataFile,
    TableRef,
    TableUnchanged,
    compaction_candidates,
    metadata,
)
from ..errors import InvalidOptionError
from ..scan import DataFileTask, Lake, LakeTable
from ..write import (
    DEFAULT_TARGET_FILE_SIZE,
    ROW_GROUP_ROWS,
    DataFileWriter,
    parse_file_size,
    require_writable,
)
from ._groups import merge_groups
from ._sources import (
    commit_written,
    layout_of,
    plan_tasks,
    scan_run,
    subdirectory_of,
    table_directory_of,
    tables_of,
    takes_compaction,
)

__all__ = [
    "MergeResult",
    "RunWrite",
    "WrittenRun",
    "merge_adjacent_files",
    "write_run",
    "write_runs_here",
]

_NO_LIMIT = 2**63 - 2  # DuckDB's default max_compacted_files


@dataclass(frozen=True, slots=True)
class MergeResult:
    """One merged file (a row of DuckDB's result): its table, how many files it
    replaced, and the snapshot that committed it."""

    schema_name: str
    table_name: str
    files_processed: int
    files_created: int
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class _Run:
    table: LakeTable
    sources: tuple[CompactionCandidate, ...]


def merge_adjacent_files(
    lake: Lake,
    table: str | None = None,
    *,
    schema: str | None = None,
    max_compacted_files: int | None = None,
    min_file_size: int | None = None,
    max_file_size: int | None = None,
    options: CommitOptions | None = None,
    write_runs: Callable[[Sequence[RunWrite], list[str]], list[WrittenRun]] | None = None,
) -> list[MergeResult]:
    """Merge the small files of ``table`` (every table when ``None``) as DuckDB's
    ``ducklake_merge_adjacent_files`` does; one :class:`MergeResult` per merged file
    (none: nothing to merge, and no snapshot).

    ``write_runs(works, written)`` writes the merged files, one per :class:`RunWrite`
    (each self-contained: a Spark executor writes one with :func:`write_run`), adding each
    file's URL to ``written`` once it exists (those are deleted when the commit fails);
    default: here, one after the other (:func:`write_runs_here`)."""
    require_writable(lake)
    limit = _check_options(max_compacted_files, min_file_size, max_file_size)
    runs: list[_Run] = []
    for target in tables_of(lake, table, schema):  # (the limit is each table's, as DuckDB's)
        runs.extend(_runs_of(target, limit, min_file_size, max_file_size))
    if not runs:
        return []

    def write(written: list[str]) -> tuple[list, list]:
        plans: dict = {}
        works = [_run_write(run, plans) for run in runs]
        results = (write_runs or write_runs_here)(works, written)
        actions = [_merge_action(run, result) for run, result in zip(runs, results, strict=True)]
        requirements = []
        for ref, sources in _sources_by_table(runs).items():
            requirements.append(TableUnchanged(ref))
            requirements.append(FilesUnchanged(ref, tuple((f, ()) for f in sources)))
        return actions, requirements

    snapshot, _ = commit_written(lake, runs[0].table.snapshot_id, write, options)
    return [
        MergeResult(
            r.table.entry.schema_name, r.table.entry.table_name, len(r.sources), 1, snapshot
        )
        for r in runs
    ]


def _check_options(max_compacted_files, min_file_size, max_file_size) -> int:
    if max_compacted_files is not None and int(max_compacted_files) <= 0:
        raise InvalidOptionError(
            f"max_compacted_files must be a positive number of merged files, got "
            f"{max_compacted_files!r}"
        )
    if max_file_size is not None and int(max_file_size) <= 0:
        raise InvalidOptionError(f"max_file_size must be a positive size, got {max_file_size!r}")
    if min_file_size is not None and int(min_file_size) < 0:
        raise InvalidOptionError(f"min_file_size must not be negative, got {min_file_size!r}")
    if (
        min_file_size is not None
        and max_file_size is not None
        and int(min_file_size) >= int(max_file_size)
    ):
        raise InvalidOptionError(
            f"min_file_size ({min_file_size}) must be below max_file_size ({max_file_size})"
        )
    return _NO_LIMIT if max_compacted_files is None else int(max_compacted_files)


def _runs_of(table: LakeTable, limit: int, min_file_size, max_file_size) -> list[_Run]:
    entry = table.entry
    with table.lake.backend.session() as session:
        if not takes_compaction(session, table, "merge"):
            return []
        target = parse_file_size(
            metadata.scoped_setting(session, "target_file_size", entry.table_id, entry.schema_id)
        )
        target = target or DEFAULT_TARGET_FILE_SIZE
        candidates = compaction_candidates(
            session,
            entry.table_id,
            min_file_size=min_file_size,
            max_file_size=min(int(max_file_size), target) if max_file_size else target,
        )
    return [_Run(table, tuple(run)) for run in merge_groups(candidates, target, limit)]


def _sources_by_table(runs: Sequence[_Run]) -> dict[TableRef, list[int]]:
    by_table: dict[TableRef, list[int]] = {}
    for run in runs:
        entry = run.table.entry
        ref = TableRef(entry.schema_name, entry.table_name, entry.table_id)
        by_table.setdefault(ref, []).extend(s.data_file_id for s in run.sources)
    return by_table


class _NotContiguous(Exception):
    """A source of a run taken for contiguous holds its rows' own ids."""


@dataclass(frozen=True)
class RunWrite:
    """One merged file to write, with all the writing needs and no catalog: the sources'
    read tasks and catalog facts in order, the columns of the table's layout when the first
    began, where the file goes, and whether the sources' row ids are contiguous (then the
    file holds no row ids; a source found holding its own makes it write them after all).
    Picklable: a Spark executor writes it (``maintain/_group_worker.py``)."""

    description: str
    directory: str
    subdirectory: str
    columns: tuple
    storage: object
    tasks: tuple[DataFileTask, ...]
    sources: tuple[CompactionCandidate, ...]
    contiguous: bool


@dataclass(frozen=True)
class WrittenRun:
    """A :class:`RunWrite` done: its file's catalog facts, and whether it holds no row ids
    (``contiguous``: the sources' ids were implicit and followed each other)."""

    file: NewDataFile
    contiguous: bool
    url: str


def _run_write(run: _Run, plans: dict) -> RunWrite:
    table, sources = run.table, run.sources
    what = f"table {table.name} of {table.lake.description}"
    tasks = plan_tasks(table, sources, what, plans)
    directory = table_directory_of(table)
    return RunWrite(
        description=what,
        directory=directory,
        subdirectory=subdirectory_of(tasks[sources[0].data_file_id], directory),
        columns=tuple(layout_of(table, sources[0]).columns),
        storage=table.lake.storage,
        tasks=tuple(tasks[s.data_file_id] for s in sources),
        sources=sources,
        contiguous=_contiguous(sources),
    )


def write_runs_here(works: Sequence[RunWrite], written: list[str]) -> list[WrittenRun]:
    """Write each run's file in this process, in order."""
    results = []
    for work in works:
        result = write_run(work, written)
        written.append(result.url)
        results.append(result)
    return results


def write_run(work: RunWrite, left: list[str]) -> WrittenRun:
    """Read the run's sources and write them as one file.

    A run whose ``row_id_start``s are contiguous is written without row ids, unless a
    source turns out to hold its rows' own ids (an update's): then it is written again with
    them (rare: DuckDB renumbers such rows, see the module docstring). A failure deletes
    what it wrote; the URLs of files it could not delete are added to ``left``."""
    try:
        return _write_file(work, work.contiguous, left)
    except _NotContiguous:
        return _write_file(work, False, left)


def _merge_action(run: _Run, result: WrittenRun) -> MergeFiles:
    entry, sources, first = run.table.entry, run.sources, run.sources[0]
    return MergeFiles(
        table=TableRef(entry.schema_name, entry.table_name, entry.table_id),
        sources=tuple(s.data_file_id for s in sources),
        file=dataclasses.replace(result.file, partition_values=first.partition_values),
        begin_snapshot=first.begin_snapshot,
        partial_max=max(s.last_snapshot for s in sources),
        row_id_start=first.row_id_start if result.contiguous else None,
        partition_id=first.partition_id,
    )


def _write_file(work: RunWrite, contiguous: bool, left: list[str]) -> WrittenRun:
    """The run's rows as one file, sources read ahead in order, handed to the writer a
    row group's worth at a time (one call per source costs more than its rows at
    thousands of small sources)."""
    writer = DataFileWriter(
        work.directory,
        work.columns,
        work.storage,
        target_file_size=_NO_LIMIT,  # one file per run, as DuckDB writes it
        description=work.description,
        with_row_ids=not contiguous,
        with_snapshot_ids=True,
        subdirectory=work.subdirectory,
    )
    # the scan's columns the file holds: the layout's, the row ids unless contiguous, the
    # snapshot ids
    width = len(work.columns) + 2
    kept = [i for i in range(width) if not (contiguous and i == width - 2)]
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    try:
        for part in scan_run(
            work.tasks, work.sources, work.columns, work.storage, work.description
        ):
            if contiguous and not part.implicit:
                raise _NotContiguous
            pending.append(part.rows.select(kept) if contiguous else part.rows)
            pending_rows += part.rows.num_rows
            if pending_rows >= ROW_GROUP_ROWS:
                writer.write(pa.Table.from_batches(pending, schema=writer.schema))
                pending, pending_rows = [], 0
        if pending:
            writer.write(pa.Table.from_batches(pending, schema=writer.schema))
        (merged,) = writer.close()
    except BaseException:
        left.extend(writer.discard())
        raise
    return WrittenRun(merged.data_file, contiguous, merged.url)


def _contiguous(sources: Sequence[CompactionCandidate]) -> bool:
    """Each source's ``row_id_start`` follows the one before's last row id."""
    for before, after in itertools.pairwise(sources):
        if before.row_id_start is None or after.row_id_start is None:
            return False
        if after.row_id_start != before.row_id_start + before.record_count:
            return False
    return sources[0].row_id_start is not None
