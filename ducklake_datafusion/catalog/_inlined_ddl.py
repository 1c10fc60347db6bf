"""A new inlined-data table for a table whose columns changed, as DuckDB makes one.

DuckDB, with data inlining on (its default: 10 rows), keeps a table's small inserts in
the catalog, in ``ducklake_inlined_data_<table>_<schema version>``, and inserts into the
one of the newest schema version listed in ``ducklake_inlined_data_tables``, taking its
columns to be the table's. So when a table's columns change (a column added, dropped,
renamed or retyped; the table renamed), DuckDB creates that table for the new schema
version at once; it creates the first one itself when a table has none. A change of
ours does the same for a table that has one already (else DuckDB's next small insert
into it would fail, its columns not the table's): same name, same system columns as the
newest one (1.0's ``row_id``... or 1.1's ``_ducklake_row_id``...), the table's columns
with the type DuckDB gives each in that catalog database (its metadata managers'
rules: SQLite and PostgreSQL keep nested values, and a few more, as text).
"""

from __future__ import annotations

from ._commit_rows import insert_row
from ._ddl_actions import ColumnType
from ._ddl_types import duckdb_type_name
from ._format import inlined_system_columns

__all__ = ["add_inlined_table"]

_INTEGERS = {"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
# PostgreSQL: types DuckDB's PostgreSQL manager names otherwise, the rest as text
_POSTGRES = {
    "int8": "SMALLINT",
    "uint8": "INTEGER",
    "uint16": "INTEGER",
    "uint32": "BIGINT",
    "float32": "REAL",
    "float64": "DOUBLE PRECISION",
    "varchar": "BYTEA",
    "blob": "BYTEA",
}
_POSTGRES_TEXT = {"uint64", "int128", "uint128", "date", "timestamp", "timestamptz"}
_POSTGRES_TEXT |= {"timestamp_s", "timestamp_ms", "timestamp_ns", "variant", "geometry"}


def _column_type(dialect: str, kind: ColumnType) -> str:
    if dialect == "sqlite":
        if kind.name in _INTEGERS:
            return "BIGINT"
        return "BLOB" if kind.name == "blob" else "VARCHAR"
    if dialect == "postgres":
        if kind.nested or kind.name in _POSTGRES_TEXT:
            return "VARCHAR"
        return _POSTGRES.get(kind.name, duckdb_type_name(kind))
    return duckdb_type_name(kind)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def add_inlined_table(
    session, table_id: int, schema_version: int, columns: list[tuple[str, ColumnType]]
) -> None:
    """Create the inlined-data table of ``table_id`` for ``schema_version`` with
    ``columns`` (the table's, in order), when the table has one already (see above)."""
    if session.DIALECT not in ("duckdb", "sqlite", "postgres"):
        return  # (MySQL: DuckDB's types there are its MySQL scanner's; not made here)
    if not session.has_table("ducklake_inlined_data_tables"):
        return
    rows = session.rows(
        "SELECT table_name, schema_version FROM ducklake_inlined_data_tables WHERE table_id = ? "
        "ORDER BY schema_version DESC",
        [table_id],
    )
    if not rows or not session.has_table(rows[0][0]):
        return
    system = inlined_system_columns(list(session.column_names(rows[0][0])))
    if system is None:
        return
    name = f"ducklake_inlined_data_{int(table_id)}_{int(schema_version)}"
    definitions = [f"{_quoted(n)} BIGINT" for n in system.names]
    definitions += [f"{_quoted(n)} {_column_type(session.DIALECT, k)}" for n, k in columns]
    session.execute(f'CREATE TABLE IF NOT EXISTS "{name}" ({", ".join(definitions)})')
    insert_row(
        session,
        "ducklake_inlined_data_tables",
        {"table_id": table_id, "table_name": name, "schema_version": schema_version},
    )
