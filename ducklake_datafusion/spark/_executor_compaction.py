"""``merge_adjacent_files`` with its files written by Spark's executors.

The driver plans the merge as the single-node one does (``maintain``: DuckDB's groups,
each a :class:`~ducklake_datafusion.maintain.RunWrite` that needs no catalog), Spark writes
one group per task in parallel on the executors (:func:`maintain.write_run`: the group's
sources read in order by field id, each row's id and snapshot kept), and the driver commits
every group's file as one snapshot, exactly the single-node merge's. Executors need the
package (as the ``ducklake`` data source's do) and reach the lake's storage with the
catalog's storage options; they never open the catalog.

A task that fails deletes its file and answers with its error instead of raising, so the
driver learns of every file the job wrote: when any task failed, all of them are deleted
and the first error raised (by its class), and nothing is committed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .. import errors
from ..maintain import MergeResult, RunWrite, WrittenRun, merge_adjacent_files, write_run
from ..write import delete_files

__all__ = ["merge_on_executors"]

_PROCEDURES_CLASS = "io.ducklake_datafusion.spark.Procedures"


def merge_on_executors(spark, catalog: str, **arguments) -> list[MergeResult]:
    """Run ``merge_adjacent_files`` of the DuckLake catalog ``catalog`` of ``spark``
    (its lake opened here, in the driver, with the catalog's options), the merged files
    written by Spark tasks, one per group; ``arguments`` as the maintenance function's."""
    from ..catalog import CommitOptions
    from ..maintain import split_table_argument
    from .planner import lake_opener

    jvm = spark._jvm
    procedures = getattr(jvm, _PROCEDURES_CLASS)
    with errors.raised_as_ours():
        plugin = spark._jsparkSession.sessionState().catalogManager().catalog(catalog)
        options = json.loads(procedures.lakeOptionsJson(plugin))
    lake = lake_opener(options)()
    try:
        schema, table = split_table_argument(
            arguments.pop("table", None), arguments.pop("schema", None)
        )
        commit = CommitOptions(
            arguments.pop("author", None) or spark.sparkContext.sparkUser(),
            arguments.pop("commit_message", None),
            arguments.pop("commit_extra_info", None),
        )
        return merge_adjacent_files(
            lake,
            table,
            schema=schema,
            options=commit,
            write_runs=lambda works, written: _write_on_executors(spark, works, written),
            **arguments,
        )
    finally:
        lake.close()


def _write_on_executors(spark, works: Sequence[RunWrite], written: list[str]) -> list[WrittenRun]:
    context = spark.sparkContext
    context.setJobDescription(f"ducklake merge_adjacent_files: {len(works)} files to write")
    try:
        outcomes = context.parallelize(list(works), max(len(works), 1)).map(_write_task).collect()
    finally:
        context.setJobDescription(None)
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


def _write_task(work: RunWrite) -> dict:
    """One group's file, written on an executor; its error as a value (the module)."""
    left: list[str] = []
    try:
        return {"result": write_run(work, left), "left": left}
    except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
        return {"class": type(exc).__name__, "message": str(exc), "left": left}
