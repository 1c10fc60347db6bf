"""DuckDB-file catalogs, read through one in-process DuckDB instance.

A DuckDB file is locked by the process that has it attached for writing, and our own
read-only handle blocks writers just the same. So the file is never held between
queries: it is ``ATTACH``-ed read-only on demand, shared by the metadata reads of one
query (DataFusion asks for the schema, the table and the scan within milliseconds of each
other), and ``DETACH``-ed once idle for ``IDLE_CLOSE_SECONDS``.

Creating a DuckDB instance costs ~20 ms, attaching a file to a live one ~3 ms, so one
in-memory instance (which locks nothing) lives for the whole process and every catalog
object attaches its file there, one attachment per file however many catalog objects
read it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
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
from ._session import SessionBase

__all__ = ["DuckDBBackend"]

IDLE_CLOSE_SECONDS = 0.5


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
        return self._cursor.execute(sql, list(params)).fetchall()

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        table = self._cursor.execute(sql, list(params)).to_arrow_table()
        return table if schema is None else conform_to(table, schema)


class _Attachment:
    """One catalog file attached to the shared instance, detached when idle."""

    def __init__(self, path: str, alias: str) -> None:
        self.path = path
        self.alias = alias
        self.attached = False
        self.users = 0
        self.timer: threading.Timer | None = None
        self.idle: list[duckdb.DuckDBPyConnection] = []  # cursors already ``USE``-ing it

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close_cursors(self) -> None:
        for cursor in self.idle:
            cursor.close()
        self.idle.clear()


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
                entry = self._files[path] = _Attachment(
                    path, f"ducklake_catalog_{next(self._aliases)}"
                )
            entry.stop_timer()
            if not entry.attached:
                _attach(self._instance(), entry, description)
            entry.users += 1
            cursor = entry.idle.pop() if entry.idle else None
        if cursor is None:
            cursor = self._instance().cursor()
            cursor.execute(f"USE {entry.alias}")  # ~0.2 ms: done once per pooled cursor
        try:
            yield cursor, entry.alias
        finally:
            with self._lock:
                entry.idle.append(cursor)
                entry.users -= 1
                if entry.users == 0 and entry.attached:
                    entry.timer = threading.Timer(IDLE_CLOSE_SECONDS, self.release, args=(path,))
                    entry.timer.daemon = True
                    entry.timer.start()

    def shutdown(self) -> None:
        """Detach everything and close the instance before the interpreter finalises.

        An idle timer firing during interpreter shutdown would call into DuckDB from a
        daemon thread that Python is tearing down, which aborts the process.
        """
        with self._lock:
            for entry in self._files.values():
                entry.stop_timer()
                entry.close_cursors()
                entry.attached = False
            self._files.clear()
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def release(self, path: str) -> None:
        """Detach ``path`` now if no query is using it."""
        with self._lock:
            entry = self._files.get(path)
            if entry is None:
                return
            entry.stop_timer()
            if entry.users == 0 and entry.attached:
                entry.close_cursors()
                self._instance().execute(f"DETACH {entry.alias}")
                entry.attached = False


def _attach(instance: duckdb.DuckDBPyConnection, entry: _Attachment, description: str) -> None:
    if not os.path.exists(entry.path):
        raise CatalogNotFoundError(
            f"{description} does not exist; pass the path of the .ducklake catalog file "
            "(or 'sqlite:...' / 'postgres:...' for other catalog databases)"
        )
    literal = "'" + entry.path.replace("'", "''") + "'"
    try:
        instance.execute(f"ATTACH {literal} AS {entry.alias} (TYPE duckdb, READ_ONLY)")
    except duckdb.Error as exc:
        text = str(exc)
        if "lock" in text.lower() or "Unique file handle conflict" in text:
            raise CatalogLockedError(
                f"{description} is locked by another process that has it attached "
                "(DuckDB files allow one writer process and no concurrent readers). Detach it "
                "there, or use a SQLite or PostgreSQL catalog for concurrent access."
            ) from exc
        if "not a valid DuckDB database" in text:
            raise NotADuckLakeCatalogError(
                f"{description} is not a DuckDB database file; pass the DuckLake "
                "catalog file (or 'sqlite:...' / 'postgres:...')"
            ) from exc
        raise CatalogError(f"{description} cannot be opened: {text}") from exc
    entry.attached = True


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
        with _SHARED.cursor(self.path, self.description) as (cursor, alias):
            yield _DuckDBSession(cursor, alias, self.cache, self.description)

    def close(self) -> None:
        """Release the file now (tests and writers that cannot wait for the idle timer)."""
        _SHARED.release(self.path)
