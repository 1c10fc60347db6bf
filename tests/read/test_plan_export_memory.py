"""The plan export kept in memory (``read.plan_export``) is what the IPC form reads back.

The Rust provider is built from ``plan_export`` (same process: no serialisation), the
JVM is to read ``export_plan``'s bytes; both must hand over the same facts, at every
snapshot of a history with delete files, inlined rows, schema changes and merged files.
"""

from __future__ import annotations

import pyarrow as pa
from support.histories import EXPIRED, snapshot_times, write_history

from ducklake_datafusion.read import PLAN_SCHEMA, export_plan, import_plan, plan_export
from ducklake_datafusion.scan import Lake, SnapshotRef


def test_the_export_in_memory_equals_the_export_read_back(make_lake):
    lake = make_lake(inline_limit=10)
    write_history(lake)
    snapshots = [s for s in sorted(snapshot_times(lake)) if s >= 1 and s not in EXPIRED]
    handle = Lake.open(**lake.reader_args())
    inlined_seen = deleted_seen = 0
    for snapshot in snapshots:
        plan = handle.table_at("main", "t", SnapshotRef(snapshot_id=snapshot)).scan_plan()
        memory = plan_export(plan)
        read_back = import_plan(export_plan(plan))
        assert (memory.table, memory.catalog, memory.snapshot_id) == (
            read_back.table,
            read_back.catalog,
            read_back.snapshot_id,
        )
        assert memory.schema.equals(read_back.schema)
        assert memory.field_ids == read_back.field_ids
        assert memory.files.schema.equals(PLAN_SCHEMA)
        assert memory.files.equals(read_back.files), snapshot
        assert memory.defaults.equals(read_back.defaults)
        assert memory.layouts == read_back.layouts
        got = pa.Table.from_batches(memory.inlined, schema=memory.schema)
        want = pa.Table.from_batches(read_back.inlined, schema=read_back.schema)
        assert got.equals(want), snapshot
        inlined_seen += got.num_rows
        deleted_seen += memory.files.column("deleted").null_count < memory.files.num_rows
    assert inlined_seen and deleted_seen  # the history exercised both
