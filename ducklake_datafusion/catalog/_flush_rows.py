"""The rows of ``flush_inlined_data``, as DuckDB 1.5 writes them (``DuckLakeFlushData``,
``FlushInlinedFileDeletions``, ``DropEmptySupersededInlinedTables``).

One :class:`FlushInlined` per table: each flushed file's ``ducklake_data_file`` row begins
at its oldest row's snapshot, with ``partial_max`` its newest and ``row_id_start`` its
smallest row id (the file carries each row's id and snapshot), with its column statistics
and partition values; its delete file (the flushed rows deleted before the flush) begins at
the oldest deleting snapshot, ``partial_max`` NULL. Positions deleted through the catalog
become a delete file per data file that replaces the file's live one (its row removed, its
file scheduled for deletion: ``_delete_rows``). The flushed rows leave their inlined tables
(``DELETE``: the tables stay), and the table's ``file_size_bytes`` grows by the data files'
sizes (its row counts stay; the columns' statistics rows take the files in, which widens
nothing the inlined rows had not widened; a column without a row gets none, as in DuckDB).

Before it writes, each step checks that what it flushes is still there as it was read:
another flush, or a delete or update of a flushed row, committed meanwhile is a
``CommitConflictError`` (the files are deleted, nothing is lost or doubled).

After the commit, :func:`drop_emptied_inlined_tables` drops every inlined-data table that
is empty and superseded by a newer schema version's (any table's, as DuckDB does).
"""

from __future__ import annotations

from ..errors import CommitConflictError
from ._bounds import widen
from ._commit_request import FileColumnStats
from ._commit_rows import (
    columns_of,
    held_column_stats,
    insert_data_file,
    is_inlined_table_name,
)
from ._delete_rows import add_delete_file_rows, insert_delete_file
from ._sql import as_bool
from ._transaction import FlushInlined

__all__ = ["drop_emptied_inlined_tables", "flush_rows"]


def flush_rows(
    session,
    action: FlushInlined,
    table_id: int,
    snapshot: int,
    ids: tuple[int, int, int],
    what: str,
) -> None:
    """One table's flush (module docstring). ``ids``: the first id of its data files, of
    the delete files of its deleted positions, and of its data files' delete files
    (DuckDB numbers all data files first, then those two kinds in turn)."""
    data_file_id, delete_file_id, attached_id = ids
    _require_unchanged(session, action, table_id, what)
    for index, flushed in enumerate(action.files):
        new = flushed.file
        insert_data_file(
            session,
            new,
            data_file_id + index,
            table_id,
            begin_snapshot=flushed.begin_snapshot,
            row_id_start=flushed.row_id_start,
            partition_id=flushed.partition_id,
            partial_max=flushed.partial_max,
        )
    for index, change in enumerate(action.file_deletes):
        add_delete_file_rows(session, change, table_id, snapshot, delete_file_id + index, what)
    for index, flushed in enumerate(action.files):
        delete = flushed.delete_file
        if delete is None:
            continue
        insert_delete_file(session, delete, attached_id, table_id, data_file_id + index, snapshot)
        attached_id += 1
    for inlined in action.inlined_tables:
        begin = _system_column(session, inlined.table_name, "begin_snapshot")
        session.execute(f'DELETE FROM "{inlined.table_name}" WHERE {begin} <= ?', [action.snapshot])
    if action.deletes:
        session.execute(
            f'DELETE FROM "{_deletions_table(table_id)}" WHERE begin_snapshot <= ?',
            [action.snapshot],
        )
    if action.files:
        _add_file_sizes(session, action, table_id)


def _require_unchanged(session, action: FlushInlined, table_id: int, what: str) -> None:
    """The rows to flush are still in the catalog as they were read: none flushed, none
    deleted since (an end snapshot is only ever set, never cleared, so equal counts mean
    the same rows); each data file still has exactly the delete files read with it."""
    for inlined in action.inlined_tables:
        name = inlined.table_name
        if not is_inlined_table_name(name, table_id):
            raise CommitConflictError(f"{what}: {name!r} is not an inlined table of the table")
        found = (0, 0)
        if session.has_table(name):
            begin = _system_column(session, name, "begin_snapshot")
            end = _system_column(session, name, "end_snapshot")
            (row,) = session.rows(
                f'SELECT count(*), count({end}) FROM "{name}" WHERE {begin} <= ?',
                [action.snapshot],
            )
            found = (int(row[0]), int(row[1] or 0))
        if found != (inlined.rows, inlined.deleted):
            raise CommitConflictError(
                f"{what}: its rows inlined in the catalog ({name}) were flushed, deleted or "
                f"updated by another commit after snapshot {action.snapshot}, where this "
                "flush began; nothing was committed, flush again"
            )
    if action.deletes:
        name = _deletions_table(table_id)
        found = 0
        if session.has_table(name):
            (row,) = session.rows(
                f'SELECT count(*) FROM "{name}" WHERE begin_snapshot <= ?', [action.snapshot]
            )
            found = int(row[0])
        if found != action.deletes:
            raise CommitConflictError(
                f"{what}: its positions deleted through the catalog ({name}) were flushed by "
                f"another commit after snapshot {action.snapshot}, where this flush began; "
                "nothing was committed, flush again"
            )
    for change in action.file_deletes:
        live = {
            int(r[0])
            for r in session.rows(
                "SELECT delete_file_id FROM ducklake_delete_file WHERE table_id = ? AND "
                "data_file_id = ? AND end_snapshot IS NULL",
                [table_id, change.data_file_id],
            )
        }
        if live != set(change.replaces):
            raise CommitConflictError(
                f"{what}: the delete file of data file {change.data_file_id} was replaced by "
                f"another commit after snapshot {action.snapshot}, where this flush began; "
                "nothing was committed, flush again"
            )


def _add_file_sizes(session, action: FlushInlined, table_id: int) -> None:
    """The table's ``file_size_bytes`` grows by the data files' (row counts stay: the rows
    were counted when they were inlined); the column statistics take the files in."""
    size = sum(f.file.file_size_bytes for f in action.files)
    session.execute(
        "UPDATE ducklake_table_stats SET file_size_bytes = file_size_bytes + ? WHERE table_id = ?",
        [size, table_id],
    )
    _merge_column_stats(session, action, table_id)


def _merge_column_stats(session, action: FlushInlined, table_id: int) -> None:
    """Each column's statistics row widened to take the files in, as DuckDB merges them:
    a bound the files do not pass keeps its text (``false`` stays ``false`` beside a
    file's ``0``), and a column without a row gets none (DuckDB only updates rows)."""
    exact, held = held_column_stats(session, table_id)
    for column_id, type_name in action.column_types.items():
        before = held.get(column_id)
        files = [c for f in action.files for c in f.file.columns if c.column_id == column_id]
        if before is None or not files:
            continue
        null, nan, low, high = widen(type_name, before[:4], files)
        if before[1] is None:  # (a NaN flag unknown, as after inlined inserts, stays so)
            nan = None
        if any(f.value_count for f in files):  # (else: the held bounds, as widened)
            _, _, low, high = widen(type_name, None, files)
            # the held bounds first, so that a tie keeps them
            kept = FileColumnStats(column_id, None, 1, 0, before[2], before[3], None)
            _, _, low, high = widen(type_name, (None, None, low, high), [kept])
        row = {"contains_null": null, "contains_nan": nan, "min_value": low, "max_value": high}
        if exact:
            row["min_is_exact"] = _exact(low, before[2], before[4], files, "min")
            row["max_is_exact"] = _exact(high, before[3], before[5], files, "max")
        names = ", ".join(f"{name} = ?" for name in row)
        session.execute(
            f"UPDATE ducklake_table_column_stats SET {names} WHERE table_id = ? AND column_id = ?",
            [*row.values(), table_id, column_id],
        )


def _exact(bound, held, held_exact, files, which: str) -> bool | None:
    """Whether the merged bound is a value (DuckLake 1.1): the held row's flag when the
    bound is the held one, else the files' (all of theirs exact)."""
    if bound is None:
        return None
    if bound == held and held_exact is not None:
        return as_bool(held_exact)
    return all(getattr(f, f"{which}_exact") for f in files)


def drop_emptied_inlined_tables(session, *, dry_run: bool = False) -> list[str]:
    """Drop every inlined-data table that holds no row and whose table has one of a newer
    schema version (its registry row first); the names dropped (``dry_run``: the names
    to drop, nothing dropped: any session)."""
    if not session.has_table("ducklake_inlined_data_tables"):
        return []
    superseded = session.rows(
        "SELECT i.table_id, i.schema_version, i.table_name FROM ducklake_inlined_data_tables i "
        "WHERE i.schema_version < (SELECT max(n.schema_version) FROM "
        "ducklake_inlined_data_tables n WHERE n.table_id = i.table_id) "
        "ORDER BY i.table_id, i.schema_version"
    )
    dropped = []
    for table_id, version, name in superseded:
        name = str(name)
        if not is_inlined_table_name(name, int(table_id)) or not session.has_table(name):
            continue
        if int(session.rows(f'SELECT count(*) FROM "{name}"')[0][0]):
            continue
        dropped.append(name)
        if dry_run:
            continue
        session.execute(
            "DELETE FROM ducklake_inlined_data_tables WHERE table_id = ? AND schema_version = ?",
            [int(table_id), int(version)],
        )
        session.execute(f'DROP TABLE IF EXISTS "{name}"')
    return dropped


def _system_column(session, name: str, column: str) -> str:
    """An inlined-data table's system column as it is spelled there (DuckLake 1.1 prefixes
    it with ``_ducklake_``; a half-migrated catalog has both forms)."""
    prefixed = f"_ducklake_{column}"
    return prefixed if prefixed in columns_of(session, name) else column


def _deletions_table(table_id: int) -> str:
    return f"ducklake_inlined_delete_{int(table_id)}"
