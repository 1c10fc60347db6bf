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
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable

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
        self._max_entries = max_entries
        self._max_cost = max_cost
        self._entries: OrderedDict[tuple[int, Hashable], tuple[object, int]] = OrderedDict()
        self._owners: dict[int, weakref.ref] = {}
        self._cost = 0
        self._lock = threading.Lock()
        # owners' weak references whose owner was freed: dropped at the next call (the
        # callback may run inside any allocation, even one made under the lock)
        self._freed: list[tuple[int, weakref.ref]] = []

    def get(self, owner: object, key: Hashable, default: object = MISSING) -> object:
        """The value kept for ``(owner, key)``, or ``default``."""
        with self._lock:
            self._purge()
            found = self._entries.get((id(owner), key))
            if found is None or self._owners.get(id(owner), _dead)() is not owner:
                return default
            self._entries.move_to_end((id(owner), key))
            return found[0]

    def put(self, owner: object, key: Hashable, value: object, cost: int = 0) -> None:
        """Keep ``value`` for ``(owner, key)`` while ``owner`` lives and the budget allows."""
        with self._lock:
            self._purge()
            ref = self._owners.get(id(owner))
            if ref is None or ref() is not owner:
                self._drop_owner(id(owner))
                self._owners[id(owner)] = weakref.ref(owner, self._owner_freed(id(owner)))
            entry = (id(owner), key)
            if entry in self._entries:
                return
            self._entries[entry] = (value, cost)
            self._cost += cost
            while len(self._entries) > self._max_entries or (
                self._max_cost is not None
                and self._cost > self._max_cost
                and len(self._entries) > 1
            ):
                (owner_id, _), (_, dropped) = self._entries.popitem(last=False)
                self._cost -= dropped
                if not any(k[0] == owner_id for k in self._entries):
                    self._owners.pop(owner_id, None)

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
        for entry in [k for k in self._entries if k[0] == owner_id]:
            self._cost -= self._entries.pop(entry)[1]


def _dead() -> None:
    return None
