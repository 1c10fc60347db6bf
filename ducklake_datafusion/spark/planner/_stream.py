"""A streaming source's planning, for the JVM: where a stream starts, where its next
micro-batch ends, and what the batch holds.

``stream_start`` ``{namespace, name, starting_version | starting_timestamp}`` ->
``{"after": id}``: the snapshot a stream reads *after* (the one before the starting
snapshot; ``latest``: the latest). With neither, :data:`BEFORE_THE_TABLE`: the stream
starts with the table's rows at the latest snapshot, then reads the snapshots after it. A
starting snapshot id later than the latest is one still to come; one that does not exist
otherwise (expired) is an error naming it.

``stream_end`` ``{namespace, name, after, until?, max_snapshots?, max_files?, max_bytes?}``
-> ``{"end": id, "latest": id}``: the last snapshot of the next micro-batch, after ``after``
and at most ``until``; with limits, as many of the table's changing snapshots as keep the
new data files within them (at least one snapshot, as Delta admits at least one file).

``stream_rows`` ``{namespace, name, after, through, mode, skip_change_commits, schema,
hadoop_schemes, hadoop_version}`` -> ``(header, [plan export, rows as Arrow IPC])``, a scan's
answer (``_scan``): the change feed of snapshots ``after + 1`` through ``through`` (the
core's ``plan_changes``, exact on every lake).

* ``mode`` ``inserts`` (the default): the rows those snapshots inserted (``plan_inserts``).
  Snapshots that only added data files are read as scans: their files go to Spark's
  Parquet reader (deletes of the same snapshot applied inside it), or are read here where
  Spark's reader is not exact. Every other snapshot's rows come from the state comparison.
  A snapshot that also deleted or updated rows is an error naming it (a stream of inserts
  would silently keep rows the lake no longer has), or, with ``skip_change_commits``, left
  out whole.
* ``mode`` ``changes``: every change, the table's columns then ``_change_type``,
  ``_commit_snapshot_id``, ``_commit_timestamp`` and ``_rowid`` (the feed's ``rowid``, which
  pairs an update's pre- and post-image), all computed here.

The rows have the stream's schema (the table's at its start). Columns added since are left
out and the stream goes on; a renamed, dropped or retyped column stops it, named.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from ...catalog import list_snapshot_records, metadata
from ...errors import InvalidOptionError, SnapshotNotFoundError, UnsupportedFeatureError
from ...read import (
    ROW_ID,
    execute_plan,
    export_bytes,
    plan_changes,
    plan_export,
    plan_inserts,
    step_feed,
)
from ...scan import Lake, LakeTable, SnapshotRef, resolve_bound
from .._core import spark_schema, to_spark_table
from ..changes import feed_target
from ._frames import arrow_stream
from ._scan import exact_rows, scan_response, spark_reach, split_for_spark

__all__ = [
    "BEFORE_THE_TABLE",
    "STREAM_CHANGE_FIELDS",
    "stream_end_response",
    "stream_rows_response",
    "stream_start_response",
]

# The offset of a stream that starts with the table's rows: its first micro-batch is the
# table at the snapshot it ends at, read as a scan (as Delta's stream starts by default).
BEFORE_THE_TABLE = -1

# What a micro-batch's answer has of a scan's (the protocol's ``stream_rows`` answer).
_BATCH_FIELDS = (
    "snapshot",
    "files_spark",
    "files_exact",
    "exact_rows",
    "exact_reasons",
    "hadoop_urls",
    "hadoop_options",
)

STREAM_CHANGE_FIELDS = (
    StructField("_change_type", StringType(), nullable=True),
    StructField("_commit_snapshot_id", LongType(), nullable=True),
    StructField("_commit_timestamp", TimestampType(), nullable=True),
    StructField("_rowid", LongType(), nullable=True),
)


def stream_start_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    label = f"table {request['namespace']}.{request['name']}"
    version = request.get("starting_version")
    time = request.get("starting_timestamp")
    if version is not None and time is not None:
        raise InvalidOptionError(
            f"stream of {label}: give startingVersion or startingTimestamp, not both"
        )
    with lake.backend.session() as session:
        records = list_snapshot_records(session)
    if not records:
        raise SnapshotNotFoundError(f"stream of {label}: {lake.description} has no snapshots")
    if version is None and time is None:
        return {"after": BEFORE_THE_TABLE}, []
    if str(version).strip().lower() == "latest":
        return {"after": records[-1].snapshot_id}, []
    text = str(version if version is not None else time).strip()
    if version is not None and not text.isdigit():
        raise InvalidOptionError(
            f"startingVersion of a stream of {label} must be a snapshot id or 'latest', "
            f"got {text!r}"
        )
    if version is not None and int(text) > records[-1].snapshot_id:
        return {"after": int(text) - 1}, []  # a snapshot still to come
    try:
        first = resolve_bound(records, text, lower=True, description=lake.description)
    except SnapshotNotFoundError as exc:
        raise SnapshotNotFoundError(f"stream of {label}: {exc}") from exc
    return {"after": first - 1}, []


def stream_end_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    namespace, name = str(request["namespace"]), str(request["name"])
    after = int(request["after"])
    until = request.get("until")
    limits = [int(request.get(k) or 0) for k in ("max_snapshots", "max_files", "max_bytes")]
    with lake.backend.session() as session:
        records = list_snapshot_records(session)
        latest = records[-1].snapshot_id if records else after
        end = latest if until is None else min(latest, int(until))
        if end > after and any(limits):
            table = lake.table_at(namespace, name, SnapshotRef(snapshot_id=end))
            end = _admitted(session, records, table, after, end, *limits)
    return {"end": max(end, after), "latest": latest}, []


def _admitted(session, records, table: LakeTable, after, end, snapshots, files, size) -> int:
    """The last snapshot of ``(after, end]`` a micro-batch admits under the limits: the
    table's changing snapshots are taken in order while the count of snapshots, of new data
    files and of their bytes stays within each limit given (0: none), and at least one."""
    added = metadata.files_added_per_snapshot(session, table.entry.table_id, after, end)
    key = table.entry.table_id
    changing = sorted(
        set(added)
        | {
            r.snapshot_id
            for r in records
            if after < r.snapshot_id <= end
            and (r.changes is None or any(t.table_id() == key for t in r.changes))
        }
    )
    taken = total_files = total_bytes = 0
    last = after
    for snapshot in changing:
        more_files, more_bytes = added.get(snapshot, (0, 0))
        over = (
            (snapshots and taken + 1 > snapshots)
            or (files and total_files + more_files > files)
            or (size and total_bytes + more_bytes > size)
        )
        if over and taken:
            return last
        taken, last = taken + 1, snapshot
        total_files, total_bytes = total_files + more_files, total_bytes + more_bytes
    return end


def stream_rows_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    namespace, name = str(request["namespace"]), str(request["name"])
    after, through = int(request["after"]), int(request["through"])
    label = f"table {namespace}.{name}"
    table = lake.table_at(namespace, name, SnapshotRef(snapshot_id=through))
    columns = _stream_columns(table, str(request["schema"]), after, through, label)
    if after == BEFORE_THE_TABLE:
        return _initial(lake, table, columns, request)
    if request.get("mode", "inserts") == "changes":
        changes = plan_changes(lake, namespace, name, None, through, after=after)
        return _changes(lake, changes, columns)
    skip = bool(request.get("skip_change_commits"))
    inserts = plan_inserts(lake, namespace, name, after, through)
    plan, scans = inserts.changes, inserts.appended
    feed = pa.concat_tables([step_feed(plan, s) for s in plan.steps]) if plan.steps else None
    changed = _changed_snapshots(feed)
    if changed and not skip:
        raise UnsupportedFeatureError(
            f"{label}: snapshot {changed[0]} deleted or updated rows, which a stream of "
            "inserted rows cannot carry; set the read option skipChangeCommits=true to leave "
            f"such snapshots out, or stream the change feed (the table {namespace}.{name}.changes)"
        )
    names = [c.name for c in columns]
    target, _ = feed_target(spark_schema(columns))
    pieces = []
    if feed is not None:
        keep = pc.equal(feed.column("change_type"), "insert")
        if changed:
            keep = pc.and_(keep, pc.invert(pc.is_in(feed.column("snapshot_id"), pa.array(changed))))
        pieces.append(to_spark_table(feed.filter(keep).select(names), target))
    reach = spark_reach(request)
    exports, urls, options, files_exact, reasons = [], [], {}, 0, []
    for scan in scans:
        spark_files, layouts, scan_urls, scan_options, exact, why = split_for_spark(
            table, scan, *reach
        )
        exports.append(plan_export(scan, spark_files, layouts=layouts))
        urls += scan_urls
        options.update(scan_options)
        files_exact += len(exact)
        reasons += [f"{count} {text}" for text, count in why.items()]
        if exact:
            pieces.append(exact_rows(scan, exact, names, table))
    rows = pa.concat_tables(pieces) if pieces else target.empty_table()
    header = {
        "snapshot": through,
        "files_spark": len(urls),
        "files_exact": files_exact,
        "exact_rows": rows.num_rows,
        "exact_reasons": reasons,
        "skipped_snapshots": changed,
        "hadoop_urls": urls,
        "hadoop_options": options,
    }
    return header, [_one_export(exports), arrow_stream(rows)]


def _initial(lake: Lake, table: LakeTable, columns, request: Mapping) -> tuple[dict, list[bytes]]:
    """The first micro-batch of a stream that starts with the table's rows: the table at
    the batch's end as a scan (``_scan``), or, for the change feed, as inserts of that
    snapshot."""
    if request.get("mode", "inserts") != "changes":
        names = [c.name for c in columns]
        header, blobs = scan_response(table, {**request, "columns": names, "filters": None})
        batch = {k: header[k] for k in _BATCH_FIELDS}
        return {**batch, "skipped_snapshots": []}, blobs
    rows = execute_plan(table.scan_plan(), with_row_ids=True)
    n = rows.num_rows
    with lake.backend.session() as session:
        times = {r.snapshot_id: r.snapshot_time for r in list_snapshot_records(session)}
    feed = pa.Table.from_arrays(
        [
            pa.array([table.snapshot_id] * n, pa.int64()),
            rows.column(ROW_ID).cast(pa.int64()),
            pa.array(["insert"] * n, pa.string()),
            *(rows.column(c.name) for c in columns),
        ],
        names=["snapshot_id", "rowid", "change_type", *(c.name for c in columns)],
    )
    return _changes_answer(feed, columns, times, table.snapshot_id)


def _stream_columns(table: LakeTable, declared: str, after: int, through: int, label: str):
    """The table's columns the stream reads: the ones it started with, which must still
    lead the table's, same names and types (columns added since are left out: the stream
    goes on); anything else stops the stream, named."""
    expected = StructType.fromJson(json.loads(declared))
    expected = [(f.name, f.dataType) for f in expected.fields if f.name not in _CHANGE_NAMES]
    now = spark_schema(table.columns)
    if [(f.name, f.dataType) for f in now.fields][: len(expected)] != expected:
        started = ", ".join(f"{name} {kind.simpleString()}" for name, kind in expected)
        raise UnsupportedFeatureError(
            f"{label}: its columns changed between snapshots {after} and {through} "
            f"(the stream's: {started}; now: {now.simpleString()}); a stream goes on past "
            "added columns but not renamed, dropped or retyped ones: start it again (a new "
            "checkpoint) to read the table's new columns"
        )
    return table.columns[: len(expected)]


_CHANGE_NAMES = frozenset(f.name for f in STREAM_CHANGE_FIELDS)


def _changed_snapshots(feed: pa.Table | None) -> list[int]:
    if feed is None:
        return []
    kinds = feed.column("change_type")
    return sorted(
        set(pc.filter(feed.column("snapshot_id"), pc.not_equal(kinds, "insert")).to_pylist())
    )


def _one_export(exports: list) -> bytes:
    """One plan export of the files of every scanned snapshot (each exported at its own
    snapshot, so its deletes are that snapshot's); no bytes when there are none."""
    if not exports:
        return b""
    files = [e.files.replace_schema_metadata(None) for e in exports if e.files.num_rows]
    if not files:
        return export_bytes(exports[0])
    merged = pa.Table.from_batches(files).combine_chunks().to_batches()[0]
    return export_bytes(dataclasses.replace(exports[0], files=merged))


def _changes(lake: Lake, plan, columns) -> tuple[dict, list[bytes]]:
    """Every change of the range, with the commit columns."""
    feed = pa.concat_tables([step_feed(plan, step) for step in plan.steps]) if plan.steps else None
    times = {}
    if feed is not None and feed.num_rows:
        with lake.backend.session() as session:
            times = {r.snapshot_id: r.snapshot_time for r in list_snapshot_records(session)}
    return _changes_answer(feed, columns, times, plan.last)


def _changes_answer(feed, columns, times: dict, last: int) -> tuple[dict, list[bytes]]:
    """Feed rows (``table_changes``' columns) as the stream's: the table's columns, then
    the change columns."""
    schema = StructType([*spark_schema(columns).fields, *STREAM_CHANGE_FIELDS])
    target, _ = feed_target(schema)
    if feed is None or feed.num_rows == 0:
        rows = target.empty_table()
    else:
        snapshots = feed.column("snapshot_id")
        commit_times = pa.array(
            [times.get(s) for s in snapshots.to_pylist()], pa.timestamp("us", tz="UTC")
        )
        arrays = [feed.column(c.name) for c in columns]
        arrays += [feed.column("change_type"), snapshots, commit_times, feed.column("rowid")]
        rows = to_spark_table(pa.Table.from_arrays(arrays, names=target.names), target)
    header = {
        "snapshot": last,
        "files_spark": 0,
        "files_exact": 0,
        "exact_rows": rows.num_rows,
        "exact_reasons": [],
        "skipped_snapshots": [],
        "hadoop_urls": [],
        "hadoop_options": {},
    }
    return header, [b"", arrow_stream(rows)]
