"""A commit as data: the actions one new snapshot takes, and what must still hold for it.

Every writer of this package describes its commit as a :class:`Transaction`: the snapshot
its plan was read at, a tuple of **actions** (create a table, add data files, give a data
file a new delete file, end data files or inlined rows, end a table's or some partitions'
rows) and a tuple of **requirements** (the table is still the one planned against; its
rows did not change; these data files are still live with the delete files planned
against). ``_commit`` applies the actions in one catalog transaction, after checking the
requirements against what committed since the base snapshot (``_conflicts``), and again
after every lost race for a snapshot id: a retry sees the lake as it now is.

Actions and requirements name their table by :class:`TableRef`; a transaction may change
several tables (one snapshot for all of them, as DuckDB's multi-table transactions make).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._commit_request import CommitOptions, NewDataFile, NewTable
from ._ddl_actions import (
    AlterTable,
    CreateSchema,
    DropSchema,
    DropTable,
    RenameTable,
    SetComment,
    SetPartitioning,
)
from ._table_ref import TableRef

__all__ = [
    "Action",
    "AddDataFiles",
    "CreateTable",
    "EndDataFiles",
    "EndInlinedRows",
    "EndPartitions",
    "EndTableRows",
    "FilesUnchanged",
    "FlushInlined",
    "FlushedFile",
    "FlushedInlinedTable",
    "MergeFiles",
    "NewDeleteFile",
    "NotCommittedBefore",
    "RecordStreamBatch",
    "Requirement",
    "RewriteFiles",
    "RowsUnchanged",
    "SetDeleteFile",
    "SnapshotMoved",
    "TableRef",
    "TableUnchanged",
    "Transaction",
]


# -- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTable:
    """Create ``table`` (``ducklake_table``, its columns, schema version, partitioning)."""

    table: TableRef
    new_table: NewTable


@dataclass(frozen=True, slots=True)
class AddDataFiles:
    """Add data files (their rows get row ids from the table's ``next_row_id``, unless a
    file carries its rows' own ids: an update's new rows).

    ``column_types``: the DuckLake type of every leaf column id (to widen the table's
    statistics); ``partition_id``: the spec the files were split by (``None``:
    unpartitioned, or the spec the transaction's :class:`CreateTable` makes)."""

    table: TableRef
    files: tuple[NewDataFile, ...]
    column_types: Mapping[int, str]
    partition_id: int | None = None


@dataclass(frozen=True, slots=True)
class EndTableRows:
    """End every data file and inlined row of the table (an overwrite)."""

    table: TableRef


@dataclass(frozen=True, slots=True)
class EndPartitions:
    """End the data files of these partitions (a dynamic partition overwrite): each a
    tuple of the table's key values in the catalog's text, as ``partition_values``."""

    table: TableRef
    partition_id: int | None
    partitions: tuple[tuple[str | None, ...], ...]


@dataclass(frozen=True, slots=True)
class NewDeleteFile:
    """A positional delete file written for one data file: path relative to the table's
    directory; ``begin_snapshot``/``partial_max`` the oldest and newest snapshot of its
    positions when it carries each position's snapshot (a cumulative file), else
    ``None`` (all of them this commit's)."""

    path: str
    delete_count: int
    file_size_bytes: int
    footer_size: int
    begin_snapshot: int | None = None
    partial_max: int | None = None


@dataclass(frozen=True, slots=True)
class SetDeleteFile:
    """Give ``data_file_id`` the delete file ``delete_file``, replacing the ones it had
    (``replaces``: their ``delete_file_id``s, whose rows are removed and whose files are
    scheduled for deletion, as DuckDB replaces a delete file with a cumulative one)."""

    table: TableRef
    data_file_id: int
    delete_file: NewDeleteFile
    replaces: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndDataFiles:
    """End data files whose every row is deleted (``end_snapshot``; no delete file, as
    DuckDB ends them). Their delete files stay: a snapshot before this one reads them."""

    table: TableRef
    data_file_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EndInlinedRows:
    """End rows inlined in the catalog (``ducklake_inlined_data_<table>_<version>``) by
    row id."""

    table: TableRef
    row_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MergeFiles:
    """Replace data files by one file holding all their rows (DuckDB's
    ``merge_adjacent_files``): ``sources`` (live, never deleted from) lose their catalog
    rows and are scheduled for deletion; ``file`` carries each row's snapshot id, and its
    row ids unless ``row_id_start`` (the sources' ids were contiguous). It begins at
    ``begin_snapshot`` (the first source's) and holds rows up to ``partial_max``, so every
    snapshot reads it as it read the sources. A transaction that merges changes no rows."""

    table: TableRef
    sources: tuple[int, ...]
    file: NewDataFile
    begin_snapshot: int
    partial_max: int
    row_id_start: int | None
    partition_id: int | None


@dataclass(frozen=True, slots=True)
class RewriteFiles:
    """Rewrite data files without their deleted rows (DuckDB's ``rewrite_data_files``):
    ``sources`` and their live delete files (``delete_files``) end at this snapshot, and
    ``file`` (``None`` when no row is left) begins there with the live rows and their row
    ids. Earlier snapshots still read the sources. A transaction that rewrites changes no
    rows. ``column_types``: every leaf column's type (the table's statistics are computed
    anew when no deleted row is left in the table, as DuckDB does)."""

    table: TableRef
    sources: tuple[int, ...]
    delete_files: tuple[int, ...]
    file: NewDataFile | None
    partition_id: int | None
    column_types: Mapping[int, str]


@dataclass(frozen=True, slots=True)
class FlushedFile:
    """A data file holding rows flushed from an inlined-data table (each row with its row
    id and snapshot): it begins at the oldest row's snapshot (``begin_snapshot``), holds
    rows up to ``partial_max`` and its first id is ``row_id_start`` (the smallest), as
    DuckDB records it; ``delete_file`` holds the positions of its rows deleted before the
    flush (each with its deleting snapshot; ``partial_max`` NULL, as DuckDB's)."""

    file: NewDataFile
    begin_snapshot: int
    partial_max: int
    row_id_start: int
    partition_id: int | None
    delete_file: NewDeleteFile | None = None


@dataclass(frozen=True, slots=True)
class FlushedInlinedTable:
    """An inlined-data table whose rows of snapshots up to the flush's ``snapshot`` are
    in the flushed files: ``rows`` of them, ``deleted`` of those ended (what the commit
    requires to find there still, so a delete or flush meanwhile is a conflict)."""

    table_name: str
    rows: int
    deleted: int


@dataclass(frozen=True, slots=True)
class FlushInlined:
    """Flush a table's rows inlined in the catalog into files (DuckDB's
    ``ducklake_flush_inlined_data``): ``files`` hold every inlined row of snapshots up to
    ``snapshot`` (the one they were read at; deleted rows too, with their delete files),
    which leave their inlined tables (``inlined_tables``); ``file_deletes`` turn the
    positions deleted through the catalog (``ducklake_inlined_delete_<table>``, ``deletes``
    of them up to ``snapshot``) into delete files, each replacing the data file's live
    one. No row changes: every snapshot reads the same rows. ``column_types``: every
    leaf column's type (the table's statistics take the files in)."""

    table: TableRef
    snapshot: int
    files: tuple[FlushedFile, ...]
    inlined_tables: tuple[FlushedInlinedTable, ...]
    file_deletes: tuple[SetDeleteFile, ...]
    deletes: int
    column_types: Mapping[int, str]


@dataclass(frozen=True, slots=True)
class RecordStreamBatch:
    """Record that this snapshot commits batch ``batch_id`` of the streaming query
    ``query_id`` into ``table``: a ``ducklake_metadata`` row of the table's scope (key
    ``ducklake_datafusion_stream:<query id>``, value ``<batch>:<snapshot>``), which
    DuckDB lists among the table's options and otherwise leaves alone."""

    table: TableRef
    query_id: str
    batch_id: int


Action = (
    CreateTable
    | AddDataFiles
    | EndTableRows
    | EndPartitions
    | SetDeleteFile
    | EndDataFiles
    | EndInlinedRows
    | RecordStreamBatch
    | MergeFiles
    | RewriteFiles
    | FlushInlined
    | AlterTable
    | SetPartitioning
    | SetComment
    | RenameTable
    | DropTable
    | CreateSchema
    | DropSchema
)


# -- requirements -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableUnchanged:
    """The table is still there under its name and id, with the columns and partitioning
    it had at the base snapshot (no one dropped, renamed, replaced or altered it)."""

    table: TableRef


@dataclass(frozen=True, slots=True)
class RowsUnchanged:
    """No commit since the base snapshot changed the table's rows (an overwrite, which
    would lose them)."""

    table: TableRef


@dataclass(frozen=True, slots=True)
class NoRowsInserted:
    """No commit since the base snapshot inserted rows into the table: what a MERGE that
    inserts the source rows it found no match for (or acts on the target rows no source
    row matched) decided from the rows it read. A row appended meanwhile could be the
    match it did not see; the MERGE is planned again instead."""

    table: TableRef


@dataclass(frozen=True, slots=True)
class FilesUnchanged:
    """Each ``(data_file_id, delete_file_ids)`` is still live with exactly those delete
    files: no other commit deleted from, ended or compacted it since the base snapshot.
    What a delete or update planned its positions against."""

    table: TableRef
    files: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class NotCommittedBefore:
    """A streaming batch is committed at most once, checked inside the commit's own
    transaction: no commit recorded batch ``batch_id`` (or a later one) of query
    ``query_id`` on ``table`` (:class:`RecordStreamBatch`'s row: one read); for a query
    with no such row yet (its first batch, or batches committed before this package kept
    the row), no snapshot's ``commit_extra_info`` starts with ``marker``."""

    marker: str
    table: TableRef | None = None
    query_id: str | None = None
    batch_id: int | None = None


Requirement = TableUnchanged | RowsUnchanged | NoRowsInserted | FilesUnchanged | NotCommittedBefore


class SnapshotMoved(Exception):
    """The transaction's ``snapshot_id`` was taken (another commit came first): nothing
    was committed; ``snapshot_id`` is the id the next attempt would get."""

    def __init__(self, snapshot_id: int) -> None:
        super().__init__(snapshot_id)
        self.snapshot_id = snapshot_id


@dataclass(frozen=True, slots=True)
class Transaction:
    """One new snapshot: ``actions`` applied in order if every requirement holds.

    Attributes:
        base_snapshot: the snapshot the plan was read at (requirements compare with it).
        actions: what the snapshot changes.
        requirements: what must still hold at commit time.
        options: ``ducklake_snapshot_changes``' author, message and extra info.
        snapshot_id: the id the snapshot must get, when files were written for it (a
            cumulative delete file records its new positions' snapshot); another id is
            :class:`SnapshotMoved`, and the writer writes those files again for it.
    """

    base_snapshot: int
    actions: tuple[Action, ...]
    requirements: tuple[Requirement, ...] = ()
    options: CommitOptions = field(default_factory=CommitOptions)
    snapshot_id: int | None = None

    def tables(self) -> tuple[TableRef, ...]:
        """Every table the actions change, in first-named order (a schema's creation or
        drop names none)."""
        return tuple(dict.fromkeys(a.table for a in self.actions if hasattr(a, "table")))

    def changes_nothing(self) -> bool:
        """An append of no rows (or an overwrite of no partitions): nothing to commit."""
        for action in self.actions:
            if isinstance(action, AddDataFiles) and not action.files:
                continue
            if isinstance(action, EndPartitions) and not action.partitions:
                continue
            if isinstance(action, RecordStreamBatch):  # a record of nothing committed
                continue
            if isinstance(action, (EndDataFiles, EndInlinedRows)) and not (
                action.data_file_ids if isinstance(action, EndDataFiles) else action.row_ids
            ):
                continue
            return False
        return True
