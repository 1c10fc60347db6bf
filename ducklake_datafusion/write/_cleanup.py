"""What a failed write does with the files it made: one rule for every writer.

A write whose commit is known not to have happened (the data, the storage, a conflict, the
catalog refusing the transaction) deletes its files; a file that cannot be deleted is named
as an orphan. A write whose commit's outcome is unknown (``CommitStateUnknownError``: the
catalog's ``COMMIT`` went unanswered) deletes nothing, since a committed snapshot may refer
to the files, and names them instead. Python writes, DataFusion's inserts and ``CREATE
TABLE AS`` come here; Spark's jar applies the same rule by the planner's error class
(``DuckLakeBatchWrite``, ``DuckLakeStreamingWrite``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import CommitStateUnknownError, DuckLakeError

__all__ = ["after_failed_commit"]


def after_failed_commit(
    exc: BaseException, written: Sequence[str], discard: Callable[[], list[str]]
) -> None:
    """Delete the write's files (``discard()`` returns those it could not delete) unless
    the commit may have happened; say on ``exc`` which files are left and why."""
    if isinstance(exc, CommitStateUnknownError):
        if written:
            exc.add_note(
                "these files were kept, since the snapshot may refer to them; if the table's "
                "latest snapshot does not, ducklake_delete_orphaned_files removes them: "
                + ", ".join(written)
            )
        return
    orphans = discard()
    if orphans and isinstance(exc, DuckLakeError):
        exc.add_note(
            "these files were written but could not be deleted; no snapshot refers to "
            "them (ducklake_delete_orphaned_files removes them): " + ", ".join(orphans)
        )
