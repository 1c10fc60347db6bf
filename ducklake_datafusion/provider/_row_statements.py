"""DELETE (and the row changes built on it) planned as DataFusion queries, committed by the core.

A statement's conditions are DataFusion SQL (or a ``pyarrow.compute`` expression), run in
the caller's ``SessionContext`` when given (their tables, functions and subqueries work),
over the target table with each row's location (``_change_target``). The rows found go to
``write.TableChange``, which writes what DuckDB writes for the same statement, and
``write.commit_changes`` commits them as one snapshot.

A commit that loses to another change of the same data files (``CommitConflictError``)
is planned again on the lake as it now is, up to ``REPLANS`` times: the statement's
conditions are evaluated anew, so no change is lost and no deleted row comes back.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import CommitOptions
from ..errors import CommitConflictError, InvalidOptionError, TableNotFoundError
from ._change_target import LOCATION_COLUMNS, ChangeTarget

__all__ = ["REPLANS", "delete_rows", "locate"]

REPLANS = 4


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def locate(table, where, ctx=None, *, alias: str | None = None) -> pa.Table:
    """The locations (``rowid``, data file, position) of the rows of ``table`` (at its
    snapshot) for which ``where`` is true: SQL text, a pyarrow expression, or ``None`` for
    every row."""
    target = ChangeTarget(table)
    if where is None:
        return target.scanner(columns=list(LOCATION_COLUMNS)).to_table()
    if isinstance(where, pc.Expression):
        return target.scanner(columns=list(LOCATION_COLUMNS), filter=where).to_table()
    if not isinstance(where, str):
        raise InvalidOptionError(
            f"where for {table.name} must be SQL text or a pyarrow.compute.Expression, got "
            f"{type(where).__name__}"
        )
    from datafusion import SessionContext

    session = ctx if ctx is not None else SessionContext()
    name = f"__ducklake_target_{uuid.uuid4().hex}"
    session.register_dataset(name, target)
    try:
        columns = ", ".join(_quoted(c) for c in LOCATION_COLUMNS)
        shown = _quoted(alias or table.entry.table_name)
        frame = session.sql(f"SELECT {columns} FROM {_quoted(name)} AS {shown} WHERE {where}")
        return frame.to_arrow_table()
    finally:
        session.deregister_table(name)


def current(table):
    """``table`` (a ``DuckLakeTable``) resolved again at the lake's latest snapshot; the
    table a caller resolved must still be the one there."""
    latest = type(table).of(
        table.lake.table(table.entry.schema_name, table.entry.table_name), table.catalog
    )
    if latest.entry.table_id != table.entry.table_id:
        raise CommitConflictError(
            f"{table.lake.description}: table {table.name} was replaced by another table of "
            f"the same name after snapshot {table.snapshot_id}; nothing was changed, resolve "
            "the table again"
        )
    return latest


def delete_rows(table, where, *, ctx=None, options: CommitOptions | None = None):
    """Delete the rows of ``table`` for which ``where`` holds, as one new snapshot."""
    from ..write import ChangeResult, TableChange

    def plan(latest):
        change = TableChange(latest)
        change.delete(locate(latest, where, ctx))
        return [change], lambda snapshot: ChangeResult(snapshot, deleted=change.deleted_count)

    return replanned(table, plan, options)


def replanned(table, plan, options: CommitOptions | None):
    """Plan a change on the latest snapshot (``plan(latest) -> (changes, result)``) and
    commit it; plan it again when it lost to another change of the same rows."""
    from ..write import commit_changes

    conflict: CommitConflictError | None = None
    for _ in range(REPLANS):
        try:
            latest = current(table)
        except TableNotFoundError:
            if conflict is None:
                raise
            raise conflict from None  # dropped meanwhile: the conflict says so
        changes, result = plan(latest)
        try:
            return result(commit_changes(changes, options))
        except CommitConflictError as exc:
            conflict = exc
    assert conflict is not None
    raise conflict
