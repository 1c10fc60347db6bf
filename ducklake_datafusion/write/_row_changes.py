"""Rows deleted and rows added, per table, as one snapshot: the core of DELETE, UPDATE and MERGE.

Every row-changing statement (Python's ``delete``/``update``/``merge``/``upsert``,
DataFusion SQL's ``DELETE``/``UPDATE``/``MERGE``) first finds the rows it changes as
*locations* (``rowid``, data file id, physical position: ``provider._change_target``), and
the rows it adds. A :class:`TableChange` turns them into what DuckDB writes for the same
statement (``_transaction``'s actions):

* a data file whose every row is now deleted is ended (``EndDataFiles``), with no delete file;
* another data file gets a delete file (``_delete_files``): its new positions alone when it
  had none, else a cumulative one with each position's snapshot, which replaces the old
  ones (``SetDeleteFile``);
* rows inlined in the catalog are ended there (``EndInlinedRows``);
* added rows are written as data files (``AddDataFiles``); an update's new rows carry their
  old row ids (``_ducklake_internal_row_id``), so the change feed pairs them.

Each touched data file is required unchanged since the base snapshot (``FilesUnchanged``:
the conflict rule). :func:`commit_changes` commits the changes of one or more tables as one
snapshot; whatever fails deletes every file written (``_cleanup``'s rule).
Deletes are always written as files, never inlined into the catalog (both are valid DuckLake;
DuckDB inlines small ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import (
    AddDataFiles,
    CommitOptions,
    EndDataFiles,
    EndInlinedRows,
    FilesUnchanged,
    NotCommittedBefore,
    RecordStreamBatch,
    SetDeleteFile,
    SnapshotMoved,
    TableRef,
    TableUnchanged,
    Transaction,
    commit,
    metadata,
)
from ..errors import InternalError, UnsupportedFeatureError
from ..read import FILE_ID, POSITION, ROW_ID, delete_file_positions, open_file
from ..scan import DataFileTask, LakeTable, table_directory
from ._cleanup import after_failed_commit
from ._delete_files import WrittenDeleteFile, write_delete_file
from ._files import DataFileWriter, WrittenFile, delete_files
from ._input import batches_of
from ._partitions import read_partition_spec
from ._plan import StreamBatch, _target_file_size, leaf_types, require_writable
from ._types import conform, file_schema

__all__ = ["ChangeResult", "TableChange", "commit_changes"]


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What a row-changing statement did: the snapshot it committed (the latest,
    unchanged, when it changed nothing; ``None`` for a change staged in a transaction)
    and its rows deleted, updated and inserted."""

    snapshot_id: int | None
    deleted: int = 0
    updated: int = 0
    inserted: int = 0


class TableChange:
    """One table's rows to delete (by location) and rows to add, against the table's
    snapshot (``table``, resolved at the latest snapshot when the statement began)."""

    def __init__(self, table: LakeTable) -> None:
        require_writable(table.lake)
        self.table = table
        self.ref = TableRef(table.entry.schema_name, table.entry.table_name, table.entry.table_id)
        self.description = f"table {table.name} of {table.lake.description}"
        # (the statement's target reads the same plan, pruning by every column's bounds:
        # ``ChangeTarget``)
        plan, files = table.scan_plan_and_files(stats="all")
        self.plan = plan
        self.files = files
        self.tasks = {t.data_file_id: t for t in plan.tasks if isinstance(t, DataFileTask)}
        self.entries = {e.data_file_id: e for e in files.files}
        with table.lake.backend.session() as session:
            settings = metadata.read_settings(session, table.lake.description)
            self.partitioning = read_partition_spec(
                session,
                table.entry.table_id,
                table.snapshot_id,
                table.columns,
                self.description,
            )
            self.target_file_size = _target_file_size(session, settings, table.entry.table_id)
        if settings.get("encrypted", "false").lower() == "true":
            raise UnsupportedFeatureError(
                f"{table.lake.description} is an encrypted lake; this package does not write "
                "encrypted files yet (nothing was changed): change its rows with DuckDB"
            )
        self.directory = table_directory(table.lake.data_path(settings), table.entry)
        self.positions: dict[int, np.ndarray] = {}  # data file id -> new deleted positions
        self.inlined_row_ids: list[int] = []
        self.added: list = []  # WrittenFile of the rows added
        self.requirements: list = []  # what the statement's plan needs beyond its files
        self.records: list = []  # what the snapshot records beside the change (a stream batch)
        self._plain: dict[int, WrittenDeleteFile] = {}  # first delete files, written once
        self._cumulative: dict[int, WrittenDeleteFile] = {}  # written for one snapshot id
        self._cumulative_for: int | None = None

    @property
    def deleted_count(self) -> int:
        return sum(len(p) for p in self.positions.values()) + len(self.inlined_row_ids)

    def delete(self, located: pa.Table) -> None:
        """Delete the rows at these locations (columns ``rowid``, ``__ducklake_file_id``,
        ``__ducklake_position``; a row named twice is deleted once)."""
        files = located.column(FILE_ID)
        inlined = pc.is_null(files)
        row_ids = located.column(ROW_ID).filter(inlined).to_numpy(zero_copy_only=False)
        self.inlined_row_ids = sorted(set(self.inlined_row_ids) | {int(r) for r in row_ids})
        in_files = located.filter(pc.invert(inlined))
        if in_files.num_rows == 0:
            return
        file_ids = in_files.column(FILE_ID).to_numpy(zero_copy_only=False).astype(np.int64)
        positions = in_files.column(POSITION).to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.lexsort((positions, file_ids))
        file_ids, positions = file_ids[order], positions[order]
        bounds = np.flatnonzero(np.diff(file_ids)) + 1
        for ids, group in zip(np.split(file_ids, bounds), np.split(positions, bounds)):
            file_id = int(ids[0])
            if file_id not in self.tasks:
                raise InternalError(
                    f"{self.description}: a row to change names data file {file_id}, which is "
                    f"not live at snapshot {self.table.snapshot_id}"
                )
            before = self.positions.get(file_id)
            if before is not None:  # (a transaction's second statement on the file)
                group = np.sort(np.concatenate([before, group]))
            self.positions[file_id] = _distinct(group)

    def once_per_batch(self, stream: StreamBatch) -> None:
        """Commit this change at most once for a streaming query's batch, and record the
        batch with it (a batch committed before makes the commit raise
        ``AlreadyCommitted``): a ``foreachBatch`` MERGE replayed after a crash."""
        self.requirements.append(
            NotCommittedBefore(stream.marker, self.ref, stream.query_id, stream.batch_id)
        )
        self.records.append(RecordStreamBatch(self.ref, stream.query_id, stream.batch_id))

    def add_written(self, files: Sequence[WrittenFile]) -> None:
        """Add data files of the table's rows written elsewhere (Spark's executors) below
        its directory: committed with this change, and deleted with its own files if the
        commit fails."""
        self.added += files

    def conformed(self, rows: pa.Table) -> pa.Table:
        """``rows`` cast to the table's columns as a write casts them (by name)."""
        return conform(rows, file_schema(self.table.columns), self.table.name)

    def add(self, rows, row_ids: pa.Array | None = None) -> int:
        """Write ``rows`` (anything ``append`` takes) as new data files of the table, in
        its partitions; with ``row_ids``, each row keeps that row id (an update's new
        version of a row). Returns the rows written."""
        writer = DataFileWriter(
            self.directory,
            self.table.columns,
            self.table.lake.storage,
            target_file_size=self.target_file_size,
            description=self.description,
            partitioning=self.partitioning,
            with_row_ids=row_ids is not None,
        )
        count = 0
        try:
            offset = 0
            for batch in batches_of(rows, self.description):
                table = conform(
                    pa.Table.from_batches([batch]), writer.schema_of_table, self.table.name
                )
                if row_ids is not None:
                    ids = row_ids.slice(offset, table.num_rows)
                    table = table.append_column(writer.schema.field(-1), ids.cast(pa.int64()))
                offset += table.num_rows
                writer.write(table)
                count += table.num_rows
            self.added += writer.close()
        except BaseException:
            writer.discard()
            raise
        return count

    def actions(self, snapshot_id: int) -> tuple[list, list, bool]:
        """The actions and requirements of this change if it commits as ``snapshot_id``
        (writing the delete files it needs for that id), and whether it depends on the id
        (a cumulative delete file records it)."""
        actions: list = []
        requirements: list = [TableUnchanged(self.ref), *self.requirements]
        ended: list[int] = []
        checked: list[tuple[int, tuple[int, ...]]] = []
        depends = False
        if self._cumulative_for not in (None, snapshot_id):
            self._drop_cumulative()
        wanted: list[tuple] = []  # (file_id, cache, positions, snapshots, replaced ids)
        for file_id, new in self.positions.items():
            task, entry = self.tasks[file_id], self.entries[file_id]
            old_files = [d for d in (entry.delete_file, *entry.extra_delete_files) if d is not None]
            checked.append((file_id, tuple(d.delete_file_id for d in old_files)))
            old_positions, old_snapshots = self._old_deletes(task, old_files)
            inlined = np.asarray(task.deletes.inlined_positions if task.deletes else (), np.int64)
            deleted = _distinct(np.sort(np.concatenate([old_positions, inlined])))
            new = new[~_found_in(new, deleted)]  # (each sorted and distinct)
            self.positions[file_id] = new
            gone = len(deleted) + len(new)
            if len(new) == 0:
                continue
            if gone >= task.record_count:
                ended.append(file_id)
                continue
            if old_files:  # a cumulative file: every position with its snapshot
                depends = True
                cache = self._cumulative
                positions = np.concatenate([old_positions, new])
                snapshots = np.concatenate(
                    [old_snapshots, np.full(len(new), snapshot_id, dtype=np.int64)]
                )
            else:  # the file's first delete file: this commit's positions alone
                cache, positions, snapshots = self._plain, new, None
            replaces = tuple(d.delete_file_id for d in old_files)
            wanted.append((file_id, cache, positions, snapshots, replaces))
        self._write_delete_files(wanted, snapshot_id)
        for file_id, cache, _, _, replaces in wanted:
            delete_file = cache[file_id].delete_file
            actions.append(SetDeleteFile(self.ref, file_id, delete_file, replaces))
        if ended:
            actions.append(EndDataFiles(self.ref, tuple(ended)))
        if self.inlined_row_ids:
            actions.append(EndInlinedRows(self.ref, tuple(self.inlined_row_ids)))
        if self.added:
            column_types = leaf_types(self.table.columns)
            partition_id = self.partitioning.partition_id if self.partitioning else None
            actions.append(
                AddDataFiles(
                    self.ref, tuple(f.data_file for f in self.added), column_types, partition_id
                )
            )
        if checked:
            requirements.append(FilesUnchanged(self.ref, tuple(checked)))
        if actions:  # (a change of nothing commits no snapshot, so records nothing)
            actions += self.records
        return actions, requirements, depends

    def _write_delete_files(self, wanted: list[tuple], snapshot_id: int) -> None:
        """Write the delete files ``wanted`` that are not written yet, several at once (a
        store's round trips and the Parquet encoding overlap), each kept in its cache
        (whence ``discard`` deletes it); a failed write raises after the others finished."""
        missing = [job for job in wanted if job[0] not in job[1]]

        def write(job) -> WrittenDeleteFile:
            file_id, _, positions, snapshots, _ = job
            return write_delete_file(
                self.directory,
                self.table.lake.storage,
                _file_path(self.tasks[file_id]),
                positions,
                snapshots,
                self.description,
            )

        def keep(job, written: WrittenDeleteFile) -> None:
            file_id, cache, _, snapshots, _ = job
            cache[file_id] = written
            if snapshots is not None:  # a cumulative file records this snapshot id
                self._cumulative_for = snapshot_id

        if len(missing) <= 1:
            for job in missing:
                keep(job, write(job))
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
            futures = [pool.submit(write, job) for job in missing]
        failure = None  # (the pool has joined: every write has finished)
        for job, future in zip(missing, futures):
            if future.exception() is None:
                keep(job, future.result())
            elif failure is None:
                failure = future.exception()
        if failure is not None:
            raise failure

    def _old_deletes(self, task: DataFileTask, old_files) -> tuple[np.ndarray, np.ndarray]:
        """The file's deleted positions in its delete files, with each one's snapshot."""
        if not old_files:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        sources = task.deletes.files if task.deletes else ()
        if len(sources) != len(old_files):
            raise InternalError(
                f"{self.description}: data file {task.file.url} has {len(old_files)} delete "
                f"files in the catalog and {len(sources)} in its scan task"
            )
        what = f"data file {task.file.url} of table {self.table.name}"
        positions, snapshots = [], []
        for source, entry in zip(sources, old_files):
            found, per_position = delete_file_positions(
                source,
                lambda ref: open_file(ref, self.table.lake.storage),
                what,
                task.record_count,
            )
            positions.append(np.asarray(found, np.int64))
            if per_position is None:
                per_position = np.full(len(found), entry.begin_snapshot, dtype=np.int64)
            snapshots.append(np.asarray(per_position, np.int64))
        all_positions = np.concatenate(positions)
        all_snapshots = np.concatenate(snapshots)
        # a position in two of them (a flush's second file) keeps its first snapshot
        order = np.lexsort((all_snapshots, all_positions))
        all_positions, all_snapshots = all_positions[order], all_snapshots[order]
        first = np.concatenate([[True], np.diff(all_positions) != 0]) if len(order) else order
        return all_positions[first], all_snapshots[first]

    def _drop_cumulative(self) -> None:
        delete_files([w.url for w in self._cumulative.values()], self.table.lake.storage)
        self._cumulative = {}
        self._cumulative_for = None

    def written_urls(self) -> list[str]:
        return [
            *(w.url for w in self._plain.values()),
            *(w.url for w in self._cumulative.values()),
            *(f.url for f in self.added),
        ]

    def discard(self) -> list[str]:
        """Delete every file this change wrote; the URLs that could not be deleted."""
        urls = self.written_urls()
        self._plain, self._cumulative, self.added = {}, {}, []
        return delete_files(urls, self.table.lake.storage)


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of the sorted ``values`` (``np.unique`` sorts, or hashes, again)."""
    if len(values) < 2:
        return values
    return values[np.concatenate([[True], values[1:] != values[:-1]])]


def _found_in(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``sorted_set`` (sorted and distinct), by binary search."""
    if len(sorted_set) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _file_path(task: DataFileTask) -> str:
    """The data file as a delete file's ``file_path`` names it (DuckDB: the resolved path,
    a local one without a scheme)."""
    url = task.file.url
    return url.removeprefix("file://") if url.startswith("file:///") else url


def commit_changes(changes: Sequence[TableChange], options: CommitOptions | None = None) -> int:
    """Commit the changes (of one or more tables of one lake, all read at the same
    snapshot) as one new snapshot; its id, or the latest when nothing changes."""
    lake = changes[0].table.lake
    base = changes[0].table.snapshot_id
    if any(c.table.snapshot_id != base for c in changes):
        raise InternalError("the tables of one transaction were read at different snapshots")
    predicted = base + 1  # the id if no one commits first (else SnapshotMoved says it)
    try:
        while True:
            actions, requirements, depends = [], [], False
            for change in changes:
                a, r, d = change.actions(predicted)
                actions += a
                requirements += r
                depends = depends or d
            if not actions:
                return _latest(lake)
            transaction = Transaction(
                base,
                tuple(actions),
                tuple(requirements),
                options or CommitOptions(),
                snapshot_id=predicted if depends else None,
            )
            try:
                return commit(lake.backend, transaction)
            except SnapshotMoved as moved:
                predicted = moved.snapshot_id  # the cumulative files are written again
    except BaseException as exc:
        written = [url for change in changes for url in change.written_urls()]

        def discard() -> list[str]:
            return [url for change in changes for url in change.discard()]

        after_failed_commit(exc, written, discard)
        raise


def _latest(lake) -> int:
    with lake.backend.session() as session:
        return metadata.latest_snapshot(session).snapshot_id
