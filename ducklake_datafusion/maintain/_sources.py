"""What every compaction shares: the tables it runs on, its sources' rows, where it writes.

A source is read whole, by field id, in the columns the table had when the run's first
source began (DuckDB writes a compacted file with that layout), with each row's id
(``row_id_start`` + position, or the file's own ``_ducklake_internal_row_id``) and
snapshot (the file's ``begin_snapshot``, or its own ``_ducklake_internal_snapshot_id``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from ..catalog import CommitOptions, CompactionCandidate, Transaction, commit, metadata
from ..errors import DuckLakeError, InternalError, InvalidOptionError, UnsupportedFeatureError
from ..pathres import filesystem_for, parse_location
from ..read import deleted_positions_of, open_file, read_error
from ..scan import DataFileTask, Lake, LakeTable, SnapshotRef, table_directory
from ..write import (
    ROW_ID_FIELD,
    SNAPSHOT_ID_FIELD,
    after_failed_commit,
    conform,
    delete_files,
    file_schema,
)

__all__ = [
    "SourceRows",
    "commit_written",
    "layout_of",
    "plan_tasks",
    "read_in_order",
    "read_source",
    "scan_run",
    "subdirectory_of",
    "table_directory_of",
    "tables_of",
    "takes_compaction",
]

ROW_ID_FIELD_ID = int(ROW_ID_FIELD.metadata[b"PARQUET:field_id"])
SNAPSHOT_ID_FIELD_ID = int(SNAPSHOT_ID_FIELD.metadata[b"PARQUET:field_id"])
# sources read at once: their reads wait on storage (an object store answers many at a
# time) and decode without the GIL; twice as many may wait, read, for the writer
READERS = 8
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SourceRows:
    """A source's rows in the layout's columns, their row ids (``implicit``: the file's
    ``row_id_start`` + position) and snapshot ids."""

    rows: pa.Table
    row_ids: pa.ChunkedArray | pa.Array
    implicit: bool
    snapshots: pa.ChunkedArray | pa.Array


def plan_tasks(
    table: LakeTable, sources, what: str, plans: dict[int, dict[int, DataFileTask]]
) -> dict[int, DataFileTask]:
    """The read tasks of the table's plan at its snapshot, by data file id, checked to hold
    ``sources``; planned once per table of a call (``plans``, by the table object's id:
    every run of a table shares it)."""
    tasks = plans.get(id(table))
    if tasks is None:
        tasks = plans[id(table)] = {
            t.data_file_id: t
            for t in table.scan_plan_and_files(with_partitions=False)[0].tasks
            if isinstance(t, DataFileTask)
        }
    missing = [s.data_file_id for s in sources if s.data_file_id not in tasks]
    if missing:
        raise InternalError(f"{what}: data files {missing} to compact are not in its scan plan")
    if any(s.mapping_id is not None for s in sources):
        raise UnsupportedFeatureError(
            f"{what}: a file to compact was added without field ids (a name mapping); "
            "compacting such files is not supported yet: compact them with DuckDB"
        )
    return tasks


def takes_compaction(session, table: LakeTable, verb: str) -> bool:
    """Whether ``table`` is compacted: an encrypted lake is refused by name (its files
    would be written in the clear), a table whose ``auto_compact`` option is off is
    skipped, as DuckDB skips it."""
    settings = metadata.read_settings(session, table.lake.description)
    if settings.get("encrypted", "false").lower() == "true":
        raise UnsupportedFeatureError(
            f"{table.lake.description} is an encrypted lake; this package does not write "
            f"encrypted files yet: {verb} its files with DuckDB"
        )
    entry = table.entry
    auto = metadata.scoped_setting(session, "auto_compact", entry.table_id, entry.schema_id)
    return auto is None or auto.strip().lower() == "true"


def commit_written(
    lake: Lake,
    base: int,
    write: Callable[[list[str]], tuple[list, list]],
    options: CommitOptions | None,
) -> tuple[int, list]:
    """Write a compaction's files and commit them as one snapshot: ``write`` adds each
    file's URL to the list it is given as it writes it, and returns the transaction's
    actions and requirements. The snapshot and the actions; whatever fails deletes the
    files (``write``'s cleanup rule: not when the commit's outcome is unknown)."""
    written: list[str] = []
    try:
        actions, requirements = write(written)
        transaction = Transaction(
            base, tuple(actions), tuple(requirements), options or CommitOptions()
        )
        return commit(lake.backend, transaction), actions
    except BaseException as exc:
        after_failed_commit(exc, written, lambda: delete_files(written, lake.storage))
        raise


def layout_of(table: LakeTable, first: CompactionCandidate) -> LakeTable:
    """The table as it was when ``first`` began: the columns a compacted file holds."""
    entry = table.entry
    return table.lake.table_at(
        entry.schema_name, entry.table_name, SnapshotRef(first.begin_snapshot)
    )


def table_directory_of(table: LakeTable) -> str:
    lake = table.lake
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
        return table_directory(lake.data_path(settings), table.entry)


def tables_of(lake: Lake, table: str | None, schema: str | None) -> list[LakeTable]:
    """The tables to maintain, at the latest snapshot: one by name, or all of them."""
    if table is not None:
        return [lake.table(schema or "main", table)]
    if schema is not None:
        raise InvalidOptionError("schema= names the schema of table=; give the table too")
    with lake.backend.session() as session:
        metadata.read_settings(session, lake.description)
        snap = lake.resolve_snapshot(session)
        names = [
            (t.schema_name, t.table_name)
            for s in metadata.list_schemas(session, snap.snapshot_id)
            for t in metadata.list_tables(session, snap.snapshot_id, s.schema_name)
        ]
    return [lake.table(s, t) for s, t in names]


def read_source(
    task: DataFileTask,
    source: CompactionCandidate,
    layout: LakeTable,
    what: str,
    *,
    without_deleted: LakeTable | None = None,
) -> SourceRows:
    """A source's rows (module docstring); with ``without_deleted``, only those live at
    that table's snapshot (its delete files and inlined deletions applied)."""
    url = task.file.url
    try:
        with open_file(task.file, layout.lake.storage) as handle:
            data = pq.ParquetFile(handle).read()
    except Exception as exc:
        raise read_error(exc, f"data file {url} of {what}") from exc
    by_id = {}
    for index, field in enumerate(data.schema):
        field_id = (field.metadata or {}).get(b"PARQUET:field_id")
        if field_id is not None:
            by_id[int(field_id)] = index
    arrays, names = [], []
    for column in layout.columns:
        index = by_id.get(column.column_id)
        if index is None:
            raise UnsupportedFeatureError(
                f"{what}: data file {url} has no column {column.name!r} (field id "
                f"{column.column_id}) of the table's layout at snapshot "
                f"{source.begin_snapshot}; merge its files with DuckDB"
            )
        arrays.append(data.column(index))
        names.append(column.name)
    rows = conform(pa.Table.from_arrays(arrays, names=names), file_schema(layout.columns), what)
    count = data.num_rows
    if ROW_ID_FIELD_ID in by_id:
        row_ids, implicit = data.column(by_id[ROW_ID_FIELD_ID]).cast(pa.int64()), False
    else:
        start = source.row_id_start or 0
        row_ids, implicit = pa.array(np.arange(start, start + count, dtype=np.int64)), True
    if SNAPSHOT_ID_FIELD_ID in by_id:
        snapshots = data.column(by_id[SNAPSHOT_ID_FIELD_ID]).cast(pa.int64())
    else:
        snapshots = pa.array(np.full(count, source.begin_snapshot, dtype=np.int64))
    if without_deleted is not None:
        table = without_deleted
        deleted = deleted_positions_of(task, table.name, table.snapshot_id, table.lake.storage)
        keep = np.ones(count, dtype=bool)
        keep[np.asarray(deleted, dtype=np.int64)] = False
        mask = pa.array(keep)
        rows, row_ids, snapshots = rows.filter(mask), row_ids.filter(mask), snapshots.filter(mask)
    return SourceRows(rows, row_ids, implicit, snapshots)


def subdirectory_of(task: DataFileTask, directory: str) -> str:
    """The directory below the table's that the first source is in (its partition's)."""
    url = task.file.url
    if not url.startswith(directory):
        return ""
    relative = url[len(directory) :]
    return relative.rsplit("/", 1)[0] + "/" if "/" in relative else ""


def read_in_order(reads: Sequence[Callable[[], T]]) -> Iterator[T]:
    """Each read's result, in order, with up to ``2 * READERS`` of them running ahead on
    a thread pool (a compaction holds a window of its sources in memory, not all)."""
    pool = ThreadPoolExecutor(READERS, thread_name_prefix="ducklake-compact")
    try:
        pending = deque(pool.submit(read) for read in reads[: 2 * READERS])
        following = iter(reads[2 * READERS :])
        while pending:
            result = pending.popleft().result()
            read = next(following, None)
            if read is not None:
                pending.append(pool.submit(read))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def scan_run(
    tasks: Sequence[DataFileTask],
    sources: Sequence[CompactionCandidate],
    columns: Sequence,
    storage,
    what: str,
) -> Iterator[SourceRows]:
    """The run's rows, source by source in order (``tasks``: the sources' read tasks, in
    the same order), in ``columns``, read as one Parquet dataset (Arrow's multi-threaded
    scan, reading ahead): each batch as :class:`SourceRows` of the source it came from. Columns are matched by name, which within one schema version is the
    field id's; a column a file lacks (its own row or snapshot ids) reads as null there."""
    schema = file_schema(columns).append(ROW_ID_FIELD).append(SNAPSHOT_ID_FIELD)
    locations = [parse_location(task.file.url) for task in tasks]
    filesystem = filesystem_for(locations[0], storage)
    paths = [location.path for location in locations]
    try:
        dataset = pads.dataset(paths, schema=schema, format="parquet", filesystem=filesystem)
        batches = dataset.scanner(use_threads=True).scan_batches()
        index, position = 0, 0
        for tagged in batches:
            while tagged.fragment.path != paths[index]:
                if position != sources[index].record_count:
                    raise InternalError(f"{what}: data file {paths[index]} was read in part")
                index, position = index + 1, 0
            batch, source = tagged.record_batch, sources[index]
            yield _source_batch(batch, source, position)
            position += batch.num_rows
    except DuckLakeError:
        raise
    except Exception as exc:
        raise read_error(exc, f"a data file of {what} ({paths[0]} ...)") from exc


def _source_batch(batch: pa.RecordBatch, source: CompactionCandidate, position: int) -> SourceRows:
    count = batch.num_rows
    names = batch.schema.names
    rows = pa.Table.from_batches([batch.select(names[:-2])])
    own_ids = batch.column(len(names) - 2)
    if own_ids.null_count == count:
        start = (source.row_id_start or 0) + position
        row_ids, implicit = pa.array(np.arange(start, start + count, dtype=np.int64)), True
    else:
        row_ids, implicit = own_ids, False
    snapshots = batch.column(len(names) - 1)
    if snapshots.null_count == count:
        snapshots = pa.array(np.full(count, source.begin_snapshot, dtype=np.int64))
    return SourceRows(rows, row_ids, implicit, snapshots)
