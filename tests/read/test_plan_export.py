"""The plan export (``read.export_plan``/``import_plan``): the kept files, their deleted
positions and layouts, and the inlined rows as one versioned Arrow IPC stream.

Round-tripped at every snapshot of a history with delete files, inlined rows and deletes,
schema changes and merged files, and checked against the plan it was made from; a
reader given a newer form version refuses it with a typed error.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.histories import EXPIRED, snapshot_times, write_history

from ducklake_datafusion.errors import DuckLakeError
from ducklake_datafusion.read import (
    PLAN_SCHEMA,
    PLAN_VERSION,
    PlanVersionError,
    checked_file,
    deleted_positions_of,
    export_plan,
    import_plan,
)
from ducklake_datafusion.scan import DataFileTask, InlinedRowsTask, Lake, SnapshotRef


@pytest.fixture
def history(make_lake):
    lake = make_lake(inline_limit=10)
    write_history(lake)
    return lake


def test_the_jar_reads_the_version_written():
    """One form crosses to both engines: the Rust extension's version is checked in
    tests/provider/test_rust_contract.py, the jar's here (its source)."""
    java = Path(__file__).resolve().parents[2] / "jvm/src/main/java/io/ducklake_datafusion"
    source = (java / "spark/PlannedFiles.java").read_text()
    assert f'static final String VERSION = "{PLAN_VERSION}";' in source


def test_an_export_round_trips_and_matches_its_plan(history):
    snapshots = [s for s in sorted(snapshot_times(history)) if s >= 1 and s not in EXPIRED]
    handle = Lake.open(**history.reader_args())
    layouts_seen = set()
    for snapshot in snapshots:
        table = handle.table_at("main", "t", SnapshotRef(snapshot_id=snapshot))
        plan = table.scan_plan()
        data = export_plan(plan)
        schema = pa.ipc.open_stream(pa.py_buffer(data)).schema
        assert schema.metadata[b"ducklake_datafusion.plan_version"] == b"1"
        assert schema.remove_metadata().equals(PLAN_SCHEMA)
        got = import_plan(data)
        assert (got.table, got.catalog, got.snapshot_id) == (plan.table, plan.catalog, snapshot)
        assert got.schema.equals(plan.table_schema)
        assert got.field_ids == {c.name: c.column_id for c in plan.columns}
        assert got.defaults.schema.equals(plan.table_schema) and got.defaults.num_rows == 1
        tasks = [t for t in plan.tasks if isinstance(t, DataFileTask)]
        rows = got.files.to_pylist()
        assert [r["data_file_id"] for r in rows] == [t.data_file_id for t in tasks]
        for row, task, layout in zip(rows, tasks, got.layouts, strict=True):
            assert row["url"] == task.file.url
            assert row["size"] == task.file.size
            assert row["footer_size"] == task.file.footer_size
            assert row["record_count"] == task.record_count
            assert row["encrypted"] is False
            expected = []
            if task.deletes is not None:
                expected = deleted_positions_of(task, plan.table, snapshot, plan.storage).tolist()
            assert (row["deleted"] or []) == expected
            checked = checked_file(task, plan.storage, plan.columns, "a file")
            assert layout == checked.layout
            if layout is not None:
                assert row["layout"]["current"] == layout.current
                layouts_seen.add((layout.current, layout.snapshot_column is not None))
        inlined = [t.rows for t in plan.tasks if isinstance(t, InlinedRowsTask)]
        expected_rows = sum(t.num_rows for t in inlined)
        assert sum(b.num_rows for b in got.inlined) == expected_rows
        if inlined:
            names = plan.table_schema.names
            want = pa.concat_tables([t.select(names).cast(plan.table_schema) for t in inlined])
            assert pa.Table.from_batches(got.inlined, plan.table_schema).equals(want)
        if not any(layout and layout.snapshot_column for layout in got.layouts):
            live = sum(r["record_count"] - len(r["deleted"] or []) for r in rows)
            reference = history.reference(
                f"SELECT count(*) AS n FROM lake.main.t AT (VERSION => {snapshot})"
            )
            assert live + expected_rows == reference.column("n")[0].as_py(), snapshot
    # older layouts (renamed, added, widened columns) and a merged file were exported
    assert (True, False) in layouts_seen and (False, False) in layouts_seen
    assert any(merged for _, merged in layouts_seen)


def test_a_reader_refuses_a_newer_plan_version(history):
    table = Lake.open(**history.reader_args()).table("main", "t")
    data = export_plan(table.scan_plan())
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    metadata = dict(reader.schema.metadata)
    metadata[b"ducklake_datafusion.plan_version"] = b"2"
    newer = reader.schema.with_metadata(metadata)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, newer) as writer:
        for batch in reader:
            writer.write_batch(batch.replace_schema_metadata(metadata))
    with pytest.raises(PlanVersionError, match="version '2'.*version 1 only") as caught:
        import_plan(sink.getvalue().to_pybytes())
    assert isinstance(caught.value, DuckLakeError)
