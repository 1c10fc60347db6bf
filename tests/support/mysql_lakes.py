"""MySQL/MariaDB catalogs for the test matrix: a server, and the copy that builds the lakes.

DuckDB 1.5.5's MySQL extension creates a DuckLake catalog in MySQL and can CREATE, INSERT
once, DELETE, ADD COLUMN and read it back, but every second INSERT into a table, UPDATE
and RENAME COLUMN fail at commit ("Unsupported operator type HASH_JOIN in UPDATE statement
... MySQL connector": duckdb/ducklake#51, #288, duckdb/duckdb-mysql#130), and nested types
cannot be inlined there. So a ``mysql-*`` cell of the matrix builds its lake like this:

1. DuckDB attaches ``ducklake:mysql:...`` once, which creates the catalog tables in MySQL
   with the types its MySQL extension gives them (``MySQLServer.create_database`` /
   :func:`create_catalog`);
2. the writer writes to a DuckDB-file catalog on the same data path (every write works);
3. before anything reads (our reader or the oracle), :func:`copy_catalog` replaces the rows
   of every ``ducklake_*`` table in MySQL with the file catalog's (``INSERT ... BY NAME``
   through DuckDB's ``mysql`` attach; inlined-data tables are made with ``CREATE TABLE AS``).

The oracle is what DuckDB then reads from the MySQL catalog (``ducklake:mysql:...``,
READ_ONLY), so every answer is compared with DuckDB's own reading of MySQL's types
(datetime without fraction, HUGEINT as double). ``tests/catalog/test_mysql_catalog.py``
also builds a lake through DuckDB's own MySQL attach (the writes that work there).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

__all__ = ["MySQLServer", "copy_catalog", "create_catalog", "mysql_keys"]


def mysql_keys(conninfo: str) -> dict[str, str]:
    """DuckDB's ``key=value`` spelling as a dict."""
    return dict(part.split("=", 1) for part in conninfo.split())


@dataclass(frozen=True)
class MySQLServer:
    """A reachable MySQL/MariaDB server; each lake gets a database of its own.

    ``conninfo``: DuckDB's MySQL keys without a database (``host=... port=... user=...``).
    """

    conninfo: str

    def _admin(self):
        import pymysql

        keys = mysql_keys(self.conninfo)
        return pymysql.connect(
            host=keys.get("host", "localhost"),
            port=int(keys.get("port", 3306)),
            user=keys.get("user", "root"),
            password=keys.get("password", ""),
            autocommit=True,
            connect_timeout=5,
        )

    def ping(self) -> None:
        self._admin().close()

    def create_database(self) -> str:
        """Create a fresh ``dl_<random>`` database; return its DuckDB key string."""
        name = f"dl_{uuid.uuid4().hex[:12]}"
        with self._admin() as con, con.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        return f"{self.conninfo} database={name}"

    def drop_database(self, conninfo: str) -> None:
        name = mysql_keys(conninfo)["database"]
        with self._admin() as con, con.cursor() as cursor:
            # a reader may still hold a pooled connection: the drop waits for its metadata
            # lock only while it is inside a transaction, which no idle reader is
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _lit(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def create_catalog(con, conninfo: str, data_path: str) -> None:
    """Let DuckDB create the (empty) DuckLake catalog tables in MySQL, with its own types."""
    con.execute(
        f"ATTACH {_lit('ducklake:mysql:' + conninfo)} AS ducklake_mysql_init "
        f"(DATA_PATH {_lit(data_path)})"
    )
    con.execute("DETACH ducklake_mysql_init")


def copy_catalog(con, source_file: str, conninfo: str) -> None:
    """Make the MySQL catalog hold exactly the rows of the DuckDB-file catalog.

    Raises ``CopyRefused`` with DuckDB's reason when MySQL cannot hold a table (an inlined
    column of a nested type): the caller skips the test, naming it.
    """
    con.execute(f"ATTACH {_lit(source_file)} AS ducklake_copy_src (READ_ONLY)")
    try:
        con.execute(f"ATTACH {_lit(conninfo)} AS ducklake_copy_dst (TYPE mysql)")
        try:
            _copy_tables(con)
        finally:
            con.execute("DETACH ducklake_copy_dst")
    finally:
        con.execute("DETACH ducklake_copy_src")


class CopyRefused(Exception):
    """MySQL (through DuckDB's MySQL extension) cannot hold a table of the catalog."""


def _tables(con, database: str) -> dict[str, tuple[str, ...]]:
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE database_name = ? AND table_name LIKE 'ducklake_%' GROUP BY table_name",
        [database],
    ).fetchall()
    return {name: tuple(columns) for name, columns in rows}


def _copy_tables(con) -> None:
    source = _tables(con, "ducklake_copy_src")
    target = _tables(con, "ducklake_copy_dst")
    for name in sorted(set(target) - set(source)):  # inlined tables the writer dropped
        con.execute(f'DROP TABLE ducklake_copy_dst."{name}"')
    for name, columns in sorted(source.items()):
        quoted = f'"{name}"'
        if target.get(name) == columns and not name.startswith("ducklake_inlined_"):
            con.execute(f"DELETE FROM ducklake_copy_dst.{quoted}")
            con.execute(
                f"INSERT INTO ducklake_copy_dst.{quoted} BY NAME "
                f"SELECT * FROM ducklake_copy_src.main.{quoted}"
            )
            continue
        if name in target:
            con.execute(f"DROP TABLE ducklake_copy_dst.{quoted}")
        try:
            con.execute(
                f"CREATE TABLE ducklake_copy_dst.{quoted} AS "
                f"SELECT * FROM ducklake_copy_src.main.{quoted}"
            )
        except Exception as exc:  # noqa: BLE001 - duckdb.Error; named for the skip
            raise CopyRefused(f"MySQL cannot hold catalog table {name}: {exc}") from exc
