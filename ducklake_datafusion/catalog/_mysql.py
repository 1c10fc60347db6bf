"""MySQL and MariaDB catalogs (``mysql:<DuckDB's keys>`` or ``mysql://`` URLs), via PyMySQL.

One connection per thread is kept and reused across queries (``_connections``); each
metadata read is one ``START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY`` at
REPEATABLE READ (InnoDB's snapshot read), rolled back before the session returns, so no
transaction stays open between queries and nothing can be written.

The query modules' SQL is written once for every catalog database; MySQL needs a few
spellings of its own, made here (:func:`mysql_sql`) and only outside string literals:
``?`` placeholders become PyMySQL's ``%s``, a string parameter is compared byte for byte
(``BINARY %s``: the catalog's text columns have the server's case-insensitive collation,
and DuckDB compares names exactly), ``CAST(.. AS VARCHAR/BIGINT)`` becomes ``CHAR/SIGNED``,
and the column names MySQL reserves (``key``, ``sql``) are quoted. The session runs with
``sql_mode = 'ANSI_QUOTES'`` so that double-quoted names are identifiers.

What MySQL stores differently from the other catalogs, as DuckDB's MySQL extension writes
it: booleans are ``tinyint(1)`` (1/0), snapshot times and inlined timestamps ``datetime``
without a fraction, inlined HUGEINT ``double``, most inlined values ``text``. The rows are
handed over as they are (``inlined_values_are_text``: the inlined-row decoder casts them
with DuckDB's rules), so every layer above sees what DuckDB itself reads back.

Driver: PyMySQL (pure Python, small, no compiled part to match the platform). The file rows
do not come through its Python rows, whose cost grows with every value, but as the CSV
text of ``_bulk.mysql_csv_query``, which the bulk path uses: the driver's speed then hardly
matters (mysql-connector-python, without a C extension in its wheel, was no faster).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa

from ..errors import (
    CatalogClosedError,
    CatalogError,
    CatalogNotFoundError,
    InvalidOptionError,
    MissingDependencyError,
    NotADuckLakeCatalogError,
)
from ._bulk import mysql_csv_query, parse_csv
from ._connections import ThreadConnections
from ._mysql_dsn import parse_mysql
from ._rows import conform_to, rows_to_arrow
from ._session import SessionBase

__all__ = ["MySQLBackend", "mysql_sql"]

# Client error codes of a server that cannot be reached or went away.
_UNREACHABLE = {2002, 2003, 2005, 2006, 2013, 2055}
_ACCESS_DENIED = {1044, 1045, 1698}
_UNKNOWN_DATABASE = 1049
_NO_SUCH_TABLE = 1146
# "Table definition has changed, please retry transaction": a table created after this
# transaction's consistent snapshot began (ER_TABLE_DEF_CHANGED)
TABLE_NEWER_THAN_SNAPSHOT = 1412
_LITERAL = re.compile(r"('(?:[^'\\]|\\.|'')*')")
_RESERVED = re.compile(r'(?<![\w"])(key|sql)(?![\w"])')
_CASTS = re.compile(r"\bAS\s+(VARCHAR|TEXT|BIGINT|INTEGER)\s*\)", re.IGNORECASE)
_CAST_TO = {"varchar": "CHAR", "text": "CHAR", "bigint": "SIGNED", "integer": "SIGNED"}


def _import_pymysql():
    try:
        import pymysql
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise MissingDependencyError(
            "MySQL and MariaDB catalogs need PyMySQL: pip install 'ducklake-datafusion[mysql]'"
        ) from exc
    return pymysql


def mysql_sql(sql: str, params: Sequence[object]) -> str:
    """The query modules' SQL in MySQL's spelling (see the module docstring), for PyMySQL
    (which formats every query with ``%``, so a literal ``%`` is doubled)."""
    parts = _LITERAL.split(sql)
    strings = iter(isinstance(p, str) for p in params)
    out = []
    for index, part in enumerate(parts):
        if index % 2:  # a string literal
            out.append(part.replace("%", "%%"))
            continue
        part = part.replace("%", "%%")
        part = _CASTS.sub(lambda m: f"AS {_CAST_TO[m.group(1).lower()]})", part)
        part = _RESERVED.sub(r'"\1"', part)
        pieces = part.split("?")
        text = pieces[0]
        for piece in pieces[1:]:
            text += ("BINARY %s" if next(strings, False) else "%s") + piece
        out.append(text)
    return "".join(out)


class _MySQLSession(SessionBase):
    TABLES_SQL = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
    COLUMNS_SQL = (
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position"
    )
    # an integer from statistics text, NULL when it is none (``_file_cut``): a bare CAST
    # reads '12abc' as 12. At most 18 characters, an optional sign, then digits (``\z``:
    # ``$`` would let a trailing newline through).
    INTEGER_OF_TEXT = (
        "(CASE WHEN length({0}) BETWEEN 1 AND 18 AND {0} REGEXP '^-?[0-9]+\\\\z' "
        "THEN CAST({0} AS SIGNED) END)"
    )

    def __init__(self, connection, cache: dict, description: str) -> None:
        super().__init__(cache, description)
        self._connection = connection
        self._readable: dict[str, bool] = {}

    def has_table(self, name: str) -> bool:
        """Whether ``name`` exists *at this session's snapshot*. The table list comes from
        ``information_schema``, which is not transactional: an inlined-rows table that
        DuckDB created after this transaction began is listed, yet reading it fails (1412).
        Created later, it holds only rows of later snapshots, so here it does not exist."""
        if not super().has_table(name):
            return False
        if not name.startswith("ducklake_inlined_"):
            return True
        if name not in self._readable:
            import pymysql

            try:
                # (not LIMIT 0: MariaDB answers that without opening the table)
                self._execute(f"SELECT 1 FROM {name} LIMIT 1", ()).fetchall()
                self._readable[name] = True
            except pymysql.MySQLError as exc:
                if _code(exc) != TABLE_NEWER_THAN_SNAPSHOT:
                    raise
                self._readable[name] = False
        return self._readable[name]

    def _execute(self, sql: str, params: Sequence[object]):
        cursor = self._connection.cursor()
        cursor.execute(mysql_sql(sql, params), tuple(params))
        return cursor

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return list(self._execute(sql, params).fetchall())

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        if schema is not None:
            text, count = self._execute(mysql_csv_query(sql, schema), params).fetchone()
            try:
                # a line end after the last line: a NULL there would be an empty last field
                data = text.encode() if isinstance(text, str) else bytes(text or b"")
                table = parse_csv(data + b"\n" if data else b"", schema)
                if table.num_rows == int(count):
                    return table
            except pa.ArrowInvalid:
                pass  # values the CSV text cannot carry (or a cut text): read them row by row
        cursor = self._execute(sql, params)
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        table = rows_to_arrow(names, rows)
        return table if schema is None else conform_to(table, schema)


class MySQLBackend:
    """A DuckLake catalog stored in a MySQL or MariaDB database."""

    inlined_values_are_text = True

    def __init__(self, dsn: str, metadata_schema: str | None = None) -> None:
        self._dsn = dsn.strip()
        self.target = parse_mysql(self._dsn)
        if metadata_schema is not None and metadata_schema != self.target.database:
            raise InvalidOptionError(
                f"metadata_schema={metadata_schema!r}: a MySQL schema is a database; name the "
                "catalog's database as database=... in the connection string instead"
            )
        self.metadata_schema = metadata_schema
        self.description = f"MySQL catalog {self.target.describe()}"
        self.connections = ThreadConnections(lambda connection: connection.close())
        self._closed = weakref.finalize(self, self.connections.close_all)
        self.cache: dict = {}

    def __reduce__(self):
        return (MySQLBackend, (self._dsn, self.metadata_schema))

    def close(self) -> None:
        """Close the connections of every thread now; later sessions raise
        ``CatalogClosedError``."""
        self._closed()
        self.cache.clear()

    def write_session(self):
        """One read-write transaction on a connection of its own, for a commit."""
        from ._writers import mysql_writer

        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to write to it"
            )
        return mysql_writer(
            lambda: self._connect(keep=False), self.description, _MySQLSession, mysql_sql
        )

    def _connect(self, keep: bool = True):
        pymysql = _import_pymysql()
        try:
            connection = pymysql.connect(
                **self.target.connect_kwargs(),
                charset="utf8mb4",
                autocommit=False,
                connect_timeout=10,
            )
        except pymysql.MySQLError as exc:
            raise self._translate(exc) from None
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SET SESSION sql_mode = 'ANSI_QUOTES', time_zone = '+00:00', "
                    "group_concat_max_len = @@max_allowed_packet"
                )
                cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        except pymysql.MySQLError as exc:
            connection.close()
            raise self._translate(exc) from None
        if keep:
            self.connections.put(connection)
        return connection

    def _connection(self):
        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to read it again"
            )
        held = self.connections.get()
        if held is not None and held[0] is not None and held[0].open:
            return held[0]
        return self._connect()

    def _begin(self):
        """This thread's connection inside a new consistent read-only transaction (one
        new connection if the kept one was dropped by the server meanwhile)."""
        pymysql = _import_pymysql()
        for attempt in (1, 2):
            connection = self._connection()
            try:
                with connection.cursor() as cursor:
                    cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                return connection
            except pymysql.MySQLError as exc:
                self.connections.forget()
                if attempt == 2 or _code(exc) not in _UNREACHABLE:
                    raise self._translate(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def session(self) -> Iterator[_MySQLSession]:
        pymysql = _import_pymysql()
        connection = self._begin()
        try:
            yield _MySQLSession(connection, self.cache, self.description)
        except pymysql.MySQLError as exc:
            raise self._translate(exc) from None
        finally:
            try:
                connection.rollback()
            except pymysql.MySQLError:
                self.connections.forget()

    def _translate(self, exc: Exception) -> CatalogError:
        """A driver error as this package's error, naming the catalog (never its password:
        MySQL's messages only say whether one was used)."""
        code, text = _code(exc), _message(exc)
        if code in _UNREACHABLE:
            return CatalogNotFoundError(
                f"{self.description} cannot be reached ({text}); check host, port and that the "
                "server is running"
            )
        if code in _ACCESS_DENIED:
            return CatalogNotFoundError(
                f"{self.description} refused the login ({text}); check user and password"
            )
        if code == _UNKNOWN_DATABASE:
            return CatalogNotFoundError(
                f"{self.description}: the database does not exist ({text}); pass the database "
                "that DuckDB's ATTACH 'ducklake:mysql:...' created the catalog in"
            )
        if code == _NO_SUCH_TABLE and "ducklake_" in text:
            return NotADuckLakeCatalogError(
                f"{self.description} has no DuckLake metadata table ({text}), so it is not a "
                "DuckLake catalog; pass the database that DuckDB's ATTACH 'ducklake:mysql:...' "
                "created"
            )
        return CatalogError(f"{self.description}: {text}")


def _code(exc: Exception) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _message(exc: Exception) -> str:
    args = getattr(exc, "args", ())
    return str(args[1] if len(args) > 1 else exc).strip()
