"""A streaming sink's compaction in the background (the write option ``compact_every``).

A stream that commits a small file per micro-batch leaves a table of many small files.
With ``compact_every=N``, after every N-th batch a stream commits, the planner merges that
table's files (``maintain.merge_adjacent_files``, DuckDB's rules) in a thread of its own, on
a lake opened for it alone, while the stream's next batches commit through the planner as
before: a merge never holds a batch up. The two meet only in the catalog's transactions,
where a merge that lost to a commit fails typed and changes nothing (the next one tries
again). One merge runs at a time; a batch that falls due while one runs starts none. What
the last merge did (or why it failed) is answered with the next batch's commit, which the
jar logs, and written to standard error; the planner waits for a running merge before it
exits, so no merge is cut off mid-way.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Mapping

from ...errors import DuckLakeError
from ...maintain import merge_adjacent_files
from ...scan import Lake

__all__ = ["BackgroundCompaction"]


class BackgroundCompaction:
    """The planner's one background merge at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._outcome: str | None = None

    def after_commit(self, open_lake: Callable[[], Lake], request: Mapping, answer: dict) -> dict:
        """``answer`` to a ``write_commit``, with the last merge's outcome; a merge of the
        batch's table started when the batch is an N-th (``compact_every``)."""
        stream = request.get("stream") or {}
        every = int(stream.get("compact_every") or 0)
        with self._lock:
            outcome, self._outcome = self._outcome, None
            batch = int(stream.get("batch_id") or 0)
            due = every > 0 and not answer.get("replayed") and (batch + 1) % every == 0
            if due and (self._thread is None or not self._thread.is_alive()):
                target = request["target"]
                self._thread = threading.Thread(
                    target=self._merge,
                    args=(open_lake, str(target["namespace"]), str(target["name"])),
                    name="ducklake-auto-compaction",
                )
                self._thread.start()
        if outcome is not None:
            answer = {**answer, "compaction": outcome}
        return answer

    def _merge(self, open_lake: Callable[[], Lake], namespace: str, name: str) -> None:
        try:
            lake = open_lake()
            try:
                results = merge_adjacent_files(lake, name, schema=namespace)
            finally:
                lake.close()
            merged = sum(r.files_processed for r in results)
            created = sum(r.files_created for r in results)
            outcome = (
                f"compaction of {namespace}.{name} merged {merged} files into {created}"
                if results
                else f"compaction of {namespace}.{name}: nothing to merge"
            )
        except DuckLakeError as exc:
            outcome = f"compaction of {namespace}.{name} failed: {type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug: reported, never the stream's end
            traceback.print_exc(file=sys.stderr)
            outcome = f"compaction of {namespace}.{name} failed: {type(exc).__name__}: {exc}"
        print(f"ducklake planner: {outcome}", file=sys.stderr, flush=True)
        with self._lock:
            self._outcome = outcome

    def wait(self) -> None:
        """Wait for a running merge to end (before the planner exits)."""
        thread = self._thread
        if thread is not None:
            thread.join()
