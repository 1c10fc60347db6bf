"""Column comments of tables and views (``COMMENT ON COLUMN``), at one snapshot.

DuckDB stores a table column's comment in ``ducklake_column_tag`` (by column id) and,
from DuckLake 1.1 on, a view column's in ``ducklake_view_column_tag`` (by the view's
output column name); both with ``key = 'comment'`` and the usual snapshot range. A 1.0
catalog has no view tags: its views have no column comments.
"""

from __future__ import annotations

from ._backend import MetadataSession
from ._sql import live

__all__ = ["table_column_comments", "view_column_comments"]

COMMENT = "comment"


def table_column_comments(session: MetadataSession, table_id: int, snapshot: int) -> dict[int, str]:
    """``{column id: comment}`` of a table's columns at ``snapshot``."""
    found = _comments(session, "ducklake_column_tag", "column_id", "table_id", table_id, snapshot)
    return {int(column): text for column, text in found.items()}


def view_column_comments(session: MetadataSession, view_id: int, snapshot: int) -> dict[str, str]:
    """``{column name: comment}`` of a view's columns at ``snapshot`` (DuckLake 1.1)."""
    return _comments(
        session, "ducklake_view_column_tag", "column_name", "view_id", view_id, snapshot
    )


def _comments(session, table: str, column: str, owner: str, owner_id: int, snapshot: int):
    """``{column: comment}`` from a tag table (its names are constants of this module)."""
    if not session.has_table(table):
        return {}
    rows = session.rows(
        f"SELECT {column}, value FROM {table} WHERE {owner} = ? AND key = ? AND {live()}",
        [owner_id, COMMENT, snapshot, snapshot],
    )
    return {r[0]: r[1] for r in rows if r[1] is not None}
