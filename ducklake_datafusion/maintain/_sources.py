"""What every compaction shares: the tables it runs on, its sources' rows, where it writes.

A source is read whole, by field id, in the columns the table had when the run's first
source began (DuckDB writes a compacted file with that layout), with each row's id
(``row_id_start`` + position, or the file's own ``_ducklake_internal_row_id``) and
snapshot (the file's ``begin_snapshot``, or its own ``_ducklake_internal_snapshot_id``).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..catalog import CommitOptions, CompactionCandidate, Transaction, commit, metadata
from ..errors import InternalError, InvalidOptionError, UnsupportedFeatureError
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
from . import _whole_files

__all__ = [
    "RunBatch",
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
# a merge's sources read together by one thread (a request each; the per-file work
# dominates at thousands of small files), and the size up to which a file is read whole
CHUNK_BYTES = 4 << 20
CHUNK_FILES = 64
WHOLE_FILE_BYTES = 8 << 20
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
) -> Iterator[RunBatch]:
    """The run's rows, source by source in order (``tasks``: the sources' read tasks, in
    the same order), in ``columns`` then each row's id and snapshot id; the ids a file
    lacks (most hold none) are filled in from its ``row_id_start`` and ``begin_snapshot``.
    Columns are matched by name, which within one schema version is the field id's.

    Sources are read in chunks of consecutive small files, each chunk by one thread of
    :func:`read_in_order`, a small file in one request: at thousands of small sources the
    cost is per file. The Rust extension reads a chunk off the GIL where its store reaches
    the files (``_whole_files``: 10,000 sources in 0.25 s); pyarrow reads the rest, file by
    file (1.4 s for those 10,000, ~60% of the time Arrow's dataset scan took)."""
    schema = file_schema(columns).append(ROW_ID_FIELD).append(SNAPSHOT_ID_FIELD)
    pairs = list(zip(tasks, sources, strict=True))
    store = _whole_files.store_of(tasks, storage)
    if store is not None:  # (read by the Rust extension)
        read = functools.partial(_read_chunk_by_extension, store=store)
    else:
        read = functools.partial(_read_chunk, storage=storage)
    reads = [functools.partial(read, chunk, schema, what=what) for chunk in _chunks(pairs)]
    for parts in read_in_order(reads):
        yield from parts


@dataclass(frozen=True, slots=True)
class RunBatch:
    """Rows of one source of a run: the layout's columns, then each row's id and snapshot
    id; ``implicit``: the ids are the file's ``row_id_start`` + position (it holds none)."""

    rows: pa.RecordBatch
    implicit: bool


def _chunks(pairs: list) -> Iterator[list]:
    """Consecutive sources up to ``CHUNK_BYTES`` (or ``CHUNK_FILES``) at a time."""
    chunk, size = [], 0
    for pair in pairs:
        chunk.append(pair)
        size += pair[0].file.size or WHOLE_FILE_BYTES
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _read_chunk(chunk: list, schema: pa.Schema, *, storage, what: str) -> list[RunBatch]:
    parts = []
    for task, source in chunk:
        url = task.file.url
        try:
            with open_file(task.file, storage) as handle:
                size = task.file.size
                if size is not None and size <= WHOLE_FILE_BYTES:
                    handle = pa.BufferReader(handle.read_buffer())  # one request
                data = pq.ParquetFile(handle).read(use_threads=False)
        except Exception as exc:
            raise read_error(exc, f"data file {url} of {what}") from exc
        parts.extend(_run_batches(data, [data.num_rows], [(task, source)], schema, what))
    return parts


def _read_chunk_by_extension(chunk: list, schema: pa.Schema, *, store, what: str) -> list:
    """:func:`_read_chunk`, the files read by the Rust extension (``_whole_files``), which
    hands back consecutive files of the same columns as one table."""
    parts, first = [], 0
    for data, rows in _whole_files.read_whole([task for task, _ in chunk], store, what, READERS):
        files = chunk[first : first + len(rows)]
        first += len(rows)
        parts.extend(_run_batches(data, rows, files, schema, what))
    return parts


def _run_batches(
    data: pa.Table, rows: Sequence[int], files: Sequence, schema: pa.Schema, what: str
) -> list[RunBatch]:
    """Consecutive sources' rows as read (``rows`` of each of ``files``, its ``(task,
    source)``), each file's count checked against the catalog's, in the run's schema."""
    for count, (task, source) in zip(rows, files, strict=True):
        if count != source.record_count:
            raise InternalError(
                f"{what}: data file {task.file.url} holds {count} rows, the catalog says "
                f"{source.record_count}"
            )
    table = _in_schema(data, rows, [source for _, source in files], schema, what, files[0][0])
    implicit = ROW_ID_FIELD.name not in data.schema.names
    return [RunBatch(batch, implicit) for batch in table.to_batches()]


def _in_schema(
    data: pa.Table,
    rows: Sequence[int],
    sources: Sequence[CompactionCandidate],
    schema: pa.Schema,
    what: str,
    first: DataFileTask,
) -> pa.Table:
    """Consecutive sources' rows in the run's columns (cast where the files' type differs),
    their row and snapshot ids as the files hold them or as the catalog implies them."""
    names = data.schema.names
    layout = len(schema) - 2
    if names[:layout] == schema.names[:layout] and all(
        data.schema.field(i).type == schema.field(i).type for i in range(layout)
    ):
        arrays = data.columns[:layout]  # (the usual case: files of the layout as is)
    else:
        arrays = _layout_columns(data, schema, sources[0], what, first.file.url)
    counts = np.asarray(rows, dtype=np.int64)
    if ROW_ID_FIELD.name in names:
        arrays.append(data.column(ROW_ID_FIELD.name).cast(pa.int64()))
    else:  # each file's row_id_start + position
        starts = np.asarray([s.row_id_start or 0 for s in sources], dtype=np.int64)
        offsets = np.cumsum(counts) - counts
        arrays.append(pa.array(np.arange(counts.sum()) + np.repeat(starts - offsets, counts)))
    if SNAPSHOT_ID_FIELD.name in names:
        arrays.append(data.column(SNAPSHOT_ID_FIELD.name).cast(pa.int64()))
    else:
        snapshots = np.asarray([s.begin_snapshot for s in sources], dtype=np.int64)
        arrays.append(pa.array(np.repeat(snapshots, counts)))
    return pa.Table.from_arrays(arrays, schema=schema)


def _layout_columns(
    data: pa.Table, schema: pa.Schema, source: CompactionCandidate, what: str, url: str
) -> list:
    names = data.schema.names
    arrays = []
    for field in list(schema)[:-2]:
        if field.name not in names:
            raise UnsupportedFeatureError(
                f"{what}: data file {url} has no column {field.name!r} of the table's layout "
                f"at snapshot {source.begin_snapshot}; merge its files with DuckDB"
            )
        column = data.column(field.name)
        if column.type != field.type:
            column = conform(pa.table({field.name: column}), pa.schema([field]), what).column(0)
        arrays.append(column)
    return arrays
