"""Maintenance on a DuckLake 1.1 catalog, kept in its own form.

DuckDB 1.5 neither writes nor reads 1.1 catalogs, so the oracle is DuckDB's answer on the
1.0 form of the lake (``lake_formats.migrated_copy`` migrates a copy as DuckDB 2.0 does):
after our flush, merge, rewrite and expiry on the migrated copy, our reader reads every
snapshot that is left exactly as DuckDB read it before, the
catalog stays 1.1, and every file we wrote has 1.1's extra columns filled.
"""

from __future__ import annotations

from datafusion import SessionContext
from support.lake_formats import migrated_copy
from support.lakes import LakeSpec

from ducklake_datafusion import DuckLakeCatalog, register

HISTORY = [
    "CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)",
    "INSERT INTO lake.main.t VALUES (1, 'inlined'), (2, 'inlined'), (3, 'inlined')",
    "DELETE FROM lake.main.t WHERE id = 2",
    *(
        f"INSERT INTO lake.main.t SELECT i, 'file' FROM range({low}, {low + 20}) r(i)"
        for low in (100, 200, 300, 400)
    ),
    "DELETE FROM lake.main.t WHERE id BETWEEN 100 AND 119",  # the first file, whole
    "DELETE FROM lake.main.t WHERE id BETWEEN 200 AND 214",  # 75% of the second
]
ROWS = "SELECT id, s FROM lake.main.t ORDER BY id, s"


def _ours(args: dict, snapshot: int) -> list[tuple]:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**args, snapshot=snapshot))
    table = ctx.sql(ROWS)
    return [tuple(r.values()) for r in table.to_arrow_table().to_pylist()]


def test_maintenance_of_a_migrated_1_1_catalog_reads_as_duckdb_read_it(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=5)
    for statement in HISTORY:
        lake.sql(statement)
    last = lake.snapshot_id()
    expected = {
        snapshot: [tuple(r.values()) for r in lake.reference(ROWS, snapshot=snapshot).to_pylist()]
        for snapshot in range(2, last + 1)
    }
    metadata, _ = migrated_copy(lake.metadata, lake.metadata_schema)
    args = {**lake.reader_args(), "metadata": metadata}
    catalog = DuckLakeCatalog(**args)
    assert catalog.flush_inlined_data()[0].rows_flushed == 3
    assert catalog.merge_adjacent_files()
    assert catalog.rewrite_data_files(delete_threshold=0.5)
    ours_last = catalog.snapshot_id()
    assert ours_last == last + 3
    for snapshot in range(2, last + 1):
        assert _ours(args, snapshot) == expected[snapshot], snapshot
    for snapshot in range(last + 1, ours_last + 1):  # maintenance changes no row
        assert _ours(args, snapshot) == expected[last], snapshot
    catalog.expire_snapshots(versions=list(range(2, last)))
    assert _ours(args, ours_last) == expected[last]
    with catalog.backend.session() as session:
        assert session.rows("SELECT value FROM ducklake_metadata WHERE key = 'version'") == [
            ("1.1",)
        ]
        unfilled = session.rows(
            f"SELECT count(*) FROM ducklake_data_file WHERE begin_snapshot > {last} "
            "AND row_group_count IS NULL"
        )
        assert unfilled == [(0,)]
