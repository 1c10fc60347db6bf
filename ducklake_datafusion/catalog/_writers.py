"""Read-write transactions on each kind of catalog database, for commits only.

Reads never come here: they keep their read-only sessions (a DuckDB file is even read from
a private copy). A commit opens its own connection, runs one transaction and closes it:

* DuckDB file: the file itself, opened read-write for the commit and closed at once, so
  the file lock is held for milliseconds; a writer that has it attached elsewhere makes
  the commit wait (up to ``LOCK_WAIT_SECONDS``) and then fail with ``CatalogLockedError``.
  Opening a file does not change its storage version.
* SQLite: ``BEGIN IMMEDIATE`` takes the write lock up front (commits serialise there).
* PostgreSQL and MySQL/MariaDB: a transaction in which the new ``ducklake_snapshot`` row
  is inserted first; a concurrent commit of the same snapshot id fails on the primary key
  (or as a deadlock), which :class:`SnapshotRace` reports so the commit can start over.

Each session speaks the query modules' ``?`` SQL and the :class:`MetadataSession` protocol
(with a private cache, so nothing memoised for reads is used or polluted), plus
``execute`` and ``adapt`` (a timestamp or UUID in the form the database stores).
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa

from ..errors import (
    CatalogError,
    CatalogLockedError,
    CatalogReadOnlyError,
    CommitStateUnknownError,
)
from ._rows import conform_to, rows_to_arrow
from ._session import SessionBase

__all__ = [
    "SnapshotRace",
    "WriteSession",
    "duckdb_writer",
    "mysql_writer",
    "postgres_writer",
    "sqlite_writer",
]

# How long a commit waits for a DuckDB-file (or SQLite) catalog another process holds:
# ``DUCKLAKE_LOCK_WAIT_SECONDS`` in the environment of the process that commits (for Spark,
# the driver's), default 30.
LOCK_WAIT_SECONDS = float(os.environ.get("DUCKLAKE_LOCK_WAIT_SECONDS") or 30.0)


def commit_unknown(description: str, exc: BaseException) -> CommitStateUnknownError:
    """The error of a ``COMMIT`` whose answer was lost with the connection."""
    return CommitStateUnknownError(
        f"{description}: the connection failed while the catalog database committed "
        f"({exc}); the snapshot may or may not exist, so this write's files were kept: "
        "look at the table's latest snapshot before writing again"
    )


def send_commit(commit, description: str, lost) -> None:
    """Run the database's ``commit()``: an error for which ``lost(exc)`` holds (the
    connection broke, so the answer never came) is :class:`CommitStateUnknownError`; every
    other error is the database's refusal, after which nothing was committed."""
    try:
        commit()
    except Exception as exc:
        if lost(exc):
            raise commit_unknown(description, exc) from exc
        raise


class SnapshotRace(Exception):
    """Another commit took the snapshot id this one tried to add (internal: retried)."""


class WriteSession(SessionBase):
    """One read-write transaction; ``rows`` and ``execute`` take ``?`` SQL.

    ``TEXT_KEEPS_NUL``: whether a text value may hold a NUL character (PostgreSQL refuses
    it; DuckDB's SQLite and MySQL catalogs store NULL instead, and so do we).
    """

    TEXT_KEEPS_NUL = False
    DIALECT = ""

    def __init__(self, description: str) -> None:
        super().__init__({}, description)
        self._last_names: list[str] = []  # the last query's column names (``arrow``)

    def execute(self, sql: str, params: Sequence[object] = (), *, race_point: bool = False):
        """Run a statement. ``race_point``: a duplicate key here means another commit took
        the snapshot id first (:class:`SnapshotRace`), not a broken catalog."""
        self.rows_or_none(sql, params, race_point)

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        return self.rows_or_none(sql, params, False) or []

    def rows_or_none(self, sql: str, params: Sequence[object], race_point: bool):
        raise NotImplementedError

    def arrow(self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None):
        cursor_rows = self.rows(sql, params)
        names = self._last_names
        table = rows_to_arrow(names, cursor_rows)
        return table if schema is None else conform_to(table, schema)

    def adapt(self, value: object) -> object:
        return value

    def id_list(self, ids: Sequence[int]) -> tuple[str, list]:
        """``IN (...)``'s inside for ``ids`` and its parameters: one ``?`` each."""
        return ", ".join("?" for _ in ids), [int(i) for i in ids]

    def insert_many(self, table: str, names: Sequence[str], rows: Sequence[Sequence]) -> bool:
        """Insert ``rows`` (values in ``names``' order) a faster way than ``VALUES`` lists,
        if this database has one; whether it did."""
        return False


def _utc_naive(value: _dt.datetime) -> _dt.datetime:
    return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)


def _never_lost(exc: BaseException) -> bool:
    return False


# -- DuckDB files -----------------------------------------------------------------------------


class _DuckDBWriteSession(WriteSession):
    DIALECT = "duckdb"  # the catalog database's SQL (an inlined-data table's column types)
    INTEGER_OF_TEXT = "TRY_CAST({0} AS BIGINT)"
    TEXT_KEEPS_NUL = True

    def __init__(self, connection, description: str, schema: str) -> None:
        super().__init__(description)
        self._connection = connection
        self.TABLES_SQL = (
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            f"AND schema_name = '{schema.replace(chr(39), chr(39) * 2)}'"
        )

    def column_names(self, table: str) -> tuple[str, ...]:
        from ._duckdb_tables import bound_column_names

        return bound_column_names(self._connection, table, self.description)

    def id_list(self, ids: Sequence[int]) -> tuple[str, list]:
        # one list parameter: binding ten thousand ``?`` cost a compaction's commit 60 ms
        # a statement
        return "SELECT unnest(?::BIGINT[])", [[int(i) for i in ids]]

    def insert_many(self, table: str, names: Sequence[str], rows: Sequence[Sequence]) -> bool:
        """Many rows as an Arrow table scanned by the INSERT: 10,000 files scheduled for
        deletion took 0.33 s as ``VALUES`` lists (binding 40,000 parameters), ~0.03 s so.
        Rows whose values Arrow cannot type as one column each take the ``VALUES`` way."""
        try:
            data = pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            return False
        view = f"__ducklake_rows_{uuid.uuid4().hex}"
        columns = ", ".join(names)
        self._connection.register(view, data)
        try:
            self.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {view}")
        finally:
            self._connection.unregister(view)
        return True

    def rows_or_none(self, sql, params, race_point):
        import duckdb

        try:
            cursor = self._connection.execute(sql, list(params))
            self._last_names = [d[0] for d in cursor.description or ()]
            return cursor.fetchall() if cursor.description else None
        except duckdb.ConstraintException as exc:
            if race_point:
                raise SnapshotRace(str(exc)) from exc
            raise CatalogError(f"{self.description}: {exc}") from exc
        except duckdb.Error as exc:
            raise CatalogError(f"{self.description}: {exc}") from exc


@contextmanager
def duckdb_writer(path: str, description: str, schema: str | None) -> Iterator[WriteSession]:
    import duckdb

    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            connection = duckdb.connect(path, config={"threads": 1})
            break
        except duckdb.Error as exc:
            text = str(exc).lower()
            if "lock" in text or "conflict" in text:  # (in this process: "file handle conflict")
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise CatalogLockedError(
                    f"{description} stayed attached elsewhere (another process, or another "
                    f"DuckDB connection of this one) for {LOCK_WAIT_SECONDS:g} s, so nothing "
                    "was committed; detach the lake there (a DuckDB file has one writer at a "
                    "time) and write again"
                ) from exc
            if "read-only" in text or "permission" in text or "readonly" in text:
                raise CatalogReadOnlyError(
                    f"{description} cannot be opened for writing ({exc}); check that this "
                    "process may write the file and its directory"
                ) from exc
            raise CatalogError(f"{description} cannot be opened for writing: {exc}") from exc
    try:
        name = schema or "main"
        connection.execute('USE "' + name.replace('"', '""') + '"')
        connection.execute("BEGIN TRANSACTION")
        session = _DuckDBWriteSession(connection, description, name)
        try:
            yield session
            # a file of this machine: a failed COMMIT is DuckDB's refusal, never a lost answer
            send_commit(lambda: connection.execute("COMMIT"), description, _never_lost)
        except BaseException:
            try:
                connection.execute("ROLLBACK")
            except duckdb.Error:
                pass
            raise
    except duckdb.Error as exc:
        raise CatalogError(
            f"{description}: the commit failed ({exc}); nothing was committed"
        ) from exc
    finally:
        connection.close()


# -- SQLite -----------------------------------------------------------------------------------


class _SQLiteWriteSession(WriteSession):
    DIALECT = "sqlite"  # the catalog database's SQL (an inlined-data table's column types)
    TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table'"
    COLUMNS_SQL = "SELECT name FROM pragma_table_info(?) ORDER BY cid"
    INTEGER_OF_TEXT = None

    def __init__(self, connection: sqlite3.Connection, description: str) -> None:
        super().__init__(description)
        self._connection = connection

    def rows_or_none(self, sql, params, race_point):
        try:
            cursor = self._connection.execute(sql, list(params))
        except sqlite3.IntegrityError as exc:
            if race_point:
                raise SnapshotRace(str(exc)) from exc
            raise CatalogError(f"{self.description}: {exc}") from exc
        except sqlite3.Error as exc:
            raise _sqlite_error(exc, self.description) from exc
        self._last_names = [d[0] for d in cursor.description or ()]
        return cursor.fetchall() if cursor.description else None

    def adapt(self, value):
        if isinstance(value, _dt.datetime):
            # DuckDB's spelling in SQLite catalogs: microseconds without trailing zeros
            text = _utc_naive(value).strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")
            return text + "+00"
        if isinstance(value, uuid.UUID):
            return str(value)
        return value


def _sqlite_error(exc: sqlite3.Error, description: str) -> CatalogError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return CatalogLockedError(
            f"{description} stayed locked by another writer for {LOCK_WAIT_SECONDS:.0f} s "
            f"({text}); nothing was committed, write again"
        )
    if "readonly" in text or "read-only" in text:
        return CatalogReadOnlyError(
            f"{description} cannot be written ({text}); check that this process may write "
            "the file and its directory"
        )
    return CatalogError(f"{description}: {text}")


@contextmanager
def sqlite_writer(path: str, description: str) -> Iterator[WriteSession]:
    try:
        connection = sqlite3.connect(path, timeout=LOCK_WAIT_SECONDS, isolation_level=None)
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, description) from exc
    try:
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _sqlite_error(exc, description) from exc
        try:
            yield _SQLiteWriteSession(connection, description)
            send_commit(lambda: connection.execute("COMMIT"), description, _never_lost)
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, description) from exc
    finally:
        connection.close()


# -- PostgreSQL -------------------------------------------------------------------------------


class _PostgresWriteSession(WriteSession):
    DIALECT = "postgres"  # the catalog database's SQL (an inlined-data table's column types)
    INTEGER_OF_TEXT = None

    def __init__(self, connection, description: str, read_sql) -> None:
        super().__init__(description)
        self._connection = connection
        self.TABLES_SQL = read_sql.TABLES_SQL
        self.COLUMNS_SQL = read_sql.COLUMNS_SQL

    def rows_or_none(self, sql, params, race_point):
        import psycopg

        try:
            cursor = self._connection.execute(sql.replace("?", "%s"), list(params))
        except psycopg.errors.UniqueViolation as exc:
            if race_point:
                raise SnapshotRace(str(exc)) from exc
            raise _postgres_error(exc, self.description) from exc
        except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as exc:
            raise SnapshotRace(str(exc)) from exc
        except psycopg.Error as exc:
            raise _postgres_error(exc, self.description) from exc
        self._last_names = [d.name for d in cursor.description or ()]
        return cursor.fetchall() if cursor.description else None


def _postgres_error(exc, description: str) -> CatalogError:
    import psycopg

    text = str(exc).strip()
    if isinstance(
        exc, (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege)
    ):
        return CatalogReadOnlyError(
            f"{description} cannot be written ({text}); connect as a user who may write the "
            "catalog's tables"
        )
    return CatalogError(f"{description}: {text}")


@contextmanager
def postgres_writer(connect, description: str, read_sql) -> Iterator[WriteSession]:
    """``connect()`` returns a new psycopg connection (search path and time zone set)."""
    import psycopg

    connection = connect()
    try:
        try:
            yield _PostgresWriteSession(connection, description, read_sql)
        except BaseException:
            connection.rollback()
            raise
        try:
            send_commit(connection.commit, description, lambda exc: connection.broken)
        except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as exc:
            raise SnapshotRace(str(exc)) from exc
    except psycopg.Error as exc:
        raise _postgres_error(exc, description) from exc
    finally:
        connection.close()


# -- MySQL / MariaDB --------------------------------------------------------------------------

_DUPLICATE_KEY = 1062
_DEADLOCK = (1213, 1205)
# a table another writer created after this transaction's snapshot began: the commit is
# made again on the catalog as it now is
_TABLE_DEF_CHANGED = 1412
_READ_ONLY = (1142, 1290, 1792)
# the client's own codes for a connection that broke (gone away, lost, closed)
_CONNECTION_LOST = (0, 2006, 2013, 2055)


def _mysql_connection_lost(exc: BaseException) -> bool:
    import pymysql

    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    return isinstance(exc, pymysql.err.OperationalError) and code in _CONNECTION_LOST


class _MySQLWriteSession(WriteSession):
    DIALECT = "mysql"  # the catalog database's SQL (an inlined-data table's column types)
    INTEGER_OF_TEXT = None

    def __init__(self, connection, description: str, read_sql, translate_sql) -> None:
        super().__init__(description)
        self._connection = connection
        self._translate_sql = translate_sql
        self.TABLES_SQL = read_sql.TABLES_SQL
        self.COLUMNS_SQL = read_sql.COLUMNS_SQL

    def rows_or_none(self, sql, params, race_point):
        import pymysql

        cursor = self._connection.cursor()
        try:
            cursor.execute(self._translate_sql(sql, params), tuple(params))
        except pymysql.MySQLError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if (code == _DUPLICATE_KEY and race_point) or code in (*_DEADLOCK, _TABLE_DEF_CHANGED):
                raise SnapshotRace(str(exc)) from exc
            raise _mysql_error(exc, self.description) from exc
        self._last_names = [d[0] for d in cursor.description or ()]
        return list(cursor.fetchall()) if cursor.description else None

    def adapt(self, value):
        if isinstance(value, _dt.datetime):
            # a datetime without a fraction, as DuckDB's MySQL catalogs store snapshot
            # times (cut here: MySQL would round it, perhaps past the next commit's time)
            return _utc_naive(value).replace(microsecond=0)
        if isinstance(value, uuid.UUID):
            return str(value)
        return value


def _mysql_error(exc, description: str) -> CatalogError:
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1] if len(exc.args) > 1 else exc)
    if code in _READ_ONLY:
        return CatalogReadOnlyError(
            f"{description} cannot be written ({text}); connect as a user who may write the "
            "catalog's tables"
        )
    return CatalogError(f"{description}: {text}")


@contextmanager
def mysql_writer(connect, description: str, read_sql, translate_sql) -> Iterator[WriteSession]:
    """``connect()`` returns a new PyMySQL connection (ANSI quotes, UTC)."""
    import pymysql

    connection = connect()
    try:
        try:
            with connection.cursor() as cursor:
                cursor.execute("START TRANSACTION")
            yield _MySQLWriteSession(connection, description, read_sql, translate_sql)
        except BaseException:
            try:
                connection.rollback()
            except pymysql.MySQLError:
                pass
            raise
        try:
            send_commit(connection.commit, description, _mysql_connection_lost)
        except pymysql.MySQLError as exc:
            if exc.args and exc.args[0] in _DEADLOCK:
                raise SnapshotRace(str(exc)) from exc
            raise
    except pymysql.MySQLError as exc:
        raise _mysql_error(exc, description) from exc
    finally:
        connection.close()
