"""DuckLake 1.1 catalogs without a 1.1 writer: the reference's migration, done by the tests.

No DuckLake 1.1 writer installs here (the ducklake extension on PyPI stops at DuckDB 1.5.5,
format 1.0), so 1.1 catalogs are made from the 1.0 lakes the suite builds, the way DuckDB
2.0 makes them from existing catalogs (``ATTACH ... (AUTOMATIC_MIGRATION)``), written from
the specification and the reference extension's ``MigrateV10`` and read back by our reader:

1. rename the system columns of every registered inlined-data table
   (``row_id``, ``begin_snapshot``, ``end_snapshot`` -> ``_ducklake_`` + the same);
2. ``ALTER TABLE ducklake_data_file / ducklake_delete_file ADD COLUMN row_group_count
   BIGINT``, and create ``ducklake_view_column_tag``;
3. the final 1.1 also adds ``min_is_exact``/``max_is_exact`` to both column-statistics
   tables and ``parent_schema_id`` to ``ducklake_schema``;
4. set ``ducklake_metadata.version``.

The migration adds no rows and changes no values but the version, so a migrated catalog
must read exactly as DuckDB read the 1.0 one, at every snapshot: the tests compare with
DuckDB's answer on the 1.0 form (the 1.5 writer cannot open a 1.1 catalog).

``DUCKLAKE_TEST_FORMAT=1.1`` makes ``Lake.reader_args()`` hand our reader a migrated copy
of the catalog (brought up to date in the same file when the catalog changed, so a test
that writes again reads its new state, and a reader holding the copy refreshes as on the
original); DuckDB, the oracle, keeps reading the original.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterable

__all__ = [
    "COPY_SCHEMA",
    "format_under_test",
    "migrate",
    "migrated_copy",
]

# The PostgreSQL schema a catalog's migrated copy lives in, beside the original.
COPY_SCHEMA = "ducklake_v11"
VIEW_COLUMN_TAG = (
    "CREATE TABLE {q}ducklake_view_column_tag(view_id BIGINT, column_name VARCHAR, "
    "begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR)"
)
_RENAMES = (
    ("row_id", "_ducklake_row_id"),
    ("begin_snapshot", "_ducklake_begin_snapshot"),
    ("end_snapshot", "_ducklake_end_snapshot"),
)


def format_under_test() -> str:
    """The DuckLake format the reader is tested on: ``1.0`` (the writer's), or ``1.1``."""
    value = os.environ.get("DUCKLAKE_TEST_FORMAT", "1.0").strip() or "1.0"
    if value not in ("1.0", "1.1"):
        raise ValueError(f"DUCKLAKE_TEST_FORMAT must be 1.0 or 1.1, got {value!r}")
    return value


class _Catalog:
    """Run statements on one catalog database, with its identifier quoting.

    ``execute(sql, params)`` and ``rows(sql, params)`` take ``?`` placeholders; ``q`` is the
    prefix that names a metadata table (``q + "ducklake_data_file"``).
    """

    def __init__(self, execute, rows, tables_sql: str, qualifier: str = "") -> None:
        self.execute = execute
        self.rows = rows
        self.tables_sql = tables_sql  # lists the catalog's tables
        self.q = qualifier  # schema prefix for PostgreSQL copies, e.g. '"ducklake_v11".'

    def tables(self) -> set[str]:
        return {r[0] for r in self.rows(self.tables_sql)}

    def table(self, name: str) -> str:
        return self.q + '"' + name.replace('"', '""') + '"'


def migrate(
    catalog: _Catalog,
    *,
    version: str = "1.1",
    inlined_tables: Iterable[str] | None = None,
) -> None:
    """Upgrade a 1.0 catalog in place, as DuckDB 2.0's ``MigrateV10`` does.

    Args:
        version: ``1.1-dev1`` (the 2026-08-20 reference) or ``1.1`` (the release, with its
            three extra columns).
        inlined_tables: rename only these inlined-data tables (a half-migrated catalog);
            default: every one registered.
    """
    registry = catalog.table("ducklake_inlined_data_tables")
    registered = [r[0] for r in catalog.rows(f"SELECT table_name FROM {registry}")]
    existing = catalog.tables()
    for name in registered if inlined_tables is None else inlined_tables:
        if name not in existing:  # registered, never created: nothing to rename
            continue
        for old, new in _RENAMES:
            catalog.execute(f"ALTER TABLE {catalog.table(name)} RENAME COLUMN {old} TO {new}")
    q = catalog.q
    catalog.execute(f"ALTER TABLE {q}ducklake_data_file ADD COLUMN row_group_count BIGINT")
    catalog.execute(f"ALTER TABLE {q}ducklake_delete_file ADD COLUMN row_group_count BIGINT")
    catalog.execute(VIEW_COLUMN_TAG.format(q=q))
    if version == "1.1":
        for table in ("ducklake_file_column_stats", "ducklake_table_column_stats"):
            catalog.execute(f"ALTER TABLE {q}{table} ADD COLUMN min_is_exact BOOLEAN")
            catalog.execute(f"ALTER TABLE {q}{table} ADD COLUMN max_is_exact BOOLEAN")
        catalog.execute(f"ALTER TABLE {q}ducklake_schema ADD COLUMN parent_schema_id BIGINT")
    catalog.execute(f"UPDATE {q}ducklake_metadata SET value = '{version}' WHERE key = 'version'")


def migrated_copy(
    metadata: str,
    metadata_schema: str | None,
    *,
    version: str = "1.1",
    edit=None,
    inlined_tables: Iterable[str] | None = None,
    in_place: bool = False,
) -> tuple[str, str | None]:
    """A 1.1 copy of a 1.0 catalog, made anew: ``(metadata, metadata_schema)`` to read it.

    DuckDB and SQLite files are copied beside the original (``*-v11``) and migrated there;
    a PostgreSQL catalog is copied into the schema :data:`COPY_SCHEMA` of its database.
    An existing file copy is replaced atomically, so a reader holding its path sees a
    replaced file (and drops what it memoised); with ``in_place`` the new copy is written
    into the existing file instead (the same file, as the writer updates its own), for a
    copy that follows its catalog's commits: a reader then refreshes from the rows that
    changed, as it does on the original. ``edit(catalog)``, if given, runs after the
    migration, in the same transaction (the tests' 1.1-only constructions);
    ``inlined_tables`` as for :func:`migrate`.
    """
    steps = {"version": version, "edit": edit, "inlined_tables": inlined_tables}
    if metadata.startswith("sqlite:"):
        path = metadata.removeprefix("sqlite:")
        overwrite = _overwrite_sqlite if in_place else None
        target = _file_copy(path, lambda tmp: _migrate_sqlite(tmp, **steps), overwrite)
        return "sqlite:" + target, None
    if metadata.startswith("postgres:"):
        _migrate_postgres(metadata.removeprefix("postgres:"), metadata_schema, **steps)
        return metadata, COPY_SCHEMA
    overwrite = _overwrite_duckdb if in_place else None
    migrate_file = lambda tmp: _migrate_duckdb(tmp, metadata_schema, **steps)
    target = _file_copy(metadata, migrate_file, overwrite)
    return target, metadata_schema


def _run(catalog: _Catalog, *, version: str, edit, inlined_tables) -> None:
    migrate(catalog, version=version, inlined_tables=inlined_tables)
    if edit is not None:
        edit(catalog)


def _file_copy(path: str, migrate_file, overwrite=None) -> str:
    """Copy ``path`` (and its DuckDB write-ahead log) beside it, migrate the copy, and put
    it at ``*-v11``: renamed over an existing one, or written into it by ``overwrite``."""
    root, ext = os.path.splitext(path)
    target = f"{root}-v11{ext}"
    tmp = f"{root}-v11-tmp{ext}"
    for suffix in ("", ".wal"):
        if os.path.exists(tmp + suffix):
            os.remove(tmp + suffix)
    shutil.copyfile(path, tmp)
    if os.path.exists(path + ".wal"):
        shutil.copyfile(path + ".wal", tmp + ".wal")
    migrate_file(tmp)
    if os.path.exists(target + ".wal"):
        os.remove(target + ".wal")
    if overwrite and os.path.exists(target):
        overwrite(tmp, target)
        os.remove(tmp)
    else:
        os.replace(tmp, target)
    return target


def _overwrite_duckdb(source: str, target: str) -> None:
    """The bytes of ``source`` written into the file ``target`` (same inode; the migrated
    file is checkpointed, so it has no log). A reader copies the file, never opens it, and
    sees a changed file the way it sees a commit of the writer."""
    shutil.copyfile(source, target)  # truncates and rewrites target: not a new file


def _overwrite_sqlite(source: str, target: str) -> None:
    """``source``'s database written into ``target`` by SQLite's backup API: one write
    transaction on the same file, which open readers see as a commit (their caches follow
    the change counter), never as a replaced file."""
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _migrate_duckdb(path: str, metadata_schema: str | None, **steps) -> None:
    import duckdb

    con = duckdb.connect(path)
    try:
        schema = metadata_schema or "main"
        con.execute(f'USE "{schema}"')
        con.execute("BEGIN")
        catalog = _Catalog(
            lambda sql, params=(): con.execute(sql, list(params)),
            lambda sql, params=(): con.execute(sql, list(params)).fetchall(),
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            f"AND schema_name = '{schema}'",
        )
        _run(catalog, **steps)
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _migrate_sqlite(path: str, **steps) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("BEGIN")
        catalog = _Catalog(
            lambda sql, params=(): con.execute(sql, list(params)),
            lambda sql, params=(): con.execute(sql, list(params)).fetchall(),
            "SELECT name FROM sqlite_master WHERE type = 'table'",
        )
        _run(catalog, **steps)
        con.execute("COMMIT")
    finally:
        con.close()


def _migrate_postgres(dsn: str, metadata_schema: str | None, **steps) -> None:
    import psycopg

    with psycopg.connect(dsn) as con:
        source = metadata_schema or con.execute("SELECT current_schema()").fetchone()[0]
        con.execute(f'DROP SCHEMA IF EXISTS "{COPY_SCHEMA}" CASCADE')
        con.execute(f'CREATE SCHEMA "{COPY_SCHEMA}"')
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                "AND table_type = 'BASE TABLE'",
                [source],
            )
        ]
        for table in tables:
            con.execute(f'CREATE TABLE "{COPY_SCHEMA}"."{table}" AS TABLE "{source}"."{table}"')
        catalog = _Catalog(
            lambda sql, params=(): con.execute(sql.replace("?", "%s"), list(params)),
            lambda sql, params=(): con.execute(sql.replace("?", "%s"), list(params)).fetchall(),
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema = '{COPY_SCHEMA}'",
            qualifier=f'"{COPY_SCHEMA}".',
        )
        _run(catalog, **steps)
        con.commit()
