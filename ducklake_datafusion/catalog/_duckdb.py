"""DuckDB-file catalogs, read through one in-process DuckDB instance.

A DuckDB file is locked by the process that has it attached for writing, and our own
read-only handle blocks writers just the same. So the file is held only while metadata
is being read: it is ``ATTACH``-ed read-only when a session starts and ``DETACH``-ed as
soon as the last session using it ends (sessions of concurrent queries share one
attachment). A writer committing between two metadata reads, or while a query is
scanning data files, never meets our lock.

Creating a DuckDB instance costs ~20 ms, attaching a file to a live one ~3 ms, so one
in-memory instance (which locks nothing) lives for the whole process and every catalog
object attaches its file there, one attachment per file however many catalog objects
read it. When a writer holds the file, attaching is retried for ``LOCK_RETRY_SECONDS``
(a commit takes milliseconds) before :class:`CatalogLockedError` is raised.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from ..errors import (
    CatalogError,
    CatalogLockedError,
    CatalogNotFoundError,
    NotADuckLakeCatalogError,
)
from ._rows import conform_to
from ._session import SessionBase, file_identity

__all__ = ["DuckDBBackend"]

LOCK_RETRY_SECONDS = 0.5


class _DuckDBSession(SessionBase):
    def __init__(
        self, cursor: duckdb.DuckDBPyConnection, alias: str, cache: dict, description: str
    ) -> None:
        super().__init__(cache, description)
        self._cursor = cursor
        self.TABLES_SQL = (
            "SELECT table_name FROM duckdb_tables() "
            f"WHERE database_name = '{alias}' AND schema_name = 'main'"
        )

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        try:
            return self._cursor.execute(sql, list(params)).fetchall()
        except duckdb.Error as exc:
            raise catalog_error(exc, self.description) from exc

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        try:
            table = self._cursor.execute(sql, list(params)).to_arrow_table()
        except duckdb.Error as exc:
            raise catalog_error(exc, self.description) from exc
        return table if schema is None else conform_to(table, schema)


class _Attachment:
    """One catalog file attached to the shared instance while sessions use it."""

    def __init__(self, path: str, alias: str) -> None:
        self.path = path
        self.alias = alias
        self.users = 0


class _SharedInstance:
    """The process's in-memory DuckDB instance and the catalog files attached to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._files: dict[str, _Attachment] = {}
        self._aliases = itertools.count()

    def _instance(self) -> duckdb.DuckDBPyConnection:
        if self._connection is None:
            # Metadata queries are tiny; one thread avoids DuckDB's per-query fan-out cost.
            self._connection = duckdb.connect(":memory:", config={"threads": 1})
        return self._connection

    @contextmanager
    def cursor(
        self, path: str, description: str
    ) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
        """A cursor whose default database is the attached ``path``, and its alias."""
        with self._lock:
            entry = self._files.get(path)
            if entry is None:
                entry = _Attachment(path, f"ducklake_catalog_{next(self._aliases)}")
                _attach(self._instance(), entry, description)
                self._files[path] = entry
            entry.users += 1
            instance = self._instance()
        try:
            cursor = instance.cursor()
            try:
                cursor.execute(f"USE {entry.alias}")
                yield cursor, entry.alias
            finally:
                cursor.close()
        finally:
            with self._lock:
                entry.users -= 1
                if entry.users == 0 and self._files.get(path) is entry:
                    del self._files[path]
                    self._detach(entry)

    def _detach(self, entry: _Attachment) -> None:
        """Detach ``entry``; if DuckDB cannot (a damaged file can invalidate the whole
        instance), start over with a new instance so the file is not left attached."""
        if self._connection is None:
            return
        try:
            self._connection.execute(f"DETACH {entry.alias}")
        except duckdb.Error:
            connection, self._connection = self._connection, None
            self._files.clear()
            try:
                connection.close()
            except duckdb.Error:
                pass

    def shutdown(self) -> None:
        """Close the instance before the interpreter finalises (nothing is attached then)."""
        with self._lock:
            self._files.clear()
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _attach(instance: duckdb.DuckDBPyConnection, entry: _Attachment, description: str) -> None:
    if not os.path.exists(entry.path):
        raise CatalogNotFoundError(
            f"{description} does not exist; pass the path of the .ducklake catalog file "
            "(or 'sqlite:...' / 'postgres:...' for other catalog databases)"
        )
    literal = "'" + entry.path.replace("'", "''") + "'"
    deadline = time.monotonic() + LOCK_RETRY_SECONDS
    while True:
        try:
            instance.execute(f"ATTACH {literal} AS {entry.alias} (TYPE duckdb, READ_ONLY)")
            return
        except duckdb.Error as exc:
            error = _attach_error(exc, description)
            if not isinstance(error, CatalogLockedError) or time.monotonic() > deadline:
                raise error from exc
        time.sleep(0.01)


def _attach_error(exc: duckdb.Error, description: str) -> CatalogError:
    text = str(exc)
    lowered = text.lower()
    # (not just "lock": "block" is in every checksum error)
    if any(w in lowered for w in ("could not set lock", "conflicting lock", "file handle conflict")):
        return CatalogLockedError(
            f"{description} is locked by another process that has it attached "
            "(DuckDB files allow one writer process and no concurrent readers). Detach it "
            "there, or use a SQLite or PostgreSQL catalog for concurrent access."
        )
    if "not a valid DuckDB database" in text:
        return NotADuckLakeCatalogError(
            f"{description} is not a DuckDB database file; pass the DuckLake "
            "catalog file (or 'sqlite:...' / 'postgres:...')"
        )
    return catalog_error(exc, description)


def catalog_error(exc: duckdb.Error, description: str) -> CatalogError:
    """A DuckDB error met while reading the catalog, naming the catalog and the fix."""
    text = str(exc)
    lowered = text.lower()
    if any(w in lowered for w in ("checksum", "corrupt", "truncated", "failed to read", "i/o")):
        return CatalogError(
            f"{description} is damaged and cannot be read ({text}); restore the catalog "
            "file from a backup"
        )
    if "permission denied" in lowered:
        return CatalogError(
            f"{description} cannot be read ({text}); check that this process may read the "
            "file and its directory"
        )
    return CatalogError(f"{description} cannot be read: {text}")


_SHARED = _SharedInstance()
atexit.register(_SHARED.shutdown)


class DuckDBBackend:
    """A DuckLake catalog stored in a DuckDB database file."""

    inlined_values_are_text = False

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self.description = f"DuckDB catalog {self.path}"
        self.cache: dict = {}

    def __reduce__(self):
        return (DuckDBBackend, (self.path,))

    @contextmanager
    def session(self) -> Iterator[_DuckDBSession]:
        self._check_identity()
        with _SHARED.cursor(self.path, self.description) as (cursor, alias):
            yield _DuckDBSession(cursor, alias, self.cache, self.description)

    def _check_identity(self) -> None:
        """Drop every memo when another file was renamed over the catalog path."""
        try:
            identity = file_identity(os.stat(self.path))
        except OSError:
            return  # attaching reports it
        if identity != self.cache.get("file_identity"):
            self.cache.clear()
            self.cache["file_identity"] = identity

    def close(self) -> None:
        """Nothing to release: the file is detached as soon as no session uses it."""
