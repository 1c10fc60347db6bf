"""Spark's maintenance procedures (``CALL lake.system.merge_adjacent_files(...)``), run here.

``maintain`` ``{operation, arguments, on_executors?, author?, commit_message?,
commit_extra_info?}`` -> ``{rows, token?}``: the engine-neutral operation of ``maintain``
(DuckDB's function of the same name) on the catalog's lake, its result as DuckDB's function
returns it, one JSON array per row in the columns the jar's procedure declares
(``Procedures.java``). The jar has bound Spark's arguments by name and type already;
``older_than`` arrives as microseconds since the epoch (Spark's ``timestamp``), ``table`` as
``"schema.table"`` or ``"table"``.

``on_executors`` (``merge_adjacent_files``): the merge is planned here, and its groups'
files written by Spark's tasks. The answer then has no rows yet but a ``token`` and one
blob per group (its pickled ``RunWrite``); the jar runs the tasks
(``maintain/_group_worker.py``) and sends ``maintain_written`` ``{token, failed?}`` with
one blob per group (its pickled outcome, in order), answered with the rows once the merge
committed (or its error: every file the tasks wrote deleted, nothing committed). The merge
waits in a thread of its own between the two requests (the catalog's other requests go on).
"""

from __future__ import annotations

import datetime as _dt
import pickle
import queue
import threading
import uuid
from collections.abc import Mapping, Sequence

from ...catalog import CommitOptions
from ...errors import InternalError, InvalidOptionError, StorageError
from ...maintain import OPERATIONS, RunWrite, WrittenRun, gather_written, split_table_argument
from ...scan import Lake
from ._write import commit_options

__all__ = ["maintain_response", "maintain_written_response"]

# Executor merges waiting for their tasks' files, by token (a few at once at most).
_WAITING: dict[str, _ExecutorMerge] = {}


def maintain_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    name = str(request["operation"])
    operation = OPERATIONS.get(name)
    if operation is None:
        raise InvalidOptionError(
            f"no maintenance procedure {name!r}; there are {', '.join(sorted(OPERATIONS))}"
        )
    arguments = {k: v for k, v in dict(request["arguments"]).items() if v is not None}
    if "older_than" in arguments:
        arguments["older_than"] = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(
            microseconds=int(arguments["older_than"])
        )
    options = commit_options(request)
    if operation.takes_table:
        schema, table = split_table_argument(
            arguments.pop("table", None), arguments.pop("schema", None)
        )
        arguments.update(table=table, schema=schema)
    if operation.writes_snapshot:
        arguments["options"] = options
    elif options != CommitOptions():
        raise InvalidOptionError(
            f"{name} writes no snapshot: the commit options (author, commit_message, "
            "commit_extra_info) do not apply"
        )
    if not request.get("on_executors"):
        return {"rows": operation.rows(operation.function(lake, **arguments))}, []
    if name != "merge_adjacent_files":
        raise InvalidOptionError(
            f"on_executors runs merge_adjacent_files on Spark's executors; {name} runs in "
            "the catalog's planner"
        )
    merge = _ExecutorMerge(
        lambda write_runs: operation.function(lake, **arguments, write_runs=write_runs),
        lambda result: {"rows": operation.rows(result)},
    )
    return merge.next()


def maintain_written_response(
    lake: Lake, request: Mapping, blobs: list[bytes]
) -> tuple[dict, list[bytes]]:
    merge = _WAITING.pop(str(request["token"]), None)
    if merge is None:
        raise InternalError(
            f"no merge of {lake.description} waits for its executors' files under token "
            f"{request['token']!r} (its planner was restarted?): nothing was committed; "
            "ducklake_delete_orphaned_files removes the files its tasks wrote"
        )
    failed = request.get("failed")
    if failed is not None:
        merge.inbox.put(StorageError(f"the Spark job writing the merged files failed: {failed}"))
    else:
        merge.inbox.put([pickle.loads(blob) for blob in blobs])  # (our tasks' pickles)
    return merge.next()


class _ExecutorMerge:
    """A merge run in a thread of its own that stops, once planned, for its files to be
    written elsewhere: :meth:`next` answers with its groups (to be written), then with its
    rows (or raises its error)."""

    def __init__(self, run, answer) -> None:
        self.inbox: queue.Queue = queue.Queue()
        self._events: queue.Queue = queue.Queue()
        self._answer = answer  # the finished merge's result as the request's answer

        def write_runs(works: Sequence[RunWrite], written: list[str]) -> list[WrittenRun]:
            self._events.put(("works", list(works)))
            outcomes = self.inbox.get()
            if isinstance(outcomes, Exception):
                raise outcomes
            return gather_written(outcomes, works, written)

        def main() -> None:
            try:
                self._events.put(("done", run(write_runs)))
            except BaseException as exc:  # noqa: BLE001 - raised in the request's thread
                self._events.put(("error", exc))

        threading.Thread(target=main, name="ducklake-executor-merge", daemon=True).start()

    def next(self) -> tuple[dict, list[bytes]]:
        kind, value = self._events.get()
        if kind == "error":
            raise value
        if kind == "done":
            return self._answer(value), []
        token = uuid.uuid4().hex
        _WAITING[token] = self
        return {"rows": [], "token": token}, [pickle.dumps(work) for work in value]
