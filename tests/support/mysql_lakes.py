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

__all__ = [
    "MySQLServer",
    "copy_catalog",
    "create_catalog",
    "duckdb_writes_directly",
    "mysql_keys",
]


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


def duckdb_writes_directly(lake, statements: list[str]) -> None:
    """DuckDB's own writes to a ``mysql-*`` cell's catalog, through its MySQL extension, not
    through the writer's file and the copy (which would put the file's rows over ours): what
    DuckDB writes after a change of ours there. Only the writes that work on MySQL (``ALTER``,
    a new table's one ``INSERT``...). ``lake.`` in ``statements`` names the catalog. The
    writer's file no longer matches MySQL afterwards: the lake's ``sql`` writes MySQL
    directly from then on."""
    lake.detach()
    con = lake._connection()
    attach = (
        f"ATTACH {_lit('ducklake:' + lake.metadata)} AS lake (DATA_PATH {_lit(lake.data_path)})"
    )
    con.execute(attach)
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.execute("DETACH lake")
    lake.writer_metadata = None  # (``sql`` now writes MySQL directly, no copy over it)


def copy_catalog(con, source_file: str, conninfo: str, copied: dict) -> None:
    """Make the MySQL catalog hold exactly the rows of the DuckDB-file catalog.

    ``copied`` (kept by the caller between copies) holds an order-independent digest of
    each table as last copied, so only the tables a write changed are copied again (each
    statement through the MySQL extension costs a round trip and a commit).

    Raises ``CopyRefused`` with DuckDB's reason when MySQL cannot hold a table (an inlined
    column of a nested type): the caller skips the test, naming it.
    """
    con.execute(f"ATTACH {_lit(source_file)} AS ducklake_copy_src (READ_ONLY)")
    try:
        source = _source_tables(con)
        con.execute(f"ATTACH {_lit(conninfo)} AS ducklake_copy_dst (TYPE mysql)")
        try:
            _copy_tables(con, mysql_keys(conninfo)["database"], source, copied)
        finally:
            con.execute("DETACH ducklake_copy_dst")
    finally:
        con.execute("DETACH ducklake_copy_src")


class CopyRefused(Exception):
    """MySQL (through DuckDB's MySQL extension) cannot hold a table of the catalog."""


def _source_tables(con) -> dict[str, tuple[str, ...]]:
    """The file catalog's tables and their columns (read before MySQL is attached:
    ``duckdb_columns()`` would list every database of the server)."""
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE database_name = 'ducklake_copy_src' AND table_name LIKE 'ducklake_%' "
        "GROUP BY table_name"
    ).fetchall()
    return {name: tuple(columns) for name, columns in rows}


def _target_tables(con) -> dict[str, tuple[str, ...]]:
    """The MySQL catalog's tables and their columns, asked of its database only."""
    rows = con.execute(
        "SELECT table_name, column_name FROM mysql_query('ducklake_copy_dst', "
        "'SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = DATABASE() ORDER BY table_name, ordinal_position')"
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for name, column in rows:
        tables.setdefault(name, []).append(column)
    return {
        name: tuple(columns) for name, columns in tables.items() if name.startswith("ducklake_")
    }


def _digest(con, name: str) -> tuple:
    """``(rows, sum of row hashes)`` of a source table: changes when any row does."""
    return con.execute(
        f'SELECT count(*), CAST(sum(hash(t)) AS VARCHAR) FROM ducklake_copy_src.main."{name}" t'
    ).fetchone()


def _copy_tables(con, database: str, source: dict, copied: dict) -> None:
    target = _target_tables(con)
    dst = 'ducklake_copy_dst."' + database.replace('"', '""') + '"'
    for name in sorted(set(target) - set(source)):  # inlined tables the writer dropped
        con.execute(f'DROP TABLE {dst}."{name}"')
        copied.pop(name, None)
    for name, columns in sorted(source.items()):
        digest = (columns, _digest(con, name))
        if name in target and copied.get(name) == digest:
            continue
        copied.pop(name, None)
        _copy_table(con, dst, name, columns, target)
        copied[name] = digest


def _copy_table(con, dst: str, name: str, columns: tuple, target: dict) -> None:
    quoted = f'"{name}"'
    if target.get(name) == columns and not name.startswith("ducklake_inlined_"):
        con.execute(f"DELETE FROM {dst}.{quoted}")
        con.execute(
            f"INSERT INTO {dst}.{quoted} BY NAME SELECT * FROM ducklake_copy_src.main.{quoted}"
        )
        return
    if name in target:
        con.execute(f"DROP TABLE {dst}.{quoted}")
    try:
        con.execute(f"CREATE TABLE {dst}.{quoted} AS SELECT * FROM ducklake_copy_src.main.{quoted}")
    except Exception as exc:
        raise CopyRefused(f"MySQL cannot hold catalog table {name}: {exc}") from exc
