"""The rows of ``rewrite_data_files``, as DuckDB 1.5 writes them (``WriteDeleteRewrites``,
``RecomputeGlobalStatsAfterRewrite``).

The rewritten file's row comes first (``begin_snapshot`` = the commit's, no
``row_id_start``: the file carries its rows' ids); then the sources' live delete files and
the sources themselves end at the commit (kept, not scheduled: the snapshots before it read
them). Positions deleted through the catalog (``ducklake_inlined_delete_<table>``) stay.

When no deleted row is left in the table's files afterwards (every live file's rows all
live, no inlined row), the table's statistics are computed anew from its live files, as
DuckDB does: ``record_count`` and ``file_size_bytes`` summed (``next_row_id`` kept), each
column's bounds merged from the files' own. Otherwise, and when rows are inlined in the
catalog, they stay as they were (wider bounds, still true).
"""

from __future__ import annotations

from ..errors import CommitConflictError
from ._bounds import widen
from ._commit_request import FileColumnStats
from ._commit_rows import columns_of, insert_data_file
from ._sql import as_bool
from ._transaction import RewriteFiles

__all__ = ["rewrite_file_rows"]


def rewrite_file_rows(
    session, action: RewriteFiles, table_id: int, snapshot: int, data_file_id: int, what: str
) -> None:
    """The rewritten file's rows in place of its sources' (module docstring)."""
    if action.file is not None:
        new = action.file
        insert_data_file(
            session,
            new,
            data_file_id,
            table_id,
            begin_snapshot=snapshot,
            row_id_start=None,
            partition_id=action.partition_id,
        )
    _end(session, "ducklake_delete_file", "delete_file_id", action.delete_files, snapshot, what)
    _end(session, "ducklake_data_file", "data_file_id", action.sources, snapshot, what)
    _recompute_table_stats(session, table_id, action)


def _end(session, table: str, column: str, ids, snapshot: int, what: str) -> None:
    ids = list(ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        (live,) = session.rows(
            f"SELECT count(*) FROM {table} WHERE {column} IN ({marks}) AND end_snapshot IS NULL",
            chunk,
        )[0]
        if int(live) != len(chunk):
            raise CommitConflictError(
                f"{what}: a file to rewrite was ended or rewritten by another commit meanwhile; "
                "nothing was committed, rewrite again"
            )
        session.execute(
            f"UPDATE {table} SET end_snapshot = ? WHERE {column} IN ({marks})", [snapshot, *chunk]
        )


def _recompute_table_stats(session, table_id: int, action: RewriteFiles) -> None:
    stats = session.rows(
        "SELECT record_count FROM ducklake_table_stats WHERE table_id = ?", [table_id]
    )
    if not stats:
        return
    (gross, size) = session.rows(
        "SELECT sum(record_count), sum(file_size_bytes) FROM ducklake_data_file "
        "WHERE table_id = ? AND end_snapshot IS NULL",
        [table_id],
    )[0]
    (deleted,) = session.rows(
        "SELECT sum(delete_count) FROM ducklake_delete_file WHERE table_id = ? "
        "AND end_snapshot IS NULL",
        [table_id],
    )[0]
    inlined_deleted = 0
    name = f"ducklake_inlined_delete_{int(table_id)}"
    if session.has_table(name):
        (inlined_deleted,) = session.rows(
            f'SELECT count(*) FROM "{name}" d JOIN ducklake_data_file f '
            "ON f.data_file_id = d.file_id AND f.end_snapshot IS NULL"
        )[0]
    if int(deleted or 0) + int(inlined_deleted or 0) or _has_inlined_rows(session, table_id):
        return
    session.execute(
        "UPDATE ducklake_table_stats SET record_count = ?, file_size_bytes = ? WHERE table_id = ?",
        [int(gross or 0), int(size or 0), table_id],
    )
    per_column = _live_file_stats(session, table_id)
    exact = "min_is_exact" in columns_of(session, "ducklake_table_column_stats")
    for column_id, type_name in action.column_types.items():
        files = per_column.get(column_id, [])
        null, nan, low, high = widen(type_name, None, files)
        row = {"contains_null": null, "contains_nan": nan, "min_value": low, "max_value": high}
        if exact:
            row["min_is_exact"] = None if low is None else all(f.min_exact for f in files)
            row["max_is_exact"] = None if high is None else all(f.max_exact for f in files)
        names = ", ".join(f"{key} = ?" for key in row)
        session.execute(
            f"UPDATE ducklake_table_column_stats SET {names} WHERE table_id = ? AND column_id = ?",
            [*row.values(), table_id, column_id],
        )


def _has_inlined_rows(session, table_id: int) -> bool:
    if not session.has_table("ducklake_inlined_data_tables"):
        return False
    for (name,) in session.rows(
        "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ?", [table_id]
    ):
        if session.has_table(str(name)):
            rows = session.rows(f'SELECT count(*) FROM "{name}" WHERE end_snapshot IS NULL')
            if int(rows[0][0]):
                return True
    return False


def _live_file_stats(session, table_id: int) -> dict[int, list[FileColumnStats]]:
    """Each column's ``ducklake_file_column_stats`` of the table's live files."""
    exact = "min_is_exact" in columns_of(session, "ducklake_file_column_stats")
    rows = session.rows(
        "SELECT s.column_id, s.value_count, s.null_count, s.min_value, s.max_value, "
        "s.contains_nan" + (", s.min_is_exact, s.max_is_exact" if exact else "") + " "
        "FROM ducklake_file_column_stats s JOIN ducklake_data_file f "
        "ON f.data_file_id = s.data_file_id AND f.table_id = s.table_id "
        "WHERE s.table_id = ? AND f.end_snapshot IS NULL",
        [table_id],
    )
    found: dict[int, list[FileColumnStats]] = {}
    for row in rows:
        found.setdefault(int(row[0]), []).append(
            FileColumnStats(
                column_id=int(row[0]),
                column_size_bytes=None,
                value_count=int(row[1] or 0),
                null_count=int(row[2] or 0),
                min_value=row[3],
                max_value=row[4],
                contains_nan=None if row[5] is None else as_bool(row[5]),
                min_exact=True if not exact or row[6] is None else as_bool(row[6]),
                max_exact=True if not exact or row[7] is None else as_bool(row[7]),
            )
        )
    return found
