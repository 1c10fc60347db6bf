"""The change feed for Spark SQL: ``ducklake_table_changes('lake.main.t', start, end)``.

The table function (``DuckLakeExtensions`` in the package's jar) asks the planner once:
the bounds are resolved as ``table_changes`` resolves them (snapshot ids, or times: the
first snapshot at or after a start time, the last at or before an end time; no end: the
latest now), and the feed is computed here by the core's ``table_changes``, exact on every
lake, and sent as Arrow rows of the feed's Spark schema (the change columns, then the
table's columns at the end snapshot), the same rows and columns as ``read_changes``. The
feed therefore passes through the driver: for feeds larger than its memory, use
``read_changes`` (executors read the two states and Spark joins them).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...read import table_changes
from ...scan import Lake, SnapshotRef
from .._core import to_spark_table
from ..changes import changes_schema, feed_target, resolve_bounds
from ._frames import arrow_stream

__all__ = ["changes_response"]


def changes_response(lake: Lake, request: Mapping) -> tuple[dict, list[bytes]]:
    """``(header with the feed's schema and bounds, [the feed as Arrow IPC])``."""
    namespace, name = str(request["namespace"]), str(request["name"])
    end = request.get("end")
    first, last = resolve_bounds(lake, str(request["start"]), None if end is None else str(end))
    table = lake.table_at(namespace, name, SnapshotRef(snapshot_id=last))
    schema = changes_schema(table.columns)
    target, _ = feed_target(schema)
    feed = table_changes(lake, namespace, name, first, last)
    rows = to_spark_table(feed.select(list(range(len(target)))), target)
    header = {
        "namespace": namespace,
        "name": name,
        "first": first,
        "last": last,
        "rows": rows.num_rows,
        "schema": schema.json(),
    }
    return header, [arrow_stream(rows)]
