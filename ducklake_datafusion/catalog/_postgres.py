"""PostgreSQL catalogs (``postgres:<libpq keywords>`` or ``postgresql://`` URLs), via psycopg 3.

One connection per thread is kept and reused across queries; each metadata read runs in
its own ``REPEATABLE READ READ ONLY`` transaction, which is committed (ended) before the
session returns, so no transaction stays open between queries and nothing can be written.
The connections of every thread close with the backend: when it is freed, or at once by
``close()`` (``_connections.ThreadConnections``).
Inlined values that PostgreSQL stores in types Arrow cannot take directly (numeric,
intervals, times with zone, timestamps, uuids) are fetched as text and parsed later with
DuckDB's cast rules, exactly like the writer produced them.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa

from ..errors import CatalogClosedError, CatalogError, CatalogNotFoundError, MissingDependencyError
from ._bulk import parse_csv
from ._connections import ThreadConnections
from ._rows import conform_to, rows_to_arrow
from ._session import SessionBase

__all__ = ["PostgresBackend"]

_AS_TEXT = (
    "numeric",
    "interval",
    "time",
    "timetz",
    "date",
    "timestamp",
    "timestamptz",
    "uuid",
    "json",
    "jsonb",
)
_SECRET = re.compile(r"(password\s*=\s*)('[^']*'|\S+)|(://[^:/@]+:)([^@]+)(@)", re.IGNORECASE)


def _redact(dsn: str) -> str:
    def hide(match: re.Match) -> str:
        if match.group(1):
            return match.group(1) + "***"
        return match.group(3) + "***" + match.group(5)

    return _SECRET.sub(hide, dsn)


def _import_psycopg():
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise MissingDependencyError(
            "PostgreSQL catalogs need psycopg 3: pip install 'ducklake-datafusion[postgres]'"
        ) from exc
    return psycopg


class _PostgresSession(SessionBase):
    # an integer from statistics text, NULL when it is none (``_file_cut``): a bare CAST
    # would fail the query on other text. At most 18 characters, a sign or digit, then
    # digits only (string tests rather than a regular expression, which PostgreSQL
    # evaluates per row at a higher cost on tables of many files).
    INTEGER_OF_TEXT = (
        "(CASE WHEN length({0}) BETWEEN 1 AND 18 AND {0} <> '-' "
        "AND translate(substr({0}, 1, 1), '-0123456789', '') = '' "
        "AND translate(substr({0}, 2), '0123456789', '') = '' "
        "THEN CAST({0} AS BIGINT) END)"
    )
    TABLES_SQL = (
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = ANY (current_schemas(false))"
    )
    # the first schema of the search path that has the table, as an unqualified name finds
    COLUMNS_SQL = (
        "SELECT c.column_name FROM information_schema.columns c "
        "JOIN unnest(current_schemas(false)) WITH ORDINALITY AS p(name, n) "
        "ON c.table_schema = p.name WHERE c.table_name = ? "
        "AND p.n = (SELECT min(q.n) FROM information_schema.tables t "
        "JOIN unnest(current_schemas(false)) WITH ORDINALITY AS q(name, n) "
        "ON t.table_schema = q.name WHERE t.table_name = c.table_name) "
        "ORDER BY c.ordinal_position"
    )

    def __init__(self, connection, cache: dict, description: str) -> None:
        super().__init__(cache, description)
        self._connection = connection

    def _execute(self, sql: str, params: Sequence[object]):
        cursor = self._connection.cursor()
        cursor.execute(sql.replace("?", "%s"), list(params))
        return cursor

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self._execute(sql, params).fetchall()

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        if schema is not None:
            data = bytearray()
            copy = f"COPY ({sql.replace('?', '%s')}) TO STDOUT (FORMAT csv)"
            with self._connection.cursor() as cursor, cursor.copy(copy, list(params)) as stream:
                for block in stream:
                    data += block
            try:
                return parse_csv(bytes(data), schema)
            except pa.ArrowInvalid:
                pass  # values the CSV text cannot carry: read them row by row
        cursor = self._execute(sql, params)
        names = [d.name for d in cursor.description]
        table = rows_to_arrow(names, cursor.fetchall())
        return table if schema is None else conform_to(table, schema)


class PostgresBackend:
    """A DuckLake catalog stored in a PostgreSQL database."""

    inlined_values_are_text = True

    def __init__(self, dsn: str, metadata_schema: str | None = None) -> None:
        self._dsn = dsn.strip()
        self.metadata_schema = metadata_schema
        schema = f" (metadata schema {metadata_schema!r})" if metadata_schema else ""
        self.description = f"PostgreSQL catalog {_redact(self._dsn)}{schema}"
        self.connections = ThreadConnections(lambda connection: connection.close())
        self._closed = weakref.finalize(self, self.connections.close_all)
        self.cache: dict = {}

    def __reduce__(self):
        return (PostgresBackend, (self._dsn, self.metadata_schema))

    def close(self) -> None:
        """Close the connections of every thread now; later sessions raise
        ``CatalogClosedError``."""
        self._closed()
        self.cache.clear()

    def _connection(self):
        psycopg = _import_psycopg()
        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to read it again"
            )
        held = self.connections.get()
        if held is not None and held[0] is not None and not held[0].closed:
            return held[0]
        connection = self._connect()
        from psycopg.types.string import TextLoader

        for type_name in _AS_TEXT:
            connection.adapters.register_loader(type_name, TextLoader)
        # Every session is one snapshot-consistent, read-only transaction.
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        connection.read_only = True
        self.connections.put(connection)
        return connection

    def write_session(self):
        """One read-write transaction on a connection of its own, for a commit."""
        from ._writers import postgres_writer

        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to write to it"
            )
        return postgres_writer(self._connect, self.description, _PostgresSession)

    def _connect(self):
        """A new connection in UTC whose unqualified ``ducklake_*`` names (and inlined
        tables) resolve in the metadata schema; reads keep one per thread, commits open
        their own (``write_session``)."""
        psycopg = _import_psycopg()
        try:
            connection = psycopg.connect(self._dsn, autocommit=False)
        except psycopg.OperationalError as exc:
            raise CatalogNotFoundError(
                f"{self.description} cannot be reached: {_redact(str(exc)).strip()}. Check host, "
                "port, database name and credentials"
            ) from None
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
            if self.metadata_schema:
                cursor.execute(
                    "SELECT set_config('search_path', quote_ident(%s), false)",
                    [self.metadata_schema],
                )
        connection.commit()
        return connection

    @contextmanager
    def session(self) -> Iterator[_PostgresSession]:
        psycopg = _import_psycopg()
        connection = self._connection()
        try:
            yield _PostgresSession(connection, self.cache, self.description)
        except psycopg.Error as exc:
            raise CatalogError(f"{self.description}: {_redact(str(exc)).strip()}") from None
        finally:
            try:
                connection.rollback()
            except psycopg.Error:
                self.connections.forget()
