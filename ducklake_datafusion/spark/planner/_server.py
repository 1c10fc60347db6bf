"""The planning process's requests: namespaces, tables, a table's schema, a scan's plan.

The JVM catalog (``DuckLakeCatalog`` in the package's jar) keeps no DuckLake logic of its
own: it starts this process once per catalog and asks it, over a pipe (``_frames``), what
Spark's ``TableCatalog`` methods need. One lake is opened per process from the catalog's
options, so the catalog database is read the way every other path reads it (same
snapshot resolution, same typed errors), and the scan plan is this package's
``ScanPlan``, handed over as the plan export every engine outside Python reads
(``read.export_plan``).

Requests (``op``) and their answers, each field declared with its kind in ``_protocol``
(the jar declares the same; both sides check every message as it crosses):

* ``open`` ``{options}`` -> ``{protocol, package}``: open the lake (validates the options);
  again in a process the JVM hands to another catalog (its last lake closed first);
* ``namespaces`` -> ``{namespaces: [name]}`` at the catalog's snapshot;
* ``tables`` ``{namespace}`` -> ``{tables: [name]}``;
* ``table`` ``{namespace, name, version?, timestamp_us?}`` -> the table at the latest (or
  pinned) snapshot, or at ``VERSION AS OF`` / ``TIMESTAMP AS OF``: its Spark schema
  (JSON, column comments in the fields' metadata) and snapshot (``_table``);
* ``scan`` ``{namespace, name, snapshot, columns, filters}`` -> the scan's plan (``_scan``);
* ``changes`` ``{namespace, name, start, end?}`` -> the change feed as rows (``_changes``);
* ``views`` ``{namespace}`` -> ``{views: [name]}`` (``SHOW VIEWS``);
* ``view`` ``{namespace, name, version?, timestamp_us?}`` -> the view's query respelled for
  Spark, its column aliases and the snapshot it was read at, or ``{view: null}`` (``_view``);
* ``stream_start`` / ``stream_end`` / ``stream_rows``: a streaming source's offsets and
  micro-batches (``_stream``);
* ``write_begin`` / ``create_begin`` / ``write_commit`` / ``create_table``: Spark's writes,
  planned and committed once through the core's protocol (``_write``);
* ``delete_where`` ``{namespace, name, filters, dry_run?}`` -> ``{snapshot, files, rows,
  decided}``: ``DELETE FROM`` of whole files, decided by catalog metadata (``_delete``);
* ``change_commit`` ``{target, command, files, deletes}`` and a blob of the deleted rows ->
  ``{snapshot, deleted, updated, inserted}``: a row-level ``DELETE``, ``UPDATE`` or
  ``MERGE`` the executors wrote, committed as one snapshot (``_change``);
* ``maintain`` ``{operation, arguments}`` -> ``{rows}``: a maintenance procedure
  (``CALL lake.system.merge_adjacent_files(...)``) run on the lake (``_maintain``);
* ``schema_change`` ``{change, namespace, name?, ...}`` -> ``{snapshot, changed}``: Spark's
  ``ALTER TABLE``, ``DROP TABLE``, ``RENAME``, ``CREATE``/``DROP NAMESPACE`` (``_ddl``).

An error answers ``{error: {class, message}}`` with the class of
``ducklake_datafusion.errors`` (the JVM raises Spark's own exception where Spark has one,
else ours by name); an error that is not ours is reported with its Python class name and
its traceback goes to standard error. The process ends when the pipe closes.
"""

from __future__ import annotations

import os
import select
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import BinaryIO

from ...errors import DuckLakeError, InternalError, InvalidOptionError
from ...pathres import ACCEPTED_KEYS
from ...scan import Lake
from .._core import snapshot_option, snapshot_time_option
from ._auto_compact import BackgroundCompaction
from ._change import change_commit_response
from ._changes import changes_response
from ._ddl import schema_change_response
from ._delete import delete_where_response
from ._frames import read_request, write_response
from ._maintain import maintain_response, maintain_written_response
from ._protocol import MESSAGES, PROTOCOL_VERSION, check_answer, check_request
from ._scan import scan_response
from ._stream import stream_end_response, stream_rows_response, stream_start_response
from ._table import resolve_table, table_response
from ._view import table_names, view_names, view_response
from ._write import (
    create_begin_response,
    create_table_response,
    write_begin_response,
    write_commit_response,
)

__all__ = ["CATALOG_KEYS", "PROTOCOL_VERSION", "Planner", "lake_opener", "serve"]

# The catalog's own options (spark.sql.catalog.<name>.<key>); every other key must be a
# storage option.
CATALOG_KEYS = ("metadata", "data_path", "snapshot", "snapshot_time", "metadata_schema")

# (lake, request, the request's blobs) -> (answer, the answer's blobs)
Handler = Callable[[Lake, Mapping, list[bytes]], tuple[dict, list[bytes]]]


def _no_blobs(answer: Callable[[Lake, Mapping], dict]) -> Handler:
    return lambda lake, request, _: (answer(lake, request), [])


def _answer_blobs(answer: Callable[[Lake, Mapping], tuple[dict, list[bytes]]]) -> Handler:
    return lambda lake, request, _: answer(lake, request)


def _scan(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    return scan_response(resolve_table(lake, request), request)


# Every request but ``open`` (the one that makes the lake), by its op.
_HANDLERS: dict[str, Handler] = {
    "namespaces": _no_blobs(lambda lake, _: {"namespaces": sorted(lake.list_schema_names())}),
    "tables": _no_blobs(lambda lake, r: {"tables": table_names(lake, str(r["namespace"]))}),
    "table": _no_blobs(table_response),
    "views": _no_blobs(lambda lake, r: {"views": view_names(lake, str(r["namespace"]))}),
    "view": _no_blobs(view_response),
    "changes": _answer_blobs(changes_response),
    "scan": _answer_blobs(_scan),
    "stream_start": _answer_blobs(stream_start_response),
    "stream_end": _answer_blobs(stream_end_response),
    "stream_rows": _answer_blobs(stream_rows_response),
    "write_begin": _no_blobs(write_begin_response),
    "create_begin": _no_blobs(create_begin_response),
    "write_commit": _no_blobs(write_commit_response),
    "create_table": _no_blobs(create_table_response),
    "delete_where": _no_blobs(delete_where_response),
    "maintain": _answer_blobs(maintain_response),
    "maintain_written": maintain_written_response,
    "schema_change": _no_blobs(schema_change_response),
    "change_commit": lambda lake, request, blobs: (
        change_commit_response(lake, request, blobs),
        [],
    ),
}
if set(_HANDLERS) | {"open"} != set(MESSAGES):
    raise InternalError("the planner's handlers are not the protocol's requests")


class Planner:
    """One lake, opened from a catalog's options, answering the JVM's requests."""

    def __init__(self) -> None:
        self.lake: Lake | None = None
        self._open_lake: Callable[[], Lake] | None = None  # another Lake of the same options
        self.compaction = BackgroundCompaction()
        # set by ``open`` (a process started ahead of its catalog learns its catalog's)
        self.idle_seconds: float | None = None

    def handle(self, request: Mapping, blobs: list[bytes] = ()) -> tuple[dict, list[bytes]]:
        """Answer one request (and its blobs): ``(header, blobs)``, the headers checked
        against the protocol."""
        message = check_request(request)
        if message.op == "open":
            header, answers = self._open(request["options"]), []
            if request.get("idle_seconds") is not None:
                self.idle_seconds = float(request["idle_seconds"])
        elif self.lake is None:
            raise InvalidOptionError(f"the planner got {message.op!r} before 'open'")
        else:
            header, answers = _HANDLERS[message.op](self.lake, request, list(blobs))
            if message.op == "write_commit":
                header = self.compaction.after_commit(self._open_lake, request, header)
        check_answer(message, header)
        return header, answers

    def _open(self, options: Mapping[str, object]) -> dict:
        from ... import __version__

        open_lake = lake_opener(options)
        if self.lake is not None:  # the JVM handed this process to another catalog
            self.compaction.wait()  # (the last catalog's merge, on a lake of its own)
            self.compaction = BackgroundCompaction()
            self.lake.close()
            self.lake = None
        self.lake = open_lake()
        self._open_lake = open_lake
        return {"protocol": PROTOCOL_VERSION, "package": __version__}

    def close(self) -> None:
        self.compaction.wait()
        if self.lake is not None:
            self.lake.close()
            self.lake = None


def lake_opener(options: Mapping[str, object]) -> Callable[[], Lake]:
    """What opens the lake of a catalog's options (``spark.sql.catalog.<name>.<key>``,
    checked here: unknown keys and a missing ``metadata`` are refused by name)."""
    values = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(k for k in values if k not in CATALOG_KEYS and k not in ACCEPTED_KEYS)
    if unknown:
        raise InvalidOptionError(
            f"unknown option(s) {unknown} of a DuckLake Spark catalog; options are "
            f"{', '.join(CATALOG_KEYS)} and the storage options {', '.join(ACCEPTED_KEYS)}"
        )
    if not values.get("metadata"):
        raise InvalidOptionError(
            "a DuckLake Spark catalog needs spark.sql.catalog.<name>.metadata, e.g. "
            "'lake.ducklake', 'sqlite:lake.sqlite' or 'postgres:dbname=lake host=...'"
        )
    storage = {k: v for k, v in values.items() if k not in CATALOG_KEYS}

    def open_lake() -> Lake:
        return Lake.open(
            values["metadata"],
            data_path=values.get("data_path") or None,
            snapshot=snapshot_option(values.get("snapshot")),
            snapshot_time=snapshot_time_option(values.get("snapshot_time")),
            storage_options=storage,
            metadata_schema=values.get("metadata_schema") or None,
        )

    return open_lake


def serve(requests: BinaryIO, responses: BinaryIO, *, idle_seconds: float | None = None) -> None:
    """Answer requests until the pipe closes, or until none came for ``idle_seconds``.

    The idle exit frees an unused catalog's process (its catalog database connection, its
    memory); the JVM starts a new one on the next request, and retries a request that met
    a process exiting this way (exit code 0). An ``open`` may set the catalog's own idle time
    (a process the JVM started ahead of its catalog waits for one with a time of its own).
    """
    planner = Planner()
    try:
        while (
            _ready(requests, idle_seconds if planner.idle_seconds is None else planner.idle_seconds)
            and (read := read_request(requests)) is not None
        ):
            try:
                header, blobs = planner.handle(*read)
            except DuckLakeError as exc:
                header, blobs = _error(exc), []
            except Exception as exc:  # noqa: BLE001 -- not ours: named by class, traced to stderr
                traceback.print_exc(file=sys.stderr)
                header, blobs = _error(exc), []
            _fault_after(read[0])
            write_response(responses, header, blobs)
    finally:
        planner.close()


# The requests that commit a snapshot.
_COMMITS = frozenset(
    {"write_commit", "create_table", "delete_where", "change_commit", "schema_change"}
)

# A test's fault: ``exit-after-commit`` ends the process once a commit request was answered,
# before the JVM hears the answer, so the JVM cannot tell whether the commit landed
# (``tests/spark/test_spark_write_faults.py``). Unset, as for every user: nothing.
FAULT_VARIABLE = "DUCKLAKE_PLANNER_FAULT"


def _fault_after(request: Mapping) -> None:
    fault = os.environ.get(FAULT_VARIABLE)
    if fault == "exit-after-commit" and request.get("op") in _COMMITS:
        os._exit(70)
    if fault not in (None, "", "exit-after-commit"):
        raise InvalidOptionError(f"{FAULT_VARIABLE}={fault!r}: the one fault is exit-after-commit")


def _ready(requests: BinaryIO, idle_seconds: float | None) -> bool:
    """Whether a request arrives within ``idle_seconds`` (always, without a limit)."""
    if idle_seconds is None or idle_seconds <= 0:
        return True
    readable, _, _ = select.select([requests], [], [], idle_seconds)
    return bool(readable)


def _error(exc: BaseException) -> dict:
    return {"error": {"class": type(exc).__name__, "message": str(exc)}}
