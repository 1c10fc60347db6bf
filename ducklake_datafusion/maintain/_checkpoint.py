"""``checkpoint``: every maintenance operation over the whole lake, in DuckDB's order.

DuckDB's ``CHECKPOINT`` on a DuckLake catalog calls, each in its own transaction and with
the lake's settings only: ``ducklake_flush_inlined_data``, ``ducklake_expire_snapshots``
(nothing unless ``expire_older_than`` is set), ``ducklake_merge_adjacent_files``,
``ducklake_rewrite_data_files``, ``ducklake_cleanup_old_files`` and
``ducklake_delete_orphaned_files`` (both: older than ``delete_older_than``, 2 days). So
does this; each step that changes data writes its own snapshot (at most three), and a
failing step stops the rest, the steps before it kept, as DuckDB's do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import CommitOptions, SnapshotRecord
from ..scan import Lake
from ._expire import cleanup_old_files, delete_orphaned_files, expire_snapshots
from ._flush import FlushResult, flush_inlined_data
from ._merge import MergeResult, merge_adjacent_files
from ._rewrite import rewrite_data_files

__all__ = ["CheckpointResult", "checkpoint"]


@dataclass(frozen=True)
class CheckpointResult:
    """What each step of a checkpoint did."""

    flushed: tuple[FlushResult, ...]
    expired: tuple[SnapshotRecord, ...]
    merged: tuple[MergeResult, ...]
    rewritten: tuple[MergeResult, ...]
    files_deleted: tuple[str, ...]
    orphans_deleted: tuple[str, ...]

    def counts(self) -> list[tuple[str, int]]:
        """``(step, count)`` per step, in order: rows flushed, snapshots expired, files
        merged, files rewritten, files deleted, orphaned files deleted."""
        return [
            ("flush_inlined_data", sum(r.rows_flushed for r in self.flushed)),
            ("expire_snapshots", len(self.expired)),
            ("merge_adjacent_files", sum(r.files_processed for r in self.merged)),
            ("rewrite_data_files", sum(r.files_processed for r in self.rewritten)),
            ("cleanup_old_files", len(self.files_deleted)),
            ("delete_orphaned_files", len(self.orphans_deleted)),
        ]


def checkpoint(lake: Lake, *, options: CommitOptions | None = None) -> CheckpointResult:
    """Run the six steps of DuckDB's ``CHECKPOINT`` on ``lake`` (see the module); the
    snapshots that flush, merge and rewrite write carry ``options``."""
    flushed = flush_inlined_data(lake, options=options)
    expired = expire_snapshots(lake)
    merged = merge_adjacent_files(lake, options=options)
    rewritten = rewrite_data_files(lake, options=options)
    files_deleted = cleanup_old_files(lake)
    orphans_deleted = delete_orphaned_files(lake)
    return CheckpointResult(
        tuple(flushed),
        tuple(expired),
        tuple(merged),
        tuple(rewritten),
        tuple(files_deleted),
        tuple(orphans_deleted),
    )
