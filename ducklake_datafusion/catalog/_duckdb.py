"""DuckDB-file catalogs, read from a private copy that no writer ever waits for.

A DuckDB file is locked by the process that has it attached, and a read-only attachment
of ours would lock a writer out just the same (measured: a reader querying every 0.2 s
blocked every attach of a writer). So the catalog file itself is never attached: it is
copied (with its write-ahead log) into a private temporary directory, and the copy is
attached read-only to one in-memory DuckDB instance. Copying takes no lock, so a writer
can attach, commit and checkpoint at any moment, even while it keeps the lake attached
for good. The copy is what DuckDB would recover after a crash at that instant: every
committed transaction (the log is synced at commit) and nothing half-written.

A copy is torn if the writer changes the file while it is being copied, so the files'
identity, size and modification time are compared before and after, and a file modified
within ``QUIET_SECONDS`` (longer than the kernel's timestamp granularity) is first let
settle. The copy is kept while the files' signature stays the same (one ``stat`` per
query), and replaced when the catalog changes or is replaced by another file.

The copies of one file are shared by every backend of that file in the process, and held
by them: when the last backend holding a file is freed or closed, its copy is detached and
its temporary directory deleted, so a catalog dropped leaves no file behind.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from ..errors import (
    CatalogClosedError,
    CatalogError,
    CatalogLockedError,
    CatalogNotFoundError,
    NotADuckLakeCatalogError,
    UnsupportedVersionError,
)
from ._duckdb_tables import bound_column_names, catalog_error
from ._rows import conform_to
from ._session import SessionBase

__all__ = ["DuckDBBackend"]

QUIET_SECONDS = 0.025
COPY_TIMEOUT_SECONDS = 10.0


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _identifier(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


class _DuckDBSession(SessionBase):
    # an integer from statistics text, NULL when it is none (``_file_cut``)
    INTEGER_OF_TEXT = "TRY_CAST({0} AS BIGINT)"
    VARIANT_AS_JSON = True

    def __init__(
        self,
        cursor: duckdb.DuckDBPyConnection,
        alias: str,
        schema: str,
        cache: dict,
        description: str,
        copy: _Copy,
    ) -> None:
        super().__init__(cache, description)
        self._cursor = cursor
        self._copy = copy
        self._schema = schema
        self.TABLES_SQL = (
            "SELECT table_name FROM duckdb_tables() "
            f"WHERE database_name = {_literal(alias)} AND schema_name = {_literal(schema)}"
        )

    def _read_version(self) -> tuple:
        # A copy never changes (it is replaced when the file does): its version is read
        # once, which saves a query per session (two sessions per SQL query).
        version = self._copy.versions.get(self._schema)
        if version is None:
            version = super()._read_version()
            self._copy.versions[self._schema] = version
        return version

    def column_names(self, table: str) -> tuple[str, ...]:
        return bound_column_names(self._cursor, table, self.description)

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        try:
            return self._cursor.execute(sql, list(params)).fetchall()
        except duckdb.Error as exc:
            raise catalog_error(exc, self.description) from exc

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        try:
            table = self._cursor.sql(sql, params=list(params)).to_arrow_table()
        except duckdb.Error as exc:
            raise catalog_error(exc, self.description) from exc
        return table if schema is None else conform_to(table, schema)


def file_signature(path: str) -> tuple:
    """Identity, size and modification time of the catalog file and its write-ahead log."""
    signature = []
    for name in (path, path + ".wal"):
        try:
            info = os.stat(name)
        except FileNotFoundError:
            signature.append(None)
            continue
        signature.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    return tuple(signature)


class _Copy:
    """A private copy of one catalog file, attached to the shared instance."""

    def __init__(self, path: str, alias: str, signature: tuple, directory: str) -> None:
        self.path = path
        self.alias = alias
        self.signature = signature
        self.directory = directory
        self.users = 0
        self.retired = False
        # the raw lake version row of the copy, per metadata schema (see _read_version)
        self.versions: dict[str, tuple] = {}
        # cursors already ``USE``-ing it, per metadata schema
        self.idle: dict[str, list[duckdb.DuckDBPyConnection]] = {}


class _SharedInstance:
    """The process's in-memory DuckDB instance and the catalog copies attached to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._files: dict[str, _Copy] = {}
        # backends holding each file (``hold``/``release``): its copy is kept while any does
        self._holders: dict[str, int] = {}
        self._released: list[str] = []  # releases not applied yet (see ``release``)
        self._aliases = itertools.count()

    def hold(self, path: str) -> None:
        """A backend of ``path`` starts using copies of it."""
        with self._lock:
            self._holders[path] = self._holders.get(path, 0) + 1
            self._drain()

    def release(self, path: str) -> None:
        """A backend of ``path`` is done: the last one out retires the file's copy.

        Called by the backend's finaliser, so possibly inside a garbage collection that
        interrupted this very object under its lock (while copying a file, say): the
        release is queued, and done now only if the lock is free; else whoever holds it
        does it before letting go.
        """
        self._released.append(path)  # atomic: needs no lock
        if self._lock.acquire(blocking=False):
            try:
                self._drain()
            finally:
                self._lock.release()

    def _drain(self) -> None:
        """(Under the lock.) Apply the queued releases."""
        while self._released:
            path = self._released.pop()
            left = self._holders.get(path, 0) - 1
            if left > 0:
                self._holders[path] = left
                continue
            self._holders.pop(path, None)
            entry = self._files.get(path)
            if entry is not None:
                self._retire(entry)

    def copies(self) -> int:
        """How many copies are attached now (for tests and the soak benchmark)."""
        with self._lock:
            self._drain()
            return len(self._files)

    def _instance(self) -> duckdb.DuckDBPyConnection:
        if self._connection is None:
            # Metadata queries are tiny; one thread avoids DuckDB's per-query fan-out cost.
            self._connection = duckdb.connect(":memory:", config={"threads": 1})
        return self._connection

    @contextmanager
    def cursor(
        self, path: str, description: str, schema: str, signature: tuple
    ) -> Iterator[tuple[duckdb.DuckDBPyConnection, _Copy]]:
        """A cursor whose default schema is ``schema`` of a copy of ``path`` matching
        ``signature`` (:func:`file_signature`, taken by the caller), and the copy."""
        with self._lock:
            entry = self._files.get(path)
            if entry is None or entry.signature != signature:
                if entry is not None:
                    self._retire(entry)
                entry = self._copy(path, description)
                self._files[path] = entry
            entry.users += 1
            instance = self._instance()
            idle = entry.idle.setdefault(schema, [])
            cursor = idle.pop() if idle else None
            self._drain()
        try:
            if cursor is None:
                cursor = instance.cursor()
                # once per pooled cursor, not per query
                cursor.execute(f"USE {entry.alias}.{_identifier(schema)}")
            yield cursor, entry
        finally:
            with self._lock:
                entry.users -= 1
                if cursor is not None:
                    idle.append(cursor)
                if entry.retired and entry.users == 0:
                    self._drop(entry)
                self._drain()

    def _copy(self, path: str, description: str) -> _Copy:
        """Copy the catalog (and its log) untorn, and attach the copy read-only."""
        if not os.path.exists(path):
            raise CatalogNotFoundError(
                f"{description} does not exist; pass the path of the .ducklake catalog file "
                "(or 'sqlite:...' / 'postgres:...' for other catalog databases)"
            )
        if not os.path.isfile(path):
            raise CatalogError(f"{description} is not a file; pass the .ducklake catalog file")
        deadline = time.monotonic() + COPY_TIMEOUT_SECONDS
        directory = tempfile.mkdtemp(prefix="ducklake-catalog-")
        target = os.path.join(directory, "catalog.duckdb")
        try:
            while True:
                signature = file_signature(path)
                newest = max(s[3] for s in signature if s is not None)
                quiet_for = (time.time_ns() - newest) / 1e9
                if quiet_for >= QUIET_SECONDS:
                    _copy_files(path, target, description)
                    if file_signature(path) == signature:
                        break
                    quiet_for = 0.0
                if time.monotonic() > deadline:
                    raise CatalogLockedError(
                        f"{description} kept changing for {COPY_TIMEOUT_SECONDS:.0f} s while "
                        "being read (a writer committing without pause); retry the query"
                    )
                # until the files were left alone for QUIET_SECONDS (not a whole period more)
                time.sleep(min(QUIET_SECONDS, max(QUIET_SECONDS - quiet_for, 0.001)))
            entry = _Copy(path, f"ducklake_catalog_{next(self._aliases)}", signature, directory)
            _attach(self._instance(), target, entry.alias, description)
            return entry
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise

    def _retire(self, entry: _Copy) -> None:
        entry.retired = True
        if self._files.get(entry.path) is entry:
            del self._files[entry.path]
        if entry.users == 0:
            self._drop(entry)

    def _drop(self, entry: _Copy) -> None:
        """Detach a copy and delete it; a failed detach (a damaged file can invalidate the
        whole instance) starts over with a new instance."""
        for cursors in entry.idle.values():
            for cursor in cursors:
                cursor.close()
        entry.idle.clear()
        if self._connection is not None:
            try:
                self._connection.execute(f"DETACH {entry.alias}")
            except duckdb.Error:
                connection, self._connection = self._connection, None
                for other in self._files.values():
                    other.retired = True
                self._files.clear()
                try:
                    connection.close()
                except duckdb.Error:
                    pass
        shutil.rmtree(entry.directory, ignore_errors=True)

    def shutdown(self) -> None:
        """Close the instance and delete the copies before the interpreter finalises."""
        with self._lock:
            directories = [e.directory for e in self._files.values()]
            self._files.clear()
            if self._connection is not None:
                self._connection.close()
                self._connection = None
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)


def _copy_files(path: str, target: str, description: str) -> None:
    try:
        shutil.copyfile(path, target)
        if os.path.exists(path + ".wal"):
            shutil.copyfile(path + ".wal", target + ".wal")
        elif os.path.exists(target + ".wal"):
            os.remove(target + ".wal")
    except FileNotFoundError:
        pass  # a checkpoint removed the log meanwhile: the signature check retries
    except OSError as exc:
        raise CatalogError(
            f"{description} cannot be read ({exc}); check that this process may read the "
            "file and its directory"
        ) from exc


def _attach(instance: duckdb.DuckDBPyConnection, target: str, alias: str, description: str):
    literal = "'" + target.replace("'", "''") + "'"
    try:
        instance.execute(f"ATTACH {literal} AS {alias} (TYPE duckdb, READ_ONLY)")
    except duckdb.Error as exc:
        raise _attach_error(exc, description) from exc


def _attach_error(exc: duckdb.Error, description: str) -> CatalogError:
    text = str(exc)
    lowered = text.lower()
    # (not just "lock": "block" is in every checksum error)
    if any(
        w in lowered for w in ("could not set lock", "conflicting lock", "file handle conflict")
    ):
        return CatalogLockedError(
            f"{description} is locked by another process that has it attached "
            "(DuckDB files allow one writer process and no concurrent readers). Detach it "
            "there, or use a SQLite or PostgreSQL catalog for concurrent access."
        )
    if "read a database file with version number" in text and "newer version" in text:
        return UnsupportedVersionError(
            f"{description} was written by a newer DuckDB than the installed duckdb "
            f"{duckdb.__version__} can open ({text.splitlines()[0].removeprefix('IO Error: ')}); "
            "this catalog needs duckdb >= 2 to open; pip install -U duckdb"
        )
    if "not a valid DuckDB database" in text:
        return NotADuckLakeCatalogError(
            f"{description} is not a DuckDB database file; pass the DuckLake "
            "catalog file (or 'sqlite:...' / 'postgres:...')"
        )
    return catalog_error(exc, description)


_SHARED = _SharedInstance()
atexit.register(_SHARED.shutdown)


class DuckDBBackend:
    """A DuckLake catalog stored in a DuckDB database file."""

    inlined_values_are_text = False

    def __init__(self, path: str, metadata_schema: str | None = None) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))
        self.metadata_schema = metadata_schema
        schema = f" (metadata schema {metadata_schema!r})" if metadata_schema else ""
        self.description = f"DuckDB catalog {self.path}{schema}"
        self.cache: dict = {}
        _SHARED.hold(self.path)
        self._closed = weakref.finalize(self, _SHARED.release, self.path)

    def __reduce__(self):
        return (DuckDBBackend, (self.path, self.metadata_schema))

    @contextmanager
    def session(self) -> Iterator[_DuckDBSession]:
        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to read it again"
            )
        signature = file_signature(self.path)
        self._check_identity(signature)
        schema = self.metadata_schema or "main"
        with _SHARED.cursor(self.path, self.description, schema, signature) as (cursor, copy):
            yield _DuckDBSession(cursor, copy.alias, schema, self.cache, self.description, copy)

    def write_session(self):
        """One read-write transaction on the catalog file itself (``_writers``): for a
        commit only, which holds the file's lock for as long as it runs."""
        from ._writers import duckdb_writer

        self._require_open()
        return duckdb_writer(self.path, self.description, self.metadata_schema)

    def _require_open(self) -> None:
        if not self._closed.alive:
            raise CatalogClosedError(
                f"{self.description} was closed; open a new DuckLakeCatalog to write to it"
            )

    def _check_identity(self, signature: tuple) -> None:
        """Drop every memo when another file was renamed over the catalog path."""
        identity = signature[0][:2] if signature[0] is not None else None
        if identity != self.cache.get("file_identity"):
            self.cache.clear()
            self.cache["file_identity"] = identity

    def close(self) -> None:
        """Stop holding the private copy (the catalog file itself is never held open): the
        last backend of the file to close deletes it. Later sessions raise
        ``CatalogClosedError``."""
        self._closed()
        self.cache.clear()
