"""Several tables, one snapshot: ``with lake.transaction() as tx:``.

DuckLake commits a snapshot of any number of tables at once, which Delta and Iceberg
cannot. A :class:`LakeTransaction` reads every table at one snapshot (the latest when it
first needs one), stages each change as a ``write.TableChange`` (its files are written
as the change is staged), and commits all of them as one snapshot when the block ends,
or nothing: an exception in the block, a conflict or a failed commit deletes every file
written (``write/_cleanup``'s rule; an unknown outcome keeps and names them).

A staged change reads the tables as they were at the transaction's snapshot, never an
earlier change of the same transaction, so each table takes at most one row change
(``delete``, ``update``, ``merge``, ``upsert``), which no append to it in the same
transaction may precede; appends may repeat. A change that loses to another writer is a
``CommitConflictError``: the block's own code cannot be run again for it.
"""

from __future__ import annotations

from typing import Self

from ..catalog import CommitOptions
from ..errors import InvalidOptionError
from ..scan import SnapshotRef

__all__ = ["LakeTransaction", "TransactionTable"]


class LakeTransaction:
    """The changes of one snapshot over several tables of a lake (``lake.transaction()``).

    ``tx.table("main", "t")`` gives a table whose ``append``, ``delete``, ``update``,
    ``merge(...).execute()`` and ``upsert`` stage their change; the ``with`` block
    commits them (or :meth:`commit`), ``snapshot_id`` is then the snapshot.
    """

    def __init__(self, catalog, options: CommitOptions) -> None:
        self._catalog = catalog
        self._options = options
        self._base: int | None = None
        self._changes: dict[int, object] = {}  # table id -> TableChange
        self._row_changed: set[int] = set()
        self._open = True
        self.snapshot_id: int | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if not self._open:
            return
        if error is not None:
            self.rollback()
        else:
            self.commit()

    def table(self, schema: str, table: str | None = None) -> TransactionTable:
        """``schema.table`` (or ``table("schema.table")``) at the transaction's snapshot."""
        from ._table_names import split_table_name

        self._require_open()
        if table is None:
            schema, table = split_table_name(schema)
        lake = self._catalog.lake
        if self._base is None:
            self._base = lake.snapshot_id()
        resolved = lake.table_at(schema, table, SnapshotRef(snapshot_id=self._base))
        return TransactionTable(self, _provider_table(resolved, self._catalog))

    def _change_for(self, table, kind: str):
        """The staged change of ``table``; ``kind`` "append" or "row change"."""
        from ..write import TableChange

        self._require_open()
        table_id = table.entry.table_id
        if kind != "append" and table_id in self._changes:
            done = "changed" if table_id in self._row_changed else "appended to"
            raise InvalidOptionError(
                f"table {table.name} was already {done} in this transaction, and a row change "
                "reads the table as the transaction began: give each table at most one delete, "
                "update or merge per transaction, before its appends"
            )
        change = self._changes.get(table_id)
        if change is None:
            change = self._changes[table_id] = TableChange(table)
        if kind != "append":
            self._row_changed.add(table_id)
        return change

    def commit(self) -> int:
        """Commit every staged change as one snapshot; its id (the latest when nothing
        was staged)."""
        from ..write import commit_changes

        self._require_open()
        self._open = False
        if not self._changes:
            self.snapshot_id = self._catalog.lake.snapshot_id()
            return self.snapshot_id
        self.snapshot_id = commit_changes(list(self._changes.values()), self._options)
        return self.snapshot_id

    def rollback(self) -> None:
        """Drop every staged change and delete the files written for them."""
        self._open = False
        for change in self._changes.values():
            change.discard()
        self._changes = {}

    def _require_open(self) -> None:
        if not self._open:
            raise InvalidOptionError(
                "this transaction was committed or rolled back (a change of it failed, or "
                "the block ended); start another with lake.transaction()"
            )


def _provider_table(resolved, catalog):
    from ._table import DuckLakeTable

    return DuckLakeTable.of(resolved, catalog)


class TransactionTable:
    """A table of a :class:`LakeTransaction`: its changes are staged, not committed.
    Each returns a ``ChangeResult`` whose ``snapshot_id`` is ``None`` until the commit."""

    def __init__(self, transaction: LakeTransaction, table) -> None:
        self._transaction = transaction
        self.table = table  # the DuckLakeTable at the transaction's snapshot

    @property
    def name(self) -> str:
        return self.table.name

    def _staged(self, kind: str, stage):
        from ..write import ChangeResult

        change = self._transaction._change_for(self.table, kind)
        try:
            return ChangeResult(None, **stage(change))
        except BaseException:
            # a change that failed half-way cannot be committed: nothing of the
            # transaction is (its files are deleted), whatever the caller does next
            self._transaction.rollback()
            raise

    def append(self, data):
        """Stage ``data`` (anything ``DuckLakeTable.append`` takes) as new rows."""
        return self._staged("append", lambda change: {"inserted": change.add(data)})

    def delete(self, where=None, *, ctx=None):
        """Stage ``DuckLakeTable.delete``'s change."""
        from ._row_statements import stage_delete

        return self._staged("row change", lambda change: stage_delete(change, where, ctx))

    def update(self, set, where=None, *, ctx=None):
        """Stage ``DuckLakeTable.update``'s change."""
        from ._row_statements import stage_update

        return self._staged("row change", lambda change: stage_update(change, set, where, ctx))

    def merge(self, source, on, *, source_alias="source", target_alias="target", ctx=None):
        """``DuckLakeTable.merge``'s builder; its ``execute()`` stages the MERGE."""
        from ._merge import merge_builder

        builder = merge_builder(
            self.table,
            source,
            on,
            source_alias=source_alias,
            target_alias=target_alias,
            ctx=ctx,
            options=None,
        )
        return builder.staged_in(self)

    def upsert(self, data, on, *, ctx=None):
        """Stage ``DuckLakeTable.upsert``'s change."""
        from ._merge import upsert_builder

        return upsert_builder(self.table, data, on, ctx=ctx).staged_in(self).execute()

    def _stage_merge(self, builder):
        from ._merge import stage_merge

        return self._staged(
            "row change",
            lambda change: stage_merge(change, builder.statement, builder.ctx, builder.source_data),
        )
