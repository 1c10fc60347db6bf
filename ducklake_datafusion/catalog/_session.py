"""What every backend session shares: table-existence probes and a per-catalog cache.

A query asks several times whether an inlined-data or inlined-delete table exists; listing
the catalog's tables once per session turns those probes into set look-ups. ``cache`` is a
dict owned by the backend object and shared by its sessions: it holds the validated global
settings (format version, data_path), which only change through a catalog migration.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SessionBase"]


class SessionBase:
    """Mixin for backend sessions; subclasses set ``TABLES_SQL`` and implement ``rows``."""

    TABLES_SQL = ""

    def __init__(self, cache: dict) -> None:
        self.cache = cache
        self._tables: frozenset[str] | None = None

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        raise NotImplementedError

    def has_table(self, name: str) -> bool:
        if self._tables is None:
            self._tables = frozenset(row[0] for row in self.rows(self.TABLES_SQL))
        return name in self._tables
