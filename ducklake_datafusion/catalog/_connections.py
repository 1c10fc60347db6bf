"""Per-thread catalog connections that die with their backend and that ``close()`` reaches.

SQLite and PostgreSQL catalogs keep one connection per thread (neither connection may be
shared by threads running queries at once). The threads are not all ours: DataFusion's
runtime threads and Spark's planning workers call back into the planner. A plain
``threading.local`` holds each thread's connection for as long as the thread lives *and*
the local does, but only the thread itself can reach it, so a catalog could not release
its connections at once, and nothing could be asked how many it had open.

:class:`ThreadConnections` keeps each thread's connection in a ``threading.local`` (so a
thread finds its own without a lock) inside a small holder that a ``WeakSet`` also sees:

* the backend dropped: the local goes with it, and with it every holder (CPython clears a
  local's per-thread values from all threads when the local is freed), so each connection
  is freed, and :meth:`close_all`, registered as the backend's finaliser, closes any still
  open;
* a thread ended: its values go, and the holder leaves the ``WeakSet``;
* ``close()``: every connection still held, on every thread, is closed now.

Nothing here refers to the backend, so a finaliser may hold it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

__all__ = ["ThreadConnections"]


class _Held:
    """One thread's connection (a holder, since ``sqlite3.Connection`` takes no weak
    reference) and what its backend keeps beside it (a file identity)."""

    __slots__ = ("__weakref__", "connection", "extra")

    def __init__(self, connection: object, extra: object) -> None:
        self.connection = connection
        self.extra = extra


class ThreadConnections:
    """Each thread's connection to one catalog database; ``close_all`` closes them all.

    Args:
        close: closes one connection (errors are the caller's to swallow: a connection
            that cannot be closed cleanly is dropped all the same).
    """

    def __init__(self, close: Callable[[object], None]) -> None:
        self._close = close
        self._local = threading.local()
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> tuple[object, object] | None:
        """This thread's ``(connection, extra)``, or ``None``."""
        held = getattr(self._local, "held", None)
        return None if held is None else (held.connection, held.extra)

    def put(self, connection: object, extra: object = None) -> None:
        """Keep ``connection`` as this thread's (closing the one it replaces)."""
        held = _Held(connection, extra)
        with self._lock:
            closed = self.closed
            if not closed:
                self._all.add(held)
        if closed:
            self._close_quietly(connection)
            raise RuntimeError("connections were closed")  # the backend raises its own first
        self.forget()
        self._local.held = held

    def forget(self) -> None:
        """Close and drop this thread's connection (after an error that may have broken it)."""
        held = getattr(self._local, "held", None)
        if held is None:
            return
        self._local.held = None
        with self._lock:
            self._all.discard(held)
        self._close_quietly(held.connection)

    def open_count(self) -> int:
        """How many threads hold a connection now (for tests and the soak benchmark)."""
        with self._lock:
            return len(self._all)

    def close_all(self) -> None:
        """Close every thread's connection; later ``put`` calls are refused."""
        with self._lock:
            self.closed = True
            held = list(self._all)
            self._all.clear()
        for each in held:
            connection, each.connection = each.connection, None
            if connection is not None:
                self._close_quietly(connection)

    def _close_quietly(self, connection: object) -> None:
        try:
            self._close(connection)
        except Exception:  # noqa: BLE001, S110 - a broken connection is dropped all the same
            pass
