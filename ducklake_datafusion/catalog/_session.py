"""What every backend session shares: the lake version, table probes and a shared cache.

``cache`` is a dict owned by the backend object and shared by all of its sessions. It holds
the validated global settings and the metadata memos of the query modules: per lake
version (:func:`per_version`) and per snapshot (:func:`per_snapshot`), which say why
they stay correct.

A query asks several times whether an inlined-data or inlined-delete table exists; the
catalog's table list is read at most once per lake version, turning those probes into set
look-ups.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..common import LRUCache

__all__ = ["SessionBase", "file_identity", "memoised", "per_snapshot", "per_version"]

# The newest snapshot time is part of the version so that a catalog replaced by another
# one (a restore from backup) with the same latest id and count is still told apart.
VERSION_SQL = (
    "SELECT max(snapshot_id), count(*), CAST(max(snapshot_time) AS VARCHAR) FROM ducklake_snapshot"
)


class SessionBase:
    """Mixin for backend sessions; subclasses set ``TABLES_SQL`` and ``COLUMNS_SQL`` and
    implement ``rows``."""

    TABLES_SQL = ""
    COLUMNS_SQL = ""
    # an integer from statistics text, or None when the database cannot read one safely
    # (``MetadataSession.INTEGER_OF_TEXT``); every backend sets its own
    INTEGER_OF_TEXT: str | None = None
    # whether inlined VARIANT columns must be read as ``CAST(CAST(v AS JSON) AS VARCHAR)``
    # (DuckDB files keep VARIANT values, which DuckDB cannot export to Arrow; MySQL stores
    # them as text, and SQLite and PostgreSQL never inline them)
    VARIANT_AS_JSON = False

    def __init__(self, cache: dict, description: str) -> None:
        self.cache = cache
        self.description = description  # names the catalog in errors
        self._tables: frozenset[str] | None = None
        self._version: tuple[int, int] | None = None

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        raise NotImplementedError

    def lake_version(self) -> tuple[int, int, str | None]:
        """``(latest snapshot id, number of snapshots, newest snapshot time)``, read once per
        session."""
        if self._version is None:
            latest, count, newest = self._read_version()
            newest = None if newest is None else str(newest)
            self._version = (int(latest if latest is not None else -1), int(count), newest)
            cache = self.cache
            previous = cache.get("lake_version")
            if previous is not None and history_replaced(previous, self._version):
                cache.pop("per_snapshot", None)
                cache.pop("per_version", None)
                cache.pop("previous_version", None)
            cache["lake_version"] = self._version
        return self._version

    def _read_version(self) -> tuple:
        """The raw row of ``VERSION_SQL`` (a backend whose catalog cannot have changed
        since it last asked may answer from memory)."""
        return self.rows(VERSION_SQL)[0]

    def column_names(self, table: str) -> tuple[str, ...]:
        """A metadata table's column names, in order (``COLUMNS_SQL``, one ``?``)."""
        return tuple(row[0] for row in self.rows(self.COLUMNS_SQL, [table]))

    def has_table(self, name: str) -> bool:
        if self._tables is None:
            self._tables = self._table_names()
        return name in self._tables

    def _table_names(self) -> frozenset[str]:
        def read() -> frozenset[str]:
            return frozenset(row[0] for row in self.rows(self.TABLES_SQL))

        if self._version is None:  # not known to be a DuckLake catalog yet: no memo
            return read()
        return per_version(self, ("tables",), read)


MEMO_ENTRIES = 256


def per_version(session, key: tuple, compute):
    """Memoise ``compute()`` for as long as the lake version stays the same.

    Every DuckLake commit adds a ``ducklake_snapshot`` row (writes, schema changes,
    compaction, flushing inlined data) and expiring snapshots deletes rows, so
    ``(latest snapshot id, snapshot count)`` changes whenever any metadata row can have
    changed. Comparing it costs one tiny query per session instead of re-reading files,
    deletes, statistics and table lists on every query. The memo holds one version; the
    one before it is kept as ``previous_version`` (until the next change) for
    ``_refresh``, which builds a table's files from the rows that changed since. Each
    version's memo keeps its ``MEMO_ENTRIES`` most recently used answers (``LRUCache``).
    """
    cache = session.cache
    version = session.lake_version()
    held = cache.get("per_version")
    if held is None or held[0] != version:
        if held is not None:
            cache["previous_version"] = held
        held = (version, LRUCache(max_entries=MEMO_ENTRIES))
        cache["per_version"] = held
    return held[1].get_or_compute(key, compute)


def memoised(session, key: tuple):
    """What ``per_version`` holds for ``key`` at the session's lake version, or None."""
    held = session.cache.get("per_version")
    if held is None or held[0] != session.lake_version():
        return None
    return held[1].get(key)


_SNAPSHOT_CACHE_SIZE = 512


def per_snapshot(session, key: tuple, compute):
    """Memoise a lookup whose answer is fixed once its snapshot exists.

    What is live at snapshot S (schemas, tables, columns, inlined-table layouts) never
    changes after S is committed: later commits only add rows beginning after S or end rows
    after S. So names are still looked up on every call (the latest snapshot id is read
    each time), but an unchanged lake costs one small query instead of four. File lists are
    not memoised here but per lake version (``per_version``): maintenance may move the
    rows that describe them. The ``_SNAPSHOT_CACHE_SIZE`` most recently used answers are
    kept (``LRUCache``).
    """
    memo = session.cache.get("per_snapshot")
    if memo is None:
        memo = session.cache["per_snapshot"] = LRUCache(max_entries=_SNAPSHOT_CACHE_SIZE)
    return memo.get_or_compute(key, compute)


def history_replaced(old: tuple, new: tuple) -> bool:
    """Whether the catalog now holds another history than the one memoised.

    Commits only add snapshots (a higher latest id) and expiry only removes old ones (same
    latest id and time), so a lower latest id, or the same id with another time, means
    the catalog was replaced: what was memoised per snapshot id may no longer hold.
    """
    return new[0] < old[0] or (new[0] == old[0] and new[2] != old[2])


def file_identity(info) -> tuple[int, int]:
    """``(device, inode)`` of a catalog file: changes when another file is renamed over it."""
    return (info.st_dev, info.st_ino)
