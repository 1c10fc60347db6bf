"""The commit protocol: a :class:`Transaction` becomes one new snapshot, atomically.

Every writer of this package (Python appends, deletes and updates, DataFusion's ``INSERT
INTO``, ``CREATE TABLE AS``, Spark's batch and streaming writes) ends here with a
``Transaction``: the snapshot its plan was read at, its actions and its requirements
(``_transaction``). :func:`commit` runs one transaction on the catalog database that
first checks the requirements against every commit since the base snapshot
(``_conflicts``), then adds, as DuckDB's writer adds them for the same change:

1. the ``ducklake_snapshot`` row (id = latest + 1; ``schema_version`` and
   ``next_catalog_id`` advanced by a new table, ``next_file_id`` by the data and delete
   files), inserted first: it is where concurrent commits collide (the primary key);
2. each action's rows, in order (``_commit_rows``): a new table's ``ducklake_table``,
   ``ducklake_column``, ``ducklake_schema_versions`` and partition rows; ended files and
   inlined rows; ``ducklake_delete_file`` rows (a replaced one removed and its file
   scheduled in ``ducklake_files_scheduled_for_deletion``); ``ducklake_data_file`` and
   ``ducklake_file_column_stats`` rows, ``ducklake_table_stats`` and the widened
   ``ducklake_table_column_stats``;
3. ``ducklake_snapshot_changes`` (``created_table:"s"."t"``, ``inserted_into_table:<id>``,
   ``deleted_from_table:<id>``, ``inline_flush:<id>``, ``merge_adjacent:<id>``,
   ``rewrite_delete:<id>``: DuckDB's spellings only, and the caller's author, message and
   extra info).

A commit that loses the race for the snapshot id starts over on the lake as it now is and
checks the requirements again; a broken one is a :class:`CommitConflictError` naming the
table and both snapshots. A failed transaction leaves the catalog as it was: the caller
deletes the files it wrote. A transaction whose ``COMMIT`` was sent but not answered may
have committed (``CommitStateUnknownError``): its files must stay.
"""

from __future__ import annotations

import datetime as _dt
import random
import time

from ..errors import (
    CommitConflictError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ._commit_request import TableCommit
from ._commit_rows import (
    add_file_rows,
    create_partitioning_rows,
    create_table_rows,
    end_live_rows,
    end_partition_rows,
    insert_row,
)
from ._compaction import merge_file_rows, rewrite_file_rows
from ._conflicts import AlreadyCommitted, check_requirements
from ._ddl_actions import CreateSchema, DropSchema
from ._ddl_commit import DDL_ACTIONS, NEW_CATALOG_IDS, plan_ddl, write_ddl
from ._delete_rows import add_delete_file_rows, end_data_files, end_inlined_rows
from ._flush_rows import flush_rows
from ._names import find_table, list_schemas
from ._settings import read_settings
from ._sql import live
from ._stream_batches import record_stream_batch
from ._transaction import (
    AddDataFiles,
    CreateTable,
    EndDataFiles,
    EndInlinedRows,
    EndPartitions,
    EndTableRows,
    FlushInlined,
    MergeFiles,
    RecordStreamBatch,
    RewriteFiles,
    RowsUnchanged,
    SetDeleteFile,
    SnapshotMoved,
    TableRef,
    TableUnchanged,
    Transaction,
)
from ._writers import SnapshotRace

__all__ = ["AlreadyCommitted", "commit", "transaction_of"]

MAX_ATTEMPTS = 12


def commit(backend, transaction: Transaction | TableCommit) -> int:
    """Commit ``transaction`` as one new snapshot and return its id.

    With nothing to change (an append of no rows), nothing is committed and the latest
    snapshot id is returned. A :class:`TableCommit` (one table's write, as a write plan
    describes it) is committed as :func:`transaction_of` it.

    Raises:
        CommitConflictError: a requirement broke since ``base_snapshot`` (the table
            dropped, replaced, altered; for an overwrite, any change to its rows; for a
            delete, another change to the same data file), or the race for a snapshot id
            was lost ``MAX_ATTEMPTS`` times.
        AlreadyCommitted: a ``NotCommittedBefore`` marker was found (its snapshot).
        TableExistsError: the table to create exists.
        CommitStateUnknownError: the catalog's ``COMMIT`` went unanswered.
        CatalogError and its subclasses: the catalog database failed; nothing committed.
    """
    if isinstance(transaction, TableCommit):
        transaction = transaction_of(transaction)
    for attempt in range(MAX_ATTEMPTS):
        try:
            with backend.write_session() as session:
                return _commit_once(session, transaction, backend.description)
        except SnapshotRace:
            # another commit took the id: wait a little (jittered, growing), start over
            time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    names = ", ".join(t.name for t in transaction.tables())
    raise CommitConflictError(
        f"{backend.description}: the commit to table {names} lost the race for a "
        f"snapshot id {MAX_ATTEMPTS} times to other writers; nothing was committed, write again"
    )


def transaction_of(request: TableCommit) -> Transaction:
    """One table's write (a write plan's request) as the actions and requirements it is:
    create the table, or require it unchanged; for an overwrite, require its rows
    unchanged and end them (all, or the replaced partitions'); add the files."""
    table = TableRef(request.schema_name, request.table_name, request.table_id)
    actions: list = []
    requirements: list = []
    if request.new_table is not None:
        actions.append(CreateTable(table, request.new_table))
    else:
        requirements.append(TableUnchanged(table))
    if request.overwrite:
        if request.new_table is None:
            requirements.append(RowsUnchanged(table))
        if request.replace_partitions is not None:
            partitions = tuple(request.replace_partitions)
            actions.append(EndPartitions(table, request.partition_id, partitions))
        else:
            actions.append(EndTableRows(table))
    actions.append(AddDataFiles(table, request.files, request.column_types, request.partition_id))
    return Transaction(request.base_snapshot, tuple(actions), tuple(requirements), request.options)


def quoted(name: str) -> str:
    """A name as ``changes_made`` quotes it (DuckDB's ``"..."``, quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


class _Changes:
    """``changes_made`` as it accumulates, in DuckDB's order: dropped schemas, tables and
    views, created schemas and tables, then per table ``inserted_into_table`` before
    ``deleted_from_table`` and ``altered_table``, and
    ``inlined_delete`` for rows ended in the catalog (DuckDB's token for those)."""

    def __init__(self) -> None:
        self.dropped_schemas: dict[int, None] = {}
        self.dropped_tables: dict[int, None] = {}
        self.dropped_views: dict[int, None] = {}
        self.created_schemas: list[str] = []
        self.created: list[str] = []
        self.altered: dict[int, None] = {}
        self.inserted: dict[int, None] = {}
        self.deleted: dict[int, None] = {}
        self.inlined_deleted: dict[int, None] = {}
        self.flushed: dict[int, None] = {}
        self.merged: dict[int, None] = {}
        self.rewritten: dict[int, None] = {}

    def text(self) -> str:
        tokens = [f"dropped_schema:{s}" for s in sorted(self.dropped_schemas)]
        tokens += [f"dropped_table:{t}" for t in sorted(self.dropped_tables)]
        tokens += [f"dropped_view:{v}" for v in sorted(self.dropped_views)]
        tokens += self.created_schemas + self.created
        tokens += [f"inserted_into_table:{t}" for t in self.inserted]
        tokens += [f"deleted_from_table:{t}" for t in self.deleted]
        tokens += [f"altered_table:{t}" for t in sorted(self.altered)]
        tokens += [f"inlined_delete:{t}" for t in self.inlined_deleted]
        tokens += [f"inline_flush:{t}" for t in sorted(self.flushed)]
        tokens += [f"merge_adjacent:{t}" for t in sorted(self.merged)]
        tokens += [f"rewrite_delete:{t}" for t in sorted(self.rewritten)]
        return ",".join(tokens)


def _commit_once(session, transaction: Transaction, description: str) -> int:
    settings = read_settings(session, description)
    if settings.get("encrypted", "false").lower() == "true":
        raise UnsupportedFeatureError(
            f"{description} is an encrypted lake; this package does not write encrypted "
            "files yet (nothing was committed): write to it with DuckDB"
        )
    (latest,) = session.rows(
        "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM "
        "ducklake_snapshot WHERE snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)"
    )
    latest_id, schema_version, next_catalog_id, next_file_id = (int(v) for v in latest)
    if transaction.changes_nothing():
        return latest_id
    _require_rows_or_compaction(transaction, description)
    table_ids = check_requirements(session, transaction, latest_id, description)
    new_id = latest_id + 1
    if transaction.snapshot_id is not None and new_id != transaction.snapshot_id:
        raise SnapshotMoved(new_id)
    changes = _Changes()
    created: dict[TableRef, tuple[int, int, int | None]] = {}  # table id, schema, partition
    for action in transaction.actions:
        if isinstance(action, CreateTable):
            schema_id = _schema_for_new_table(session, action.table, latest_id, description)
            table_id = next_catalog_id
            next_catalog_id += 1
            schema_version += 1
            partition_id = None
            if action.new_table.partitioned_by:
                partition_id = next_catalog_id  # specs take their ids from the same counter
                next_catalog_id += 1
            created[action.table] = (table_id, schema_id, partition_id)
            table_ids[action.table] = table_id
            changes.created.append(
                f"created_table:{quoted(action.table.schema_name)}."
                f"{quoted(action.table.table_name)}"
            )
        elif isinstance(action, (CreateSchema, DropSchema)):
            continue
        elif action.table not in table_ids:
            table_ids[action.table] = _resolve(session, action.table, latest_id, description)
    ddl = [a for a in transaction.actions if isinstance(a, DDL_ACTIONS)]
    planned = plan_ddl(session, ddl, table_ids, latest_id, description) if ddl else []
    if ddl and not planned and len(ddl) == len(transaction.actions):
        return latest_id  # IF [NOT] EXISTS left nothing to change: no snapshot, as DuckDB
    if planned and not created:
        schema_version += 1
    catalog_ids = {}
    for action, _ in planned:
        if isinstance(action, NEW_CATALOG_IDS):
            catalog_ids[action] = next_catalog_id
            next_catalog_id += 1
    # ids of the new data files first, then of the delete files (DuckDB's order)
    data_file_id = next_file_id
    next_file_id += sum(len(a.files) for a in transaction.actions if isinstance(a, AddDataFiles))
    next_file_id += sum(1 for a in transaction.actions if isinstance(a, MergeFiles))
    next_file_id += sum(
        1 for a in transaction.actions if isinstance(a, RewriteFiles) and a.file is not None
    )
    flushes = [a for a in transaction.actions if isinstance(a, FlushInlined)]
    next_file_id += sum(len(a.files) for a in flushes)
    delete_file_id = next_file_id
    next_file_id += sum(1 for a in transaction.actions if isinstance(a, SetDeleteFile))
    # a flush's delete files: those of deleted positions first, then its files' own
    next_file_id += sum(len(a.file_deletes) for a in flushes)
    attached_id = next_file_id
    next_file_id += sum(1 for a in flushes for f in a.files if f.delete_file is not None)
    # The race point first: a concurrent commit of the same id fails here (or waits here
    # for the other transaction, then fails), before anything else is written.
    insert_row(
        session,
        "ducklake_snapshot",
        {
            "snapshot_id": new_id,
            "snapshot_time": session.adapt(_dt.datetime.now(_dt.timezone.utc)),
            "schema_version": schema_version,
            "next_catalog_id": next_catalog_id,
            "next_file_id": next_file_id,
        },
        race_point=True,
    )
    for action in transaction.actions:
        if isinstance(action, DDL_ACTIONS):
            continue  # written below (write_ddl)
        table_id = table_ids[action.table]
        what = f"{description}: table {action.table.name}"
        if isinstance(action, CreateTable):
            _, schema_id, partition_id = created[action.table]
            create_table_rows(
                session,
                action.new_table,
                action.table,
                table_id,
                schema_id,
                new_id,
                schema_version,
            )
            if partition_id is not None:
                create_partitioning_rows(session, action.new_table, table_id, partition_id, new_id)
        elif isinstance(action, EndTableRows):
            end_live_rows(session, table_id, new_id)
            changes.deleted[table_id] = None
        elif isinstance(action, EndPartitions):
            partition_id = action.partition_id
            if action.table in created:
                partition_id = created[action.table][2]
            if end_partition_rows(
                session, table_id, new_id, partition_id, set(action.partitions), what
            ):
                changes.deleted[table_id] = None
        elif isinstance(action, EndDataFiles):
            end_data_files(session, table_id, new_id, action.data_file_ids, what)
            changes.deleted[table_id] = None
        elif isinstance(action, RecordStreamBatch):
            record_stream_batch(session, table_id, action.query_id, action.batch_id, new_id)
        elif isinstance(action, EndInlinedRows):
            end_inlined_rows(session, table_id, new_id, action.row_ids, what)
            changes.inlined_deleted[table_id] = None
        elif isinstance(action, SetDeleteFile):
            add_delete_file_rows(session, action, table_id, new_id, delete_file_id, what)
            delete_file_id += 1
            changes.deleted[table_id] = None
        elif isinstance(action, MergeFiles):
            merge_file_rows(session, action, table_id, data_file_id, what)
            data_file_id += 1
            changes.merged[table_id] = None
        elif isinstance(action, RewriteFiles):
            rewrite_file_rows(session, action, table_id, new_id, data_file_id, what)
            data_file_id += action.file is not None
            changes.rewritten[table_id] = None
        elif isinstance(action, FlushInlined):
            ids = (data_file_id, delete_file_id, attached_id)
            flush_rows(session, action, table_id, new_id, ids, what)
            data_file_id += len(action.files)
            delete_file_id += len(action.file_deletes)
            attached_id += sum(1 for f in action.files if f.delete_file is not None)
            if action.file_deletes:
                changes.deleted[table_id] = None
            if action.files:
                changes.flushed[table_id] = None
        elif isinstance(action, AddDataFiles):
            partition_id = action.partition_id
            if action.table in created:
                partition_id = created[action.table][2]
            add_file_rows(session, action, table_id, new_id, data_file_id, partition_id)
            data_file_id += len(action.files)
            if action.files:
                changes.inserted[table_id] = None
    ids = {"schema_version": schema_version, "catalog_ids": catalog_ids}
    write_ddl(session, planned, table_ids, new_id, ids, changes)
    insert_row(
        session,
        "ducklake_snapshot_changes",
        {
            "snapshot_id": new_id,
            "changes_made": changes.text(),
            "author": transaction.options.author,
            "commit_message": transaction.options.commit_message,
            "commit_extra_info": transaction.options.commit_extra_info,
        },
    )
    return new_id


def _require_rows_or_compaction(transaction: Transaction, description: str) -> None:
    """A transaction changes rows or compacts files, never both (DuckDB refuses the mix:
    a compaction's snapshot must read exactly as the one before it)."""
    merges = [
        a for a in transaction.actions if isinstance(a, (MergeFiles, RewriteFiles, FlushInlined))
    ]
    if merges and len(merges) != len(transaction.actions):
        raise UnsupportedFeatureError(
            f"{description}: a transaction either changes rows or compacts files, not both "
            "(as DuckDB's); commit the compaction on its own"
        )


def _resolve(session, table: TableRef, latest: int, description: str) -> int:
    """The id of a table an action names without a requirement on it."""
    entry = find_table(session, latest, table.schema_name, table.table_name)
    if entry is None or (table.table_id is not None and entry.table_id != table.table_id):
        raise CommitConflictError(
            f"{description}: table {table.name} is not the table this write planned against "
            f"at snapshot {latest}; nothing was committed, write again"
        )
    return entry.table_id


def _schema_for_new_table(session, table: TableRef, latest: int, description: str) -> int:
    schemas = {s.schema_name: s for s in list_schemas(session, latest)}
    schema = schemas.get(table.schema_name)
    if schema is None:
        raise TableNotFoundError(
            f"{description}: schema {table.schema_name!r} does not exist at snapshot "
            f"{latest}, so table {table.name} cannot be created there; create the schema "
            "in DuckDB first (CREATE SCHEMA)"
        )
    if find_table(session, latest, table.schema_name, table.table_name) is not None or (
        _view_exists(session, latest, schema.schema_id, table.table_name)
    ):
        raise TableExistsError(
            f"{description}: table {table.name} already exists at snapshot {latest}; "
            "append to it, or choose another name"
        )
    return schema.schema_id


def _view_exists(session, snapshot: int, schema_id: int, name: str) -> bool:
    rows = session.rows(
        f"SELECT count(*) FROM ducklake_view WHERE schema_id = ? AND view_name = ? AND {live()}",
        [schema_id, name, snapshot, snapshot],
    )
    return int(rows[0][0]) > 0
