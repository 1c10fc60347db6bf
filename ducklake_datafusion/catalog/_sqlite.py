"""SQLite catalogs (``sqlite:path``), read with the standard library's ``sqlite3``.

SQLite allows concurrent readers next to a writer. Each session opens the file read-only
(``mode=ro``), so nothing here can write to the user's catalog, and runs in one deferred
transaction, which SQLite keeps consistent from the first read to the end. The
connections of every thread close with the backend: when it is freed, or at once by
``close()`` (``_connections.ThreadConnections``).
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa

from ..errors import (
    CatalogClosedError,
    CatalogError,
    CatalogLockedError,
    CatalogNotFoundError,
    NotADuckLakeCatalogError,
)
from ._bulk import SQLITE_NULL, SQLITE_QUOTE, parse_csv, sqlite_csv_query
from ._connections import ThreadConnections
from ._rows import conform_to, rows_to_arrow
from ._session import SessionBase, file_identity

__all__ = ["SQLiteBackend"]


class _SQLiteSession(SessionBase):
    TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table'"
    COLUMNS_SQL = "SELECT name FROM pragma_table_info(?) ORDER BY cid"
    # an integer from statistics text, NULL when it is none (``_file_cut``): SQLite's CAST
    # reads any text as some number, so only text that is its integer's own spelling counts
    # (twice as fast as a GLOB check on 100,000 rows)
    INTEGER_OF_TEXT = (
        "(CASE WHEN CAST(CAST({0} AS INTEGER) AS TEXT) = {0} THEN CAST({0} AS INTEGER) END)"
    )

    def __init__(self, connection: sqlite3.Connection, cache: dict, description: str) -> None:
        super().__init__(cache, description)
        self._connection = connection

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self._connection.execute(sql, list(params)).fetchall()

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        if schema is not None:
            (text,) = self._connection.execute(
                sqlite_csv_query(sql, schema), list(params)
            ).fetchone()
            try:
                data = (text or "").encode()
                return parse_csv(data, schema, quote=SQLITE_QUOTE, null=SQLITE_NULL)
            except pa.ArrowInvalid:
                pass  # values the CSV text cannot carry: read them row by row
        cursor = self._connection.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        table = rows_to_arrow(names, cursor.fetchall())
        return table if schema is None else conform_to(table, schema)


class SQLiteBackend:
    """A DuckLake catalog stored in a SQLite database file."""

    inlined_values_are_text = True

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self.description = f"SQLite catalog {self.path}"
        self.connections = ThreadConnections(lambda connection: connection.close())
        self._closed = weakref.finalize(self, self.connections.close_all)
        self.cache: dict = {}

    def __reduce__(self):
        return (SQLiteBackend, (self.path,))

    def close(self) -> None:
        """Close the connections of every thread now; later sessions raise
        ``CatalogClosedError``."""
        self._closed()
        self.cache.clear()

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, re-opened when the catalog file was replaced.

        A connection keeps reading the file it opened even after another file was renamed
        over the path (a restore from backup), so the file's identity is compared on every
        session; a replaced file also drops every memo read from the old one.
        """
        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to read it again"
            )
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            raise CatalogNotFoundError(
                f"{self.description} does not exist; pass 'sqlite:<path of the catalog file>'"
            ) from None
        except OSError as exc:
            raise CatalogError(f"{self.description} cannot be read: {exc}") from exc
        identity = file_identity(info)
        connection, held_identity = self.connections.get() or (None, None)
        if connection is not None and held_identity != identity:
            self.connections.forget()
            connection = None
        if identity != self.cache.get("file_identity"):
            self.cache.clear()
            self.cache["file_identity"] = identity
        if connection is None:
            uri = "file:" + urllib.parse.quote(self.path) + "?mode=ro"
            try:
                connection = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            self.connections.put(connection, identity)
        return connection

    @contextmanager
    def session(self) -> Iterator[_SQLiteSession]:
        connection = self._connection()
        try:
            connection.execute("BEGIN")
        except sqlite3.Error as exc:
            self.connections.forget()
            raise self._translate(exc) from exc
        try:
            yield _SQLiteSession(connection, self.cache, self.description)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        finally:
            if connection.in_transaction:
                connection.execute("ROLLBACK")

    def write_session(self):
        """One ``BEGIN IMMEDIATE`` transaction on its own connection, for a commit."""
        from ._writers import sqlite_writer

        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to write to it"
            )
        if not os.path.exists(self.path):
            raise CatalogNotFoundError(
                f"{self.description} does not exist; pass 'sqlite:<path of the catalog file>'"
            )
        return sqlite_writer(self.path, self.description)

    def _translate(self, exc: sqlite3.Error) -> CatalogError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return CatalogLockedError(f"{self.description} is locked by a writer ({text}); retry")
        if "not a database" in text or "file is encrypted" in text:
            return NotADuckLakeCatalogError(
                f"{self.description} is not a SQLite database ({text}); pass the DuckLake "
                "catalog file that DuckDB's ATTACH 'ducklake:sqlite:...' created"
            )
        if "unable to open" in text:
            return CatalogError(
                f"{self.description} cannot be opened ({text}); check that this process may "
                "read the file and its directory"
            )
        if "malformed" in text or "disk i/o" in text.lower():
            return CatalogError(
                f"{self.description} is damaged ({text}); restore the catalog from a backup"
            )
        return CatalogError(f"{self.description}: {text}")
