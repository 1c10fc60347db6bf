"""Steps 1-4 and 12 of the read path: snapshots, schemas, tables, views and columns.

Everything that turns a name (or a time, or a snapshot id) into a catalog entry, and the
columns of a table: the look-ups a query makes before it reads any file list. What is
live at a snapshot never changes once the snapshot is committed, so these are memoised
per snapshot (``_session.per_snapshot``); snapshot rows per lake version. Which optional
columns a catalog's metadata tables have (DuckLake 1.1 added some) is read here too.
"""

from __future__ import annotations

import datetime as _dt
import re

from ..errors import NotADuckLakeCatalogError
from ._backend import MetadataSession
from ._models import ColumnEntry, SchemaEntry, SnapshotInfo, TableEntry, ViewEntry
from ._session import per_snapshot, per_version
from ._sql import as_bool, as_timestamp, live, opt_int

__all__ = [
    "columns_of",
    "find_table",
    "latest_snapshot",
    "list_schemas",
    "list_snapshots",
    "list_tables",
    "list_views",
    "nested_schema_names",
    "read_columns",
    "snapshot_at_time",
    "snapshot_by_id",
    "table_by_id",
    "table_names_of",
    "top_level_schemas",
]


def _snapshot(row: tuple) -> SnapshotInfo:
    return SnapshotInfo(int(row[0]), as_timestamp(row[1]), int(row[2]))


_SNAPSHOT_SQL = (
    "SELECT snapshot_id, CAST(snapshot_time AS VARCHAR), schema_version FROM ducklake_snapshot"
)


def latest_snapshot(session: MetadataSession) -> SnapshotInfo:
    """The latest snapshot: one ``max()`` query, its row memoised per lake version.

    (``ORDER BY snapshot_id DESC LIMIT 1`` costs DuckDB three times as much.)
    """
    latest = session.lake_version()[0]
    snapshot = snapshot_by_id(session, latest)
    if snapshot is None:
        raise NotADuckLakeCatalogError(
            f"{session.description} has an empty ducklake_snapshot "
            "table, so it is not a usable DuckLake catalog; pass the catalog database that "
            "DuckDB's ATTACH 'ducklake:...' created"
        )
    return snapshot


def snapshot_by_id(session: MetadataSession, snapshot_id: int) -> SnapshotInfo | None:
    def lookup() -> SnapshotInfo | None:
        rows = session.rows(_SNAPSHOT_SQL + " WHERE snapshot_id = ?", [int(snapshot_id)])
        return _snapshot(rows[0]) if rows else None

    return per_version(session, ("snapshot", int(snapshot_id)), lookup)


def list_snapshots(session: MetadataSession) -> list[SnapshotInfo]:
    def read() -> tuple[SnapshotInfo, ...]:
        rows = session.rows(_SNAPSHOT_SQL + " ORDER BY snapshot_id")
        return tuple(_snapshot(r) for r in rows)

    return list(per_version(session, ("snapshots",), read))


def snapshot_at_time(
    session: MetadataSession, when: _dt.datetime, *, at_or_after: bool = False
) -> SnapshotInfo | None:
    """Latest snapshot with time <= ``when`` (or earliest >= when for a range start).

    Compared in Python because SQLite stores the times as text of variable length.
    """
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    snapshots = list_snapshots(session)
    if at_or_after:
        later = [s for s in snapshots if s.snapshot_time >= when]
        return min(later, key=lambda s: (s.snapshot_time, s.snapshot_id)) if later else None
    earlier = [s for s in snapshots if s.snapshot_time <= when]
    return max(earlier, key=lambda s: (s.snapshot_time, s.snapshot_id)) if earlier else None


def list_schemas(session: MetadataSession, snapshot: int) -> list[SchemaEntry]:
    return list(
        per_snapshot(session, ("schemas", snapshot), lambda: _list_schemas(session, snapshot))
    )


def _list_schemas(session: MetadataSession, snapshot: int) -> tuple[SchemaEntry, ...]:
    rows = session.rows(
        "SELECT schema_id, schema_name, path, path_is_relative FROM ducklake_schema s "
        f"WHERE {live()}{top_level_schemas(session)} ORDER BY schema_id",
        [snapshot, snapshot],
    )
    return tuple(SchemaEntry(int(r[0]), r[1], r[2], as_bool(r[3])) for r in rows)


def top_level_schemas(session: MetadataSession) -> str:
    """``" AND s.parent_schema_id IS NULL"`` when the catalog can nest schemas (1.1), else
    ``""``: a schema name is looked up among top-level schemas only, so that a nested
    ``sales.main`` is never read as ``main``."""
    if "parent_schema_id" in columns_of(session, "ducklake_schema"):
        return " AND s.parent_schema_id IS NULL"
    return ""


def nested_schema_names(session: MetadataSession, snapshot: int) -> tuple[str, ...]:
    """Dotted paths of the nested schemas live at ``snapshot`` (1.1), which this reader
    does not read: named in the error of a lookup that did not find its table."""
    if "parent_schema_id" not in columns_of(session, "ducklake_schema"):
        return ()
    rows = session.rows(
        f"SELECT schema_id, schema_name, parent_schema_id FROM ducklake_schema WHERE {live()}",
        [snapshot, snapshot],
    )
    parents = {int(r[0]): (r[1], None if r[2] is None else int(r[2])) for r in rows}

    def path(schema_id: int) -> str:
        name, parent = parents[schema_id]
        seen = {schema_id}
        while parent is not None and parent in parents and parent not in seen:
            seen.add(parent)
            parent_name, parent = parents[parent]
            name = f"{parent_name}.{name}"
        return name

    return tuple(sorted(path(i) for i, (_, parent) in parents.items() if parent is not None))


def columns_of(session: MetadataSession, table: str) -> tuple[str, ...]:
    """The column names of a metadata table (memoised per lake version): which optional
    columns a catalog has is read from the catalog, never inferred from its version."""
    if not _METADATA_TABLE.match(table):
        raise ValueError(f"not a metadata table name: {table!r}")

    return per_version(session, ("columns_of", table), lambda: session.column_names(table))


_METADATA_TABLE = re.compile(r"^ducklake_[a-z0-9_]+$")


# The tables live at a snapshot (binds it four times), each as a ``_table`` row.
_TABLES_SQL = (
    "SELECT t.table_id, t.table_uuid, s.schema_id, s.schema_name, t.table_name, "
    "s.path, s.path_is_relative, t.path, t.path_is_relative "
    "FROM ducklake_table t JOIN ducklake_schema s ON t.schema_id = s.schema_id "
    f"WHERE {live('t')} AND {live('s')}"
)


def _table_sql(session: MetadataSession) -> str:
    """The live tables of one top-level schema (a fifth parameter: its name)."""
    return f"{_TABLES_SQL}{top_level_schemas(session)} AND s.schema_name = ?"


def _table(row: tuple) -> TableEntry:
    return TableEntry(
        table_id=int(row[0]),
        table_uuid=str(row[1]),
        schema_id=int(row[2]),
        schema_name=row[3],
        table_name=row[4],
        schema_path=row[5],
        schema_path_is_relative=as_bool(row[6]),
        path=row[7],
        path_is_relative=as_bool(row[8]),
    )


def table_by_id(session: MetadataSession, snapshot: int, table_id: int) -> TableEntry | None:
    """The table with this id live at the snapshot (under the name it had then), if any.

    The change feed follows one table through renames, so it looks tables up by id.
    """
    rows = session.rows(f"{_TABLES_SQL} AND t.table_id = ?", [snapshot] * 4 + [int(table_id)])
    return _table(rows[0]) if rows else None


def list_tables(session: MetadataSession, snapshot: int, schema_name: str) -> list[TableEntry]:
    params = [snapshot] * 4 + [schema_name]
    rows = session.rows(_table_sql(session) + " ORDER BY t.table_name", params)
    return [_table(r) for r in rows]


def _view_sql(session: MetadataSession) -> str:
    return (
        "SELECT v.view_id, s.schema_name, v.view_name, v.dialect, v.sql, v.column_aliases "
        "FROM ducklake_view v JOIN ducklake_schema s ON v.schema_id = s.schema_id "
        f"WHERE {live('v')} AND {live('s')}{top_level_schemas(session)} AND s.schema_name = ? "
        "ORDER BY v.view_name"
    )


_ALIAS = re.compile(r'"((?:[^"]|"")*)"')


def table_names_of(session: MetadataSession, table_id: int) -> list[tuple[str, str]]:
    """Every ``(schema, table)`` name a table has had (renames keep the table id)."""
    rows = session.rows(
        "SELECT DISTINCT s.schema_name, t.table_name FROM ducklake_table t "
        "JOIN ducklake_schema s ON t.schema_id = s.schema_id WHERE t.table_id = ?",
        [table_id],
    )
    return [(r[0], r[1]) for r in rows]


def list_views(session: MetadataSession, snapshot: int, schema_name: str) -> list[ViewEntry]:
    """Step 12: the views of a schema live at the snapshot."""

    def read() -> tuple[ViewEntry, ...]:
        if not session.has_table("ducklake_view"):
            return ()
        rows = session.rows(_view_sql(session), [snapshot] * 4 + [schema_name])
        return tuple(
            ViewEntry(
                int(r[0]),
                r[1],
                r[2],
                (r[3] or "duckdb").lower(),
                r[4],
                tuple(a.replace('""', '"') for a in _ALIAS.findall(r[5] or "")),
            )
            for r in rows
        )

    return list(per_snapshot(session, ("views", snapshot, schema_name), read))


def find_table(
    session: MetadataSession, snapshot: int, schema_name: str, table_name: str
) -> TableEntry | None:
    params = [snapshot] * 4 + [schema_name, table_name]

    def lookup() -> TableEntry | None:
        rows = session.rows(_table_sql(session) + " AND t.table_name = ?", params)
        return _table(rows[0]) if rows else None

    return per_snapshot(session, ("table", snapshot, schema_name, table_name), lookup)


def read_columns(session: MetadataSession, table_id: int, snapshot: int) -> tuple[ColumnEntry, ...]:
    """Step 4: every column version live at the snapshot, all nesting levels."""
    key = ("columns", snapshot, table_id)
    return per_snapshot(session, key, lambda: _read_columns(session, table_id, snapshot))


def _read_columns(
    session: MetadataSession, table_id: int, snapshot: int
) -> tuple[ColumnEntry, ...]:
    """Step 4: every column version live at the snapshot, all nesting levels."""
    rows = session.rows(
        "SELECT column_id, column_name, column_type, initial_default, parent_column, column_order, "
        f"begin_snapshot FROM ducklake_column WHERE table_id = ? AND {live()} ORDER BY column_order",
        [table_id, snapshot, snapshot],
    )
    return tuple(
        ColumnEntry(int(r[0]), r[1], r[2], r[3], opt_int(r[4]), int(r[5]), int(r[6])) for r in rows
    )
