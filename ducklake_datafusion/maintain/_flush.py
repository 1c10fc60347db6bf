"""``flush_inlined_data``: rows kept in the catalog written out as files, as DuckDB 1.5.5.

DuckLake keeps small inserts and deletes in the catalog database itself (data inlining:
``ducklake_inlined_data_<table>_<schema version>`` and ``ducklake_inlined_delete_<table>``).
A flush writes them as DuckDB's ``ducklake_flush_inlined_data`` writes them, every table in
one snapshot:

* each inlined-data table's rows that began at or before the snapshot the flush read
  (deleted rows and an update's old versions too), ordered by row id then snapshot, go to
  one Parquet file (one per partition of a partitioned table, its spec and columns those
  of the table's schema version), each row with its row id and snapshot
  (``_ducklake_internal_row_id``, ``_ducklake_internal_snapshot_id``): the file begins at
  its oldest row's snapshot, holds rows up to its newest (``partial_max``) and starts at
  its smallest row id, so every earlier snapshot and the change feed read it as they read
  the inlined rows; its rows deleted before the flush are in a delete file of its own,
  each position with its deleting snapshot;
* the positions deleted through the catalog become, per data file, a delete file merged
  with the file's live one (which it replaces), each position with its snapshot;
* the inlined rows and positions leave the catalog (``catalog.FlushInlined``;
  ``deleted_from_table`` then ``inline_flush`` in ``changes_made``), and inlined-data
  tables left empty behind a newer schema version's are dropped.

A table whose ``auto_compact`` option is off is skipped. Nothing to flush commits nothing.
The commit requires what it flushed to be still there as it was read (a delete, update or
flush meanwhile is a ``CommitConflictError``; an append meanwhile is not, and both land);
a failed commit deletes the files it wrote.

Not yet: a table sorted with ``SET SORTED BY`` (DuckDB orders its flushed rows by the sort
keys): refused by name.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import (
    INLINED_SYSTEM_COLUMNS,
    CommitOptions,
    FilesUnchanged,
    FlushedFile,
    FlushedInlinedTable,
    FlushInlined,
    SetDeleteFile,
    TableRef,
    TableUnchanged,
    build_column_tree,
    drop_emptied_inlined_tables,
    metadata,
)
from ..errors import CatalogError, TableNotFoundError, UnsupportedFeatureError
from ..pathres import join_path
from ..read import delete_file_positions, open_file
from ..scan import (
    DeleteFile,
    FileRef,
    Lake,
    LakeTable,
    SnapshotRef,
    conform_inlined_rows,
    refusal,
    table_directory,
)
from ..write import (
    ROW_ID_FIELD,
    SNAPSHOT_ID_FIELD,
    DataFileWriter,
    PartitionSpec,
    conform,
    file_schema,
    leaf_types,
    read_partition_spec,
    require_writable,
    split_partitions,
    write_delete_file,
)
from ._sources import commit_written, takes_compaction

__all__ = ["FlushResult", "flush_inlined_data"]

_DEFAULT_OPTIONS = CommitOptions()  # (no author, message or extra info)
_NO_LIMIT = 2**62  # one file per inlined table (and partition), as DuckDB writes them
_END = "__ducklake_end_snapshot"  # the rows' end snapshots, beside the written columns


@dataclass(frozen=True, slots=True)
class FlushResult:
    """A table whose inlined rows were flushed (a row of DuckDB's result): how many rows
    went to files, deleted rows and an update's old versions included."""

    schema_name: str
    table_name: str
    rows_flushed: int


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one table flushes, read at its snapshot."""

    table: LakeTable
    directory: str
    sources: tuple[metadata.InlinedRows, ...]
    specs: dict[int, PartitionSpec | None]  # by schema version
    deletions: metadata.InlinedDeletions

    @property
    def rows(self) -> int:
        return sum(s.rows.num_rows for s in self.sources)

    @property
    def ref(self) -> TableRef:
        entry = self.table.entry
        return TableRef(entry.schema_name, entry.table_name, entry.table_id)


def flush_inlined_data(
    lake: Lake,
    table: str | None = None,
    *,
    schema: str | None = None,
    options: CommitOptions = _DEFAULT_OPTIONS,
) -> list[FlushResult]:
    """Flush the inlined rows and deletions of ``table`` (in ``schema``, default
    ``main``), of every table of ``schema``, or of every table (both ``None``), as
    DuckDB's ``ducklake_flush_inlined_data``, in one new snapshot; one
    :class:`FlushResult` per table with rows flushed (none, and no snapshot, when there is
    nothing to flush; a table with only deletions flushed commits but is not listed)."""
    require_writable(lake)
    plans = [p for p in map(_plan_of, _tables_of(lake, table, schema)) if p is not None]
    if plans:
        base = plans[0].table.snapshot_id

        def write(written: list[str]) -> tuple[list, list]:
            actions, requirements = [], []
            for plan in plans:
                action = _write_table(plan, written)
                actions.append(action)
                requirements.append(TableUnchanged(plan.ref))
                live = {d.data_file_id for d in plan.deletions.files if d.live}
                checked = tuple(
                    (c.data_file_id, c.replaces)
                    for c in action.file_deletes
                    if c.data_file_id in live
                )
                if checked:
                    requirements.append(FilesUnchanged(plan.ref, checked))
            return actions, requirements

        commit_written(lake, base, write, options)
    _drop_emptied_tables(lake)
    return [
        FlushResult(p.table.entry.schema_name, p.table.entry.table_name, p.rows)
        for p in plans
        if p.rows
    ]


def _tables_of(lake: Lake, table: str | None, schema: str | None) -> list[LakeTable]:
    """The tables to flush at the latest snapshot, in table id order: one by name, every
    table of ``schema``, or every table."""
    if table is not None:
        return [lake.table(schema or "main", table)]
    with lake.backend.session() as session:
        metadata.read_settings(session, lake.description)
        snapshot = lake.resolve_snapshot(session).snapshot_id
        schemas = [
            s.schema_name
            for s in metadata.list_schemas(session, snapshot)
            if schema is None or s.schema_name == schema
        ]
        if schema is not None and not schemas:
            raise TableNotFoundError(
                f"{lake.description} has no schema {schema!r} at snapshot {snapshot}"
            )
        names = [
            (t.table_id, s, t.table_name)
            for s in schemas
            for t in metadata.list_tables(session, snapshot, s)
        ]
    at = SnapshotRef(snapshot)
    return [lake.table_at(s, t, at) for _, s, t in sorted(names)]


def _plan_of(table: LakeTable) -> _Plan | None:
    """What ``table`` has to flush at its snapshot (``None``: nothing, or the table is
    not compacted)."""
    lake, entry, snapshot = table.lake, table.entry, table.snapshot_id
    what = f"{lake.description}: table {table.name}"
    with lake.backend.session() as session:
        if not takes_compaction(session, table, "flush"):
            return None
        settings = metadata.read_settings(session, lake.description)
        sources = tuple(
            s
            for s in metadata.inlined_rows_to_flush(session, entry.table_id, snapshot)
            if s.rows.num_rows
        )
        deletions = metadata.inlined_deletions_to_flush(session, entry.table_id, snapshot)
        if not sources and not deletions.rows:
            return None
        if sources and metadata.has_sort_keys(session, entry.table_id, snapshot):
            raise UnsupportedFeatureError(
                f"{what} is sorted (ALTER TABLE ... SET SORTED BY), and DuckDB writes its "
                "flushed rows in the sort order, which this package does not yet; nothing "
                "was flushed: flush it with DuckDB (CALL ducklake_flush_inlined_data)"
            )
        specs = {
            s.schema_version: read_partition_spec(
                session, entry.table_id, s.layout_snapshot, build_column_tree(s.layout), what
            )
            for s in sources
        }
        directory = table_directory(lake.data_path(settings), entry)
    return _Plan(table, directory, sources, specs, deletions)


def _write_table(plan: _Plan, written: list[str]) -> FlushInlined:
    """Write one table's files (their URLs added to ``written`` as they are written); the
    action that commits them."""
    files: list[FlushedFile] = []
    flushed = []
    for source in plan.sources:
        ends = source.rows.column(INLINED_SYSTEM_COLUMNS.end_snapshot)
        count = source.rows.num_rows
        flushed.append(FlushedInlinedTable(source.table_name, count, count - ends.null_count))
        files += _write_source(plan, source, written)
    file_deletes = tuple(_write_deletions(plan, d, written) for d in plan.deletions.files)
    column_types: dict[int, str] = {}
    for source in plan.sources:  # (the newest layout's type of a column last)
        column_types.update(leaf_types(build_column_tree(source.layout)))
    return FlushInlined(
        table=plan.ref,
        snapshot=plan.table.snapshot_id,
        files=tuple(files),
        inlined_tables=tuple(flushed),
        file_deletes=file_deletes,
        deletes=plan.deletions.rows,
        column_types=column_types,
    )


def _write_source(
    plan: _Plan, source: metadata.InlinedRows, written: list[str]
) -> list[FlushedFile]:
    """One inlined-data table's rows as files (one per partition) with their delete files."""
    table = plan.table
    what = f"table {table.name} of {table.lake.description}"
    columns = build_column_tree(source.layout)
    raw = source.rows
    rows = conform_inlined_rows(
        raw,
        source.layout,
        columns,
        values_are_text=table.lake.backend.inlined_values_are_text,
    )
    names = [c.name for c in columns]
    why = refusal(rows, names)
    if why is not None:
        raise UnsupportedFeatureError(
            f"{what}: its inlined rows cannot be written to a file ({why}); nothing was "
            "flushed: flush it with DuckDB (CALL ducklake_flush_inlined_data)"
        )
    rows = conform(rows.select(names), file_schema(columns), table.name)
    system = INLINED_SYSTEM_COLUMNS
    full = (
        rows.append_column(ROW_ID_FIELD, raw.column(system.row_id).cast(pa.int64()))
        .append_column(SNAPSHOT_ID_FIELD, raw.column(system.begin_snapshot).cast(pa.int64()))
        .append_column(_END, raw.column(system.end_snapshot).cast(pa.int64()))
    )
    spec = plan.specs[source.schema_version]
    if spec is None:
        parts = [((), "", full)]
    else:
        parts = [(p.values, p.directory, p.rows) for p in split_partitions(full, spec)]
    files = []
    for values, subdirectory, part in parts:
        writer = DataFileWriter(
            plan.directory,
            columns,
            table.lake.storage,
            target_file_size=_NO_LIMIT,
            description=what,
            with_row_ids=True,
            with_snapshot_ids=True,
            subdirectory=subdirectory,
        )
        try:
            writer.write(pa.Table.from_arrays(part.columns[:-1], schema=writer.schema))
            (new,) = writer.close()
        except BaseException:
            written.extend(writer.discard())
            raise
        written.append(new.url)
        files.append(_flushed_file(plan, new, values, part, spec, written, what))
    return files


def _flushed_file(plan, new, values, part: pa.Table, spec, written, what) -> FlushedFile:
    """A written file's catalog facts, and its delete file (its rows ended before)."""
    snapshots = part.column(SNAPSHOT_ID_FIELD.name)
    ends = part.column(_END)
    delete = None
    if ends.null_count < part.num_rows:
        ended = pc.is_valid(ends)
        positions = np.flatnonzero(ended.to_numpy(zero_copy_only=False))
        deleting = ends.filter(ended).to_numpy().astype(np.int64)
        deleted = write_delete_file(
            plan.directory,
            plan.table.lake.storage,
            _file_path(new.url),
            positions,
            deleting,
            what,
        )
        written.append(deleted.url)
        # (DuckDB records no partial_max for a flushed file's own delete file)
        delete = dataclasses.replace(deleted.delete_file, partial_max=None)
    return FlushedFile(
        file=dataclasses.replace(new.data_file, partition_values=tuple(values)),
        begin_snapshot=pc.min(snapshots).as_py(),
        partial_max=pc.max(snapshots).as_py(),
        row_id_start=pc.min(part.column(ROW_ID_FIELD.name)).as_py(),
        partition_id=spec.partition_id if spec is not None else None,
        delete_file=delete,
    )


def _write_deletions(
    plan: _Plan, deletions: metadata.DeletedPositions, written: list[str]
) -> SetDeleteFile:
    """One data file's positions deleted through the catalog, merged with its live delete
    files' (each position keeps its snapshot), as the delete file that replaces them."""
    table = plan.table
    storage = table.lake.storage
    url = join_path(plan.directory, deletions.path, deletions.path_is_relative)
    what = f"data file {url} of table {table.name}"
    positions = [np.asarray(deletions.positions, np.int64)]
    snapshots = [np.asarray(deletions.snapshots, np.int64)]
    for old in deletions.delete_files:
        if old.encrypted:
            raise UnsupportedFeatureError(
                f"{what} has an encrypted delete file; this package does not write encrypted "
                "files yet: flush it with DuckDB"
            )
        ref = DeleteFile(
            FileRef(
                join_path(plan.directory, old.path, old.path_is_relative),
                old.file_size_bytes,
                old.footer_size,
            ),
            old.file_format,
            old.delete_count,
        )
        found, per_position = delete_file_positions(
            ref, lambda r: open_file(r, storage), what, deletions.record_count
        )
        positions.append(np.asarray(found, np.int64))
        if per_position is None:  # (a plain delete file: its positions are its begin's)
            per_position = np.full(len(found), old.begin_snapshot, dtype=np.int64)
        snapshots.append(np.asarray(per_position, np.int64))
    all_positions, all_snapshots = np.concatenate(positions), np.concatenate(snapshots)
    order = np.lexsort((all_snapshots, all_positions))  # a position twice: its first snapshot
    all_positions, all_snapshots = all_positions[order], all_snapshots[order]
    first = np.concatenate([[True], np.diff(all_positions) != 0])
    deleted = write_delete_file(
        plan.directory,
        storage,
        _file_path(url),
        all_positions[first],
        all_snapshots[first],
        f"table {table.name} of {table.lake.description}",
    )
    written.append(deleted.url)
    return SetDeleteFile(
        plan.ref,
        deletions.data_file_id,
        deleted.delete_file,
        tuple(old.delete_file_id for old in deletions.delete_files),
    )


def _file_path(url: str) -> str:
    """A data file as a delete file's ``file_path`` names it (DuckDB: the resolved path,
    a local one without a scheme)."""
    return url.removeprefix("file://") if url.startswith("file:///") else url


def _drop_emptied_tables(lake: Lake) -> None:
    """Drop the inlined-data tables left empty behind a newer schema version's, as DuckDB
    does after a flush (whether or not it flushed anything). The flush has committed by
    now: a failure here only leaves empty tables behind (the next flush drops them)."""
    try:
        with lake.backend.session() as session:
            if not drop_emptied_inlined_tables(session, dry_run=True):
                return
        with lake.backend.write_session() as session:
            drop_emptied_inlined_tables(session)
    except CatalogError as exc:
        warnings.warn(
            f"{lake.description}: the inlined-data tables left empty by the flush could not "
            f"be dropped ({exc}); the next flush drops them",
            stacklevel=3,
        )
