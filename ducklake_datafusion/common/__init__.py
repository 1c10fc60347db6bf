"""What every layer shares and no layer owns: the one cache model and the secrets registry.

``LRUCache`` is the model of every per-process memo (least recently used out, bounded by
count and/or weight, a failure never cached); ``remember_secret``/``scrub`` keep every
credential this process was given out of every message it makes. Both sit below the
layers (``catalog``/``pathres`` import them as much as the engine adapters do), so they
live here rather than in the package's root, which holds only its public surface.
"""

from ._lru import CacheStats, LRUCache
from ._secrets import remember_secret, scrub

__all__ = ["CacheStats", "LRUCache", "remember_secret", "scrub"]
