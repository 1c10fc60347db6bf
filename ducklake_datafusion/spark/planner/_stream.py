"""A streaming source's micro-batch: the rows a table's snapshots inserted, for the JVM.

``stream_rows`` ``{namespace, name, after, through, skip_change_commits, schema}`` ->
``(header {rows, snapshots}, [rows as Arrow IPC])``: the change feed of snapshots
``after + 1`` through ``through`` (the core's ``table_changes``, exact on every lake), of
which the inserts are the batch. A snapshot that also deleted or updated rows is an error
naming it (a stream of inserts would silently keep rows the lake no longer has), or, with
``skip_change_commits``, left out whole. The rows have the stream's schema (the table's at
its start); a snapshot that changed the columns stops the stream, named.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from ...errors import UnsupportedFeatureError
from ...read import table_changes
from ...scan import Lake, SnapshotRef
from .._core import spark_schema, to_spark_table
from ..changes import feed_target
from ._frames import arrow_stream

__all__ = ["stream_rows_response"]


def stream_rows_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    namespace, name = str(request["namespace"]), str(request["name"])
    after, through = int(request["after"]), int(request["through"])
    label = f"table {namespace}.{name}"
    table = lake.table_at(namespace, name, SnapshotRef(snapshot_id=through))
    expected = StructType.fromJson(json.loads(str(request["schema"])))
    now = spark_schema(table.columns)
    if [(f.name, f.dataType) for f in now.fields] != [
        (f.name, f.dataType) for f in expected.fields
    ]:
        raise UnsupportedFeatureError(
            f"{label}: its columns changed between snapshots {after} and {through} "
            f"({expected.simpleString()} -> {now.simpleString()}); a stream keeps the schema "
            "it started with: start the stream again (a new checkpoint) to read the new columns"
        )
    feed = table_changes(lake, namespace, name, after + 1, through)
    kinds = feed.column("change_type")
    changed = sorted(
        set(pc.filter(feed.column("snapshot_id"), pc.not_equal(kinds, "insert")).to_pylist())
    )
    if changed and not request.get("skip_change_commits"):
        raise UnsupportedFeatureError(
            f"{label}: snapshot {changed[0]} deleted or updated rows, which a stream of "
            "inserted rows cannot carry; set the read option skipChangeCommits=true to leave "
            "such snapshots out, or read the change feed (ducklake_table_changes)"
        )
    keep = pc.equal(kinds, "insert")
    if changed:
        keep = pc.and_(keep, pc.invert(pc.is_in(feed.column("snapshot_id"), pa.array(changed))))
    rows = feed.filter(keep).select([c.name for c in table.columns])
    target, _ = feed_target(now)
    out = to_spark_table(rows, target)
    header = {"rows": out.num_rows, "skipped_snapshots": changed}
    return header, [arrow_stream(out)]
