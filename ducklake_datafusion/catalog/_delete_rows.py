"""The catalog rows of a delete, written in its transaction (``_commit`` decides which).

As DuckDB's writer leaves them: a data file whose every row is deleted is ended
(``end_snapshot``; its delete files stay, for the snapshots before); rows inlined in the
catalog are ended where they are; a data file's new delete file gets its
``ducklake_delete_file`` row, and the delete files it replaces (a cumulative file holds
their positions) lose theirs, their files scheduled in
``ducklake_files_scheduled_for_deletion``. Deletes never lower the table's statistics (they
are bounds, as DuckDB keeps them). Each step checks that what it ends is still live: a
change committed meanwhile is a ``CommitConflictError``, never a change lost in silence.
"""

from __future__ import annotations

import datetime as _dt

from ..errors import CommitConflictError
from ._commit_rows import columns_of, insert_row, is_inlined_table_name
from ._transaction import NewDeleteFile, SetDeleteFile

__all__ = [
    "add_delete_file_rows",
    "end_data_files",
    "end_inlined_rows",
    "insert_delete_file",
    "lake_relative",
]


def end_data_files(session, table_id: int, snapshot: int, file_ids, what: str) -> None:
    """End data files whose every row is deleted; each must still be live (a requirement
    checked it; a file ended meanwhile would be a lost change, never silently ignored)."""
    for file_id in file_ids:
        session.execute(
            "UPDATE ducklake_data_file SET end_snapshot = ? WHERE data_file_id = ? AND "
            "table_id = ? AND end_snapshot IS NULL",
            [snapshot, file_id, table_id],
        )
    _require_count(
        session,
        "SELECT count(*) FROM ducklake_data_file WHERE end_snapshot = ? AND table_id = ? AND "
        "data_file_id IN ({})",
        [snapshot, table_id],
        list(file_ids),
        f"{what}: data files {list(file_ids)} to end",
    )


def end_inlined_rows(session, table_id: int, snapshot: int, row_ids, what: str) -> None:
    """End rows inlined in the catalog by row id, in whichever of the table's inlined
    tables holds them; every row must still be live there."""
    wanted = list(row_ids)
    ended = 0
    for (name,) in session.rows(
        "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ?", [table_id]
    ):
        if not is_inlined_table_name(name, table_id) or not session.has_table(name):
            continue
        prefix = "_ducklake_" if "_ducklake_end_snapshot" in columns_of(session, name) else ""
        end, row_id = f"{prefix}end_snapshot", f"{prefix}row_id"
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            before = session.rows(
                f'SELECT count(*) FROM "{name}" WHERE {end} IS NULL AND {row_id} IN ({marks})',
                chunk,
            )
            ended += int(before[0][0])
            session.execute(
                f'UPDATE "{name}" SET {end} = ? WHERE {end} IS NULL AND {row_id} IN ({marks})',
                [snapshot, *chunk],
            )
    if ended != len(wanted):
        raise CommitConflictError(
            f"{what}: {len(wanted) - ended} of the {len(wanted)} inlined rows to delete were "
            "deleted or flushed by another commit meanwhile; nothing was committed, write again"
        )


def add_delete_file_rows(
    session, action: SetDeleteFile, table_id: int, snapshot: int, delete_file_id: int, what
) -> None:
    """The data file's new delete file; the ones it replaces removed, their files
    scheduled for deletion (paths relative to the lake's data path, as DuckDB does)."""
    if action.replaces:
        marks = ", ".join("?" for _ in action.replaces)
        old = session.rows(
            "SELECT d.delete_file_id, d.path, d.path_is_relative, t.path, t.path_is_relative, "
            "s.path, s.path_is_relative FROM ducklake_delete_file d "
            "JOIN ducklake_table t ON t.table_id = d.table_id AND t.end_snapshot IS NULL "
            "JOIN ducklake_schema s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL "
            f"WHERE d.data_file_id = ? AND d.delete_file_id IN ({marks})",
            [action.data_file_id, *action.replaces],
        )
        if len(old) != len(action.replaces):
            raise CommitConflictError(
                f"{what}: the delete file of data file {action.data_file_id} was replaced "
                "by another commit meanwhile; nothing was committed, write again"
            )
        for delete_id, path, relative, table_path, table_rel, schema_path, schema_rel in old:
            session.execute(
                "DELETE FROM ducklake_delete_file WHERE delete_file_id = ?", [delete_id]
            )
            insert_row(
                session,
                "ducklake_files_scheduled_for_deletion",
                {
                    "data_file_id": delete_id,
                    "path": lake_relative(
                        path, relative, table_path, table_rel, schema_path, schema_rel
                    ),
                    "path_is_relative": bool(relative and table_rel and schema_rel),
                    "schedule_start": session.adapt(_dt.datetime.now(_dt.timezone.utc)),
                },
            )
    insert_delete_file(
        session, action.delete_file, delete_file_id, table_id, action.data_file_id, snapshot
    )


def insert_delete_file(
    session, delete: NewDeleteFile, delete_file_id: int, table_id: int, data_file_id: int, snapshot
) -> None:
    """A new delete file's ``ducklake_delete_file`` row (of a delete, or of a flush): it
    begins at its own ``begin_snapshot`` when it has one, else at ``snapshot``."""
    insert_row(
        session,
        "ducklake_delete_file",
        {
            "delete_file_id": delete_file_id,
            "table_id": table_id,
            "begin_snapshot": delete.begin_snapshot
            if delete.begin_snapshot is not None
            else snapshot,
            "end_snapshot": None,
            "data_file_id": data_file_id,
            "path": delete.path,
            "path_is_relative": True,
            "format": "parquet",
            "delete_count": delete.delete_count,
            "file_size_bytes": delete.file_size_bytes,
            "footer_size": delete.footer_size,
            "encryption_key": None,
            "partial_max": delete.partial_max,
        },
    )


def lake_relative(path, relative, table_path, table_rel, schema_path, schema_rel) -> str:
    """A table file's path as ``ducklake_files_scheduled_for_deletion`` keeps it: relative
    to the lake's data path when the file, table and schema paths are all relative."""
    if not relative:
        return path
    if not table_rel:
        return table_path + path
    return schema_path + table_path + path


def _require_count(session, sql: str, params: list, ids: list, what: str) -> None:
    found = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = session.rows(sql.format(", ".join("?" for _ in chunk)), [*params, *chunk])
        found += int(rows[0][0])
    if found != len(ids):
        raise CommitConflictError(
            f"{what}: {len(ids) - found} were ended by another commit meanwhile; nothing was "
            "committed, write again"
        )
