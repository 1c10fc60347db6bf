"""A process-wide, bounded memo whose entries belong to a catalog and never keep it alive.

The Rust providers planned for a snapshot are memoised so that a repeated query plans
nothing again. The memo is process-wide (one budget of entries and files, oldest out),
but each entry belongs to the catalog backend that planned it, and a process-wide dict
keyed by a backend would keep that backend, and with it its open connections and its
private catalog copy, alive for as long as the entry stays: that is how dropped catalogs
used to pile up until PostgreSQL ran out of connections. Here an owner is held weakly:
when it is freed (or ``DuckLakeCatalog.close()`` calls :meth:`OwnedCache.forget`), its
entries go with it.

So that the owner can be freed at all, a value must not refer to its owner (a provider
holding its table would hold the table's backend): the callers keep plain providers and
plain facts here, and build anything that holds a table afresh per query.

The entries themselves are one ``_lru.LRUCache`` keyed by ``(id(owner), key)``; this class
adds only the owners' weak references.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable

from ..common import LRUCache

__all__ = ["OwnedCache"]

MISSING = object()


class OwnedCache:
    """Least-recently-used entries ``(owner, key) -> value``, bounded in count and cost.

    Args:
        max_entries: the most entries kept, across owners.
        max_cost: the most summed cost kept (``put``'s ``cost``: files of a provider),
            though never fewer than one entry.
    """

    def __init__(self, max_entries: int, max_cost: int | None = None) -> None:
        self._entries: LRUCache[tuple[int, Hashable], object] = LRUCache(
            max_entries, max_cost, keep_oversized=True
        )
        self._owners: dict[int, weakref.ref] = {}
        self._lock = threading.Lock()  # over the owners; the entries have their own
        # owners' weak references whose owner was freed: dropped at the next call (the
        # callback may run inside any allocation, even one made under the lock)
        self._freed: list[tuple[int, weakref.ref]] = []

    def get(self, owner: object, key: Hashable, default: object = MISSING) -> object:
        """The value kept for ``(owner, key)``, or ``default``."""
        with self._lock:
            self._purge()
            if self._owners.get(id(owner), _dead)() is not owner:
                return default
            return self._entries.get((id(owner), key), default)

    def put(self, owner: object, key: Hashable, value: object, cost: int = 0) -> None:
        """Keep ``value`` for ``(owner, key)`` while ``owner`` lives and the budget allows."""
        with self._lock:
            self._purge()
            ref = self._owners.get(id(owner))
            if ref is None or ref() is not owner:
                self._drop_owner(id(owner))
                self._owners[id(owner)] = weakref.ref(owner, self._owner_freed(id(owner)))
            evicted = self._entries.stats().evictions
            self._entries.put((id(owner), key), value, weight=cost)
            if self._entries.stats().evictions != evicted:  # owners left without entries go
                kept = {owner_id for owner_id, _ in self._entries.ordered_keys()}
                for owner_id in [o for o in self._owners if o not in kept]:
                    del self._owners[owner_id]

    def forget(self, owner: object) -> None:
        """Drop every entry of ``owner`` now (its catalog was closed)."""
        with self._lock:
            self._purge()
            if self._owners.get(id(owner), _dead)() is owner:
                self._drop_owner(id(owner))

    def owners(self) -> int:
        """How many owners have entries (for tests: it must fall back when catalogs go)."""
        with self._lock:
            self._purge()
            return len(self._owners)

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._entries)

    def _owner_freed(self, owner_id: int):
        # The callback holds the cache weakly too, so a cache dropped (tests) is not kept.
        cache = weakref.ref(self)

        def freed(ref: weakref.ref) -> None:
            held = cache()
            if held is not None:
                held._freed.append((owner_id, ref))  # atomic: no lock taken here

        return freed

    def _purge(self) -> None:
        """(Under the lock.) Drop the entries of owners freed since the last call."""
        while self._freed:
            owner_id, ref = self._freed.pop()
            if self._owners.get(owner_id) is ref:
                self._drop_owner(owner_id)

    def _drop_owner(self, owner_id: int) -> None:
        """(Under the lock.) Forget ``owner_id`` and its entries."""
        self._owners.pop(owner_id, None)
        for entry in [k for k in self._entries.ordered_keys() if k[0] == owner_id]:
            self._entries.pop(entry)


def _dead() -> None:
    return None
