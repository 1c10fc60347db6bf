"""The package's one cache model (``_lru.LRUCache``): bounds, eviction order, failures.

Every per-process memo is one of these, so its rules are checked here once: least
recently used out first, by count and by weight; an entry heavier than the weight bound
refused (or kept alone); a failed computation never cached; consistent under threads.
"""

from __future__ import annotations

import threading

import pytest

from ducklake_datafusion.common import CacheStats, LRUCache


def test_count_bound_evicts_the_least_recently_used():
    cache = LRUCache(max_entries=3)
    for key in "abc":
        cache.put(key, key.upper())
    assert cache.get("a") == "A"  # a is now the most recent: b goes first
    cache.put("d", "D")
    assert cache.ordered_keys() == ["c", "a", "d"]
    assert "b" not in cache and cache.get("b") is None and len(cache) == 3
    cache.put("e", "E")
    assert cache.ordered_keys() == ["a", "d", "e"]
    assert cache.stats().evictions == 2


def test_put_replaces_and_refreshes_an_entry():
    cache = LRUCache(max_entries=2, max_weight=10)
    cache.put("a", 1, weight=4)
    cache.put("b", 2, weight=4)
    cache.put("a", 3, weight=5)  # replaced: weight 5 + 4, a most recent
    assert cache.ordered_keys() == ["b", "a"] and cache.get("a") == 3 and cache.weight == 9


def test_weight_bound_evicts_until_the_entries_fit():
    cache = LRUCache(max_weight=10)
    cache.put("a", "x", weight=4)
    cache.put("b", "y", weight=4)
    cache.put("c", "z", weight=4)  # 12 > 10: a goes
    assert cache.ordered_keys() == ["b", "c"] and cache.weight == 8
    cache.put("d", "w", weight=10)  # needs every other entry gone
    assert cache.ordered_keys() == ["d"] and cache.weight == 10


def test_weight_from_the_value_when_none_is_given():
    cache = LRUCache(max_weight=5, weigh=len)
    cache.put("a", "abc")
    cache.put("b", "de")
    assert cache.weight == 5 and len(cache) == 2
    cache.put("c", "f")
    assert cache.ordered_keys() == ["b", "c"] and cache.weight == 3
    assert cache.get_or_compute("d", lambda: "ghi") == "ghi" and cache.weight == 4
    assert cache.ordered_keys() == ["c", "d"]


def test_an_oversized_entry_is_refused_without_evicting_anything():
    cache = LRUCache(max_weight=10)
    cache.put("a", 1, weight=6)
    cache.put("big", 2, weight=11)
    assert cache.ordered_keys() == ["a"] and cache.weight == 6 and cache.get("big") is None
    cache.put("a", 3, weight=11)  # an oversized replacement drops the old value too
    assert len(cache) == 0 and cache.weight == 0
    assert cache.get_or_compute("big", lambda: 4, weight=11) == 4  # returned, not kept
    assert "big" not in cache


def test_an_oversized_entry_is_kept_alone_when_asked():
    cache = LRUCache(max_entries=10, max_weight=10, keep_oversized=True)
    cache.put("a", 1, weight=3)
    cache.put("b", 2, weight=3)
    cache.put("big", 3, weight=25)
    assert cache.ordered_keys() == ["big"] and cache.weight == 25
    cache.put("c", 4, weight=1)  # 26 > 10: the oversized one goes now
    assert cache.ordered_keys() == ["c"] and cache.weight == 1


def test_a_failed_computation_is_not_cached():
    cache = LRUCache(max_entries=4)
    calls = []

    def failing():
        calls.append("fail")
        raise OSError("storage hiccup")

    for _ in range(2):
        with pytest.raises(OSError, match="hiccup"):
            cache.get_or_compute("k", failing)
    assert calls == ["fail", "fail"] and "k" not in cache and len(cache) == 0
    assert cache.get_or_compute("k", lambda: "ok") == "ok"
    assert cache.get_or_compute("k", failing) == "ok"  # now cached: not computed again
    assert calls == ["fail", "fail"]


def test_none_is_a_value_that_can_be_cached():
    cache = LRUCache(max_entries=2)
    calls = []
    for _ in range(3):
        assert cache.get_or_compute("k", lambda: calls.append(1)) is None
    assert calls == [1] and "k" in cache
    assert cache.get("missing", "default") == "default"


def test_pop_clear_and_stats():
    cache = LRUCache(max_entries=3, max_weight=100)
    cache.put("a", 1, weight=7)
    cache.put("b", 2, weight=5)
    assert cache.get("a") == 1 and cache.get("zz") is None
    assert cache.pop("a") == 1 and cache.pop("a", "gone") == "gone"
    assert cache.weight == 5
    cache.clear()
    assert len(cache) == 0 and cache.weight == 0
    assert cache.stats() == CacheStats(entries=0, weight=0, hits=1, misses=1, evictions=0)


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="max_entries"):
        LRUCache(max_entries=0)
    with pytest.raises(ValueError, match="max_weight"):
        LRUCache(max_weight=-1)


def test_threads_keep_the_bounds_and_the_weight_consistent():
    cache = LRUCache(max_entries=50, max_weight=400, weigh=lambda v: v[1])
    failures: list[Exception] = []
    start = threading.Barrier(8)

    def work(worker: int) -> None:
        try:
            start.wait()
            for i in range(2000):
                key = (i * 7 + worker) % 120
                value = cache.get_or_compute(key, lambda k=key: (k, k % 13))
                assert value == (key, key % 13)
                if i % 97 == 0:
                    cache.pop(key)
        except Exception as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stats = cache.stats()
    kept = cache.ordered_keys()
    assert stats.entries == len(kept) <= 50
    assert stats.weight == sum(k % 13 for k in kept) <= 400
    assert stats.hits + stats.misses >= 8 * 2000 and stats.evictions > 0


def test_threads_racing_on_a_missing_key_all_get_the_value_stored_first():
    cache = LRUCache(max_entries=4)
    both_computing = threading.Barrier(2, timeout=10)
    results: list[object] = [None, None]

    def compute() -> object:
        both_computing.wait()  # neither stored yet: both compute
        return object()

    def work(index: int) -> None:
        results[index] = cache.get_or_compute("k", compute)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results[0] is not None and results[0] is results[1] is cache.get("k")
    assert len(cache) == 1


def test_owned_entries_built_on_the_lru_go_with_their_owner():
    import gc

    from ducklake_datafusion.provider._owned_cache import MISSING, OwnedCache

    class Owner:
        pass

    cache = OwnedCache(max_entries=3, max_cost=10)
    first, second = Owner(), Owner()
    cache.put(first, "a", 1, cost=2)
    cache.put(second, "a", 2, cost=2)
    assert cache.get(first, "a") == 1 and cache.get(second, "b") is MISSING
    assert cache.owners() == 2 and len(cache) == 2
    del first
    gc.collect()
    assert cache.owners() == 1 and len(cache) == 1  # the freed owner's entry went
    third = Owner()
    cache.put(third, "big", 3, cost=50)  # over the cost: kept alone, second's entry out
    assert cache.get(third, "big") == 3 and cache.get(second, "a") is MISSING
    assert cache.owners() == 1 and len(cache) == 1
    cache.forget(third)
    assert cache.owners() == 0 and len(cache) == 0
