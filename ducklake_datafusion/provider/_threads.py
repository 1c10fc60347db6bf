"""Planning DataFusion queries from inside ``SchemaProvider.table()``.

``table()`` runs inside DataFusion's planner, where planning another query on the same
thread panics ("Cannot start a runtime from within a runtime"). Views and native scans
therefore build their DataFrames on a thread of their own, one per call, so that
lookups nested inside such a build (a view over a view) get threads of their own too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["on_own_thread"]

T = TypeVar("T")


def on_own_thread(build: Callable[[], T], name: str) -> T:
    """``build()`` run on a new thread; its exception is raised on the caller's."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = build()
        except Exception as exc:  # noqa: BLE001 - re-raised on the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
