"""A merge's groups written elsewhere (Spark's tasks): each group's outcome as a value, and
the outcomes gathered back for the commit.

A task that fails deletes its file and answers with its error instead of raising, so the
driver learns of every file the job wrote: when any task failed, all of them are deleted
and the first error raised (by its class), and nothing is committed. The process that
writes them on an executor is :mod:`._group_worker`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import errors
from ..write import delete_files
from ._merge import RunWrite, WrittenRun, write_run

__all__ = ["gather_written", "write_task"]


def write_task(work: RunWrite) -> dict:
    """One group's file, written on an executor; its error as a value."""
    left: list[str] = []
    try:
        return {"result": write_run(work, left), "left": left}
    except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
        return {"class": type(exc).__name__, "message": str(exc), "left": left}


def gather_written(
    outcomes: Sequence[dict], works: Sequence[RunWrite], written: list[str]
) -> list[WrittenRun]:
    """Each group's written file, in the groups' order, every file any task wrote added to
    ``written``; when a task failed, every one of them deleted and its error raised."""
    if len(outcomes) != len(works):
        raise errors.InternalError(
            f"a merge on Spark's executors answered {len(outcomes)} of {len(works)} groups"
        )
    failed = None
    for outcome in outcomes:
        written.extend(outcome["left"])
        if "result" in outcome:
            written.append(outcome["result"].url)
        elif failed is None:
            failed = outcome
    if failed is not None:
        left = delete_files(list(written), works[0].storage)
        written[:] = left
        kind = getattr(errors, failed["class"], None)
        if isinstance(kind, type) and issubclass(kind, errors.DuckLakeError):
            raise kind(failed["message"])
        raise errors.InternalError(
            f"a Spark task writing a merged file failed: {failed['class']}: {failed['message']}"
        )
    return [outcome["result"] for outcome in outcomes]
