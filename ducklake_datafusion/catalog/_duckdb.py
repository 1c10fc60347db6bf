"""DuckDB-file catalogs, opened read-only with the ``duckdb`` package.

A DuckDB file is locked by the process that has it attached for writing, and our own
read-only handle blocks writers just the same. So the handle is never kept between
queries: it is opened on demand, shared by the metadata reads of one query (DataFusion
asks for the schema, the table and the scan within milliseconds of each other; opening
costs ~15 ms), and closed once it has been idle for ``IDLE_CLOSE_SECONDS``.
"""

from __future__ import annotations

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
    TABLES_SQL = "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'"

    def __init__(self, cursor: duckdb.DuckDBPyConnection, cache: dict) -> None:
        super().__init__(cache)
        self._cursor = cursor

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self._cursor.execute(sql, list(params)).fetchall()

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        table = self._cursor.execute(sql, list(params)).to_arrow_table()
        return table if schema is None else conform_to(table, schema)


class DuckDBBackend:
    """A DuckLake catalog stored in a DuckDB database file."""

    inlined_values_are_text = False

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self.description = f"DuckDB catalog {self.path}"
        self._lock = threading.Lock()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        self._timer: threading.Timer | None = None
        self.cache: dict = {}

    def __reduce__(self):
        return (DuckDBBackend, (self.path,))

    def _open(self) -> duckdb.DuckDBPyConnection:
        if not os.path.exists(self.path):
            raise CatalogNotFoundError(
                f"{self.description} does not exist; pass the path of the .ducklake catalog file "
                "(or 'sqlite:...' / 'postgres:...' for other catalog databases)"
            )
        try:
            # Metadata queries are tiny; one thread avoids DuckDB's per-query fan-out cost.
            return duckdb.connect(self.path, read_only=True, config={"threads": 1})
        except duckdb.Error as exc:
            text = str(exc)
            if "lock" in text.lower() or "Unique file handle conflict" in text:
                raise CatalogLockedError(
                    f"{self.description} is locked by another process that has it attached "
                    "(DuckDB files allow one writer process and no concurrent readers). Detach it "
                    "there, or use a SQLite or PostgreSQL catalog for concurrent access."
                ) from exc
            if "not a valid DuckDB database" in text:
                raise NotADuckLakeCatalogError(
                    f"{self.description} is not a DuckDB database file; pass the DuckLake "
                    "catalog file (or 'sqlite:...' / 'postgres:...')"
                ) from exc
            raise CatalogError(f"{self.description} cannot be opened: {text}") from exc

    @contextmanager
    def session(self) -> Iterator[_DuckDBSession]:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._connection is None:
                self._connection = self._open()
            self._users += 1
            cursor = self._connection.cursor()
        try:
            yield _DuckDBSession(cursor, self.cache)
        finally:
            cursor.close()
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._timer = threading.Timer(IDLE_CLOSE_SECONDS, self._close_if_idle)
                    self._timer.daemon = True
                    self._timer.start()

    def _close_if_idle(self) -> None:
        with self._lock:
            if self._users == 0 and self._connection is not None:
                self._connection.close()
                self._connection = None
            self._timer = None

    def close(self) -> None:
        """Release the file now (tests and writers that cannot wait for the idle timer)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._connection is not None and self._users == 0:
                self._connection.close()
                self._connection = None
