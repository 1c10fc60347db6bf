"""``count(*)`` without a filter is answered from catalog row counts where that is exact.

Compared with DuckDB at every snapshot of a history with delete files, inlined deletes,
updates, merged and flushed files (whose rows of later snapshots need reading) and
inlined rows; and checked to open no data file where the catalog suffices.
"""

from __future__ import annotations

import pytest
from support.histories import EXPIRED, session, snapshot_times, write_history
from support.lakes import assert_same_rows

from ducklake_datafusion.read import _footers, count_rows, execute_plan
from ducklake_datafusion.scan import Lake, SnapshotRef


@pytest.fixture
def lake(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=10)
    write_history(lake)
    return lake


def test_count_star_at_every_snapshot(lake):
    snapshots = [s for s in sorted(snapshot_times(lake)) if s >= 1 and s not in EXPIRED]
    expected = {
        s: lake.reference(f"SELECT count(*) AS n FROM lake.main.t AT (VERSION => {s})")
        for s in snapshots
    }
    ctx = session(lake)
    for snapshot in snapshots:
        actual = ctx.sql(f'SELECT count(*) AS n FROM lake.main."t@v{snapshot}"').to_arrow_table()
        assert_same_rows(actual, expected[snapshot])


def test_lake_table_count_at_every_snapshot(lake):
    """``read.count_rows`` (catalog parts of ``LakeTable.row_count_parts``, deleted
    positions read, reading where merged files hold later rows) equals DuckDB's count."""
    snapshots = [s for s in sorted(snapshot_times(lake)) if s >= 1 and s not in EXPIRED]
    expected = {
        s: lake.reference(f"SELECT count(*) AS n FROM lake.main.t AT (VERSION => {s})")
        .column("n")[0]
        .as_py()
        for s in snapshots
    }
    handle = Lake.open(**lake.reader_args())
    from_catalog = set()
    for snapshot in snapshots:
        table = handle.table_at("main", "t", SnapshotRef(snapshot_id=snapshot))
        assert count_rows(table) == expected[snapshot], snapshot
        assert execute_plan(table.scan_plan(), columns=[]).num_rows == expected[snapshot]
        if table.row_count_parts() is not None:
            from_catalog.add(snapshot)
    assert from_catalog and set(snapshots) - from_catalog  # both ways were taken


def test_count_star_opens_no_data_file(make_lake, monkeypatch):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER)")
    for start in range(0, 5000, 1000):
        lake.sql(f"INSERT INTO lake.main.t SELECT i FROM range({start}, {start + 1000}) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 7 = 0")
    expected = lake.reference("SELECT count(*) AS n FROM lake.main.t")
    opened = []
    original = _footers.parsed_fragment

    def counting(ref, *args, **kwargs):
        opened.append(ref.url)
        return original(ref, *args, **kwargs)

    monkeypatch.setattr(_footers, "parsed_fragment", counting)
    monkeypatch.setattr("ducklake_datafusion.read._reader.parsed_fragment", counting)
    monkeypatch.setattr("ducklake_datafusion.read._checked.parsed_fragment", counting)
    ctx = session(lake, native=False)  # the exact path; DataFusion's own counts footers
    assert_same_rows(ctx.sql("SELECT count(*) AS n FROM lake.main.t").to_arrow_table(), expected)
    assert opened == []
    assert (
        count_rows(Lake.open(**lake.reader_args()).table("main", "t"))
        == expected.column("n")[0].as_py()
    )
    assert opened == []
    filtered = "SELECT count(*) AS n FROM lake.main.t WHERE id > 10"
    assert_same_rows(ctx.sql(filtered).to_arrow_table(), lake.reference(filtered))
    assert opened  # a filter needs the rows
    native = session(lake)
    for sql in ("SELECT count(*) AS n FROM lake.main.t", filtered):
        assert_same_rows(native.sql(sql).to_arrow_table(), lake.reference(sql))
