"""What a writer reads from the catalog beside the read path: a table's own settings and
the partitioning files are written under.

Kept here, with every other catalog query, so that no SQL text runs outside ``catalog/``
(``tests/test_layering.py`` checks it).
"""

from __future__ import annotations

from ._backend import MetadataSession
from ._names import columns_of
from ._sql import live

__all__ = ["column_defaults", "live_partition_columns", "scoped_setting", "table_setting"]


def table_setting(session: MetadataSession, table_id: int, key: str) -> str | None:
    """The table's own ``ducklake_metadata`` value of ``key`` (``scope = 'table'``), if set."""
    rows = session.rows(
        "SELECT value FROM ducklake_metadata WHERE key = ? AND scope = 'table' AND scope_id = ?",
        [key, table_id],
    )
    return rows[0][0] if rows else None


def scoped_setting(
    session: MetadataSession, key: str, table_id: int, schema_id: int | None
) -> str | None:
    """A ``ducklake_metadata`` option as DuckDB looks it up: the table's own, else its
    schema's, else the lake's (``None``: unset)."""
    value = table_setting(session, table_id, key)
    if value is None and schema_id is not None:
        rows = session.rows(
            "SELECT value FROM ducklake_metadata WHERE key = ? AND scope = 'schema' "
            "AND scope_id = ?",
            [key, schema_id],
        )
        value = rows[0][0] if rows else None
    if value is None:
        rows = session.rows(
            "SELECT value FROM ducklake_metadata WHERE key = ? AND scope IS NULL", [key]
        )
        value = rows[0][0] if rows else None
    return value


def live_partition_columns(
    session: MetadataSession, table_id: int, snapshot: int
) -> list[tuple[int, int, int, str]]:
    """``(partition_id, key index, column id, transform)`` of the table's partitioning live
    at ``snapshot``, in key order (empty: unpartitioned, or a catalog without partitions)."""
    if not session.has_table("ducklake_partition_info"):
        return []
    return session.rows(
        "SELECT i.partition_id, c.partition_key_index, c.column_id, c.transform "
        "FROM ducklake_partition_info i JOIN ducklake_partition_column c "
        "ON c.partition_id = i.partition_id AND c.table_id = i.table_id "
        f"WHERE i.table_id = ? AND {live('i')} ORDER BY c.partition_key_index",
        [table_id, snapshot, snapshot],
    )


def column_defaults(
    session: MetadataSession, table_id: int, snapshot: int
) -> dict[int, tuple[str, str]]:
    """``{column id: (default_value, default_value_type)}`` of the table's top-level
    columns live at ``snapshot`` that have a default (``SET DEFAULT``, ``ADD COLUMN ...
    DEFAULT``): what a row that leaves the column out gets, as DuckDB's ``INSERT`` gives
    it (``literal`` text, or an ``expression``)."""
    names = columns_of(session, "ducklake_column")  # memoised per lake version
    if "default_value" not in names:
        return {}
    kind = "default_value_type" if "default_value_type" in names else "'literal'"
    rows = session.rows(
        f"SELECT column_id, default_value, {kind} FROM ducklake_column WHERE table_id = ? "
        f"AND parent_column IS NULL AND {live()}",
        [table_id, snapshot, snapshot],
    )
    return {
        int(column_id): (value, (value_type or "literal").lower())
        for column_id, value, value_type in rows
        if value is not None and not (value == "NULL" and (value_type or "literal") == "literal")
    }
