"""The one cache model of the package: a bounded, thread-safe least-recently-used map.

Every per-process memo (parsed footers, decoded delete files, built filesystems, Spark
scans and filters, Rust providers) and every per-catalog metadata memo is one of these,
so each says only what it keeps and how much, never how it evicts:

* bounded by entry count (``max_entries``), by summed weight (``max_weight``: bytes of a
  footer or of decoded positions, files of a provider), or both; the least recently used
  entry goes first (weights are only kept where ``max_weight`` bounds them);
* an entry heavier than ``max_weight`` on its own is refused (nothing else is evicted for
  it), unless ``keep_oversized``: then it is kept alone;
* :meth:`LRUCache.get_or_compute` caches only what ``compute`` returned: an exception
  propagates and leaves nothing behind, so a failure is retried on the next call;
* one lock guards the map, never a computation: two threads missing the same key may both
  compute it, and both get the value stored first.

It lives at the top of the package (shared infrastructure, like ``errors``) so that every
layer may use it; it imports nothing of the package.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CacheStats", "LRUCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_ABSENT = object()


@dataclass(frozen=True)
class CacheStats:
    """A cache's counters since it was made (``clear`` keeps them)."""

    entries: int
    weight: int
    hits: int
    misses: int
    evictions: int


class LRUCache(Generic[K, V]):
    """Least-recently-used entries ``key -> value``, bounded in count and/or weight.

    Args:
        max_entries: the most entries kept (``None``: no count bound).
        max_weight: the most summed weight kept (``None``: no weight bound).
        weigh: an entry's weight from its value, when ``put`` is given none (default:
            every entry weighs 0).
        keep_oversized: keep an entry heavier than ``max_weight`` alone (every other entry
            evicted) instead of refusing it.
    """

    def __init__(
        self,
        max_entries: int | None = None,
        max_weight: int | None = None,
        *,
        weigh: Callable[[V], int] | None = None,
        keep_oversized: bool = False,
    ) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        if max_weight is not None and max_weight < 0:
            raise ValueError(f"max_weight must not be negative, not {max_weight}")
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._weigh = weigh
        self._keep_oversized = keep_oversized
        self._entries: OrderedDict[K, V] = OrderedDict()
        # weights only where they bound the cache: a count-bounded entry costs no more
        self._weights: dict[K, int] | None = None if max_weight is None else {}
        self._weight = 0
        self._hits = self._misses = self._evictions = 0
        self._lock = threading.Lock()

    def get(self, key: K, default=None):
        """The value kept for ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            entry = self._entries.get(key, _ABSENT)
            if entry is _ABSENT:
                self._misses += 1
                return default
            self._hits += 1
            self._entries.move_to_end(key)
            return entry

    def put(self, key: K, value: V, weight: int | None = None) -> None:
        """Keep ``value`` for ``key`` (replacing any), evicting the least recently used.

        ``weight``: the entry's weight (default: ``weigh(value)``, else 0). An entry heavier
        than ``max_weight`` is not kept (unless ``keep_oversized``), and any value kept
        for ``key`` before goes.
        """
        weight = self._weight_of(value, weight)
        with self._lock:
            self._store(key, value, weight)

    def get_or_compute(self, key: K, compute: Callable[[], V], weight: int | None = None) -> V:
        """The value kept for ``key``, else ``compute()``'s, kept (``weight`` as for
        ``put``). An exception of ``compute`` propagates and nothing is kept."""
        found = self.get(key, _ABSENT)
        if found is not _ABSENT:
            return found
        value = compute()
        weight = self._weight_of(value, weight)
        with self._lock:
            entry = self._entries.get(key, _ABSENT)
            if entry is not _ABSENT:  # another thread stored it meanwhile: share that one
                self._entries.move_to_end(key)
                return entry
            self._store(key, value, weight)
        return value

    def pop(self, key: K, default=None):
        """Drop ``key``'s entry; its value, or ``default``."""
        with self._lock:
            entry = self._entries.pop(key, _ABSENT)
            if entry is _ABSENT:
                return default
            self._forget_weight(key)
            return entry

    def ordered_keys(self) -> list[K]:
        """The keys, least recently used first (a copy)."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            if self._weights is not None:
                self._weights.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        """The summed weight of the entries kept (0 without ``max_weight``)."""
        with self._lock:
            return self._weight

    def stats(self) -> CacheStats:
        """Entries, weight and the hit, miss and eviction counts."""
        with self._lock:
            return CacheStats(
                len(self._entries), self._weight, self._hits, self._misses, self._evictions
            )

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def _weight_of(self, value: V, weight: int | None) -> int:
        if weight is not None:
            return weight
        return self._weigh(value) if self._weigh is not None else 0

    def _forget_weight(self, key: K) -> None:
        """(Under the lock.) Drop the weight of ``key``, whose entry went."""
        if self._weights is not None:
            self._weight -= self._weights.pop(key)

    def _store(self, key: K, value: V, weight: int) -> None:
        """(Under the lock.) Replace ``key``'s entry, then evict down to the bounds."""
        if self._entries.pop(key, _ABSENT) is not _ABSENT:
            self._forget_weight(key)
        limit = self.max_weight
        if limit is not None and weight > limit and not self._keep_oversized:
            return
        self._entries[key] = value
        if self._weights is not None:
            self._weights[key] = weight
            self._weight += weight
        while len(self._entries) > 1 and (
            (self.max_entries is not None and len(self._entries) > self.max_entries)
            or (limit is not None and self._weight > limit)
        ):
            dropped, _ = self._entries.popitem(last=False)
            self._forget_weight(dropped)
            self._evictions += 1
