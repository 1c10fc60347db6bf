"""Our writes on every catalog database x store, read back by DuckDB (the reference).

Each cell: a table created with rows (``CREATE TABLE AS``), an append, an overwrite; at
every snapshot DuckDB's ``ducklake`` extension and our reader read exactly the rows
written; every file's catalog statistics are true bounds of the file (DuckDB's own
reading of it); the change feed lists our inserts as DuckDB lists them. Then DuckDB
writes after us (insert, delete, update, compaction, expiry, cleanup) and both readers
agree again. MySQL cells: DuckDB reads back our commits; its own writes there go through
the test writer's copy of a DuckDB file (``support.mysql_lakes``), which would overwrite
ours, so they are left out.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.lakes import assert_same_rows
from support.writes import (
    assert_bounds_hold,
    assert_reads_back,
    assert_same_answers,
    duckdb_reads,
    ours_reads,
)

from ducklake_datafusion import DuckLakeCatalog


def _rows(start: int, count: int, tag: str) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"{tag}{i}" if i % 7 else None for i in ids], pa.string()),
            "price": pa.array([i / 4 if i % 11 else float("nan") for i in ids], pa.float64()),
            "tags": pa.array([[tag, str(i)] if i % 5 else [] for i in ids], pa.list_(pa.string())),
        }
    )


def test_writes_read_back_on_every_cell(lake):
    catalog = DuckLakeCatalog(**lake.reader_args())
    first, second, third = _rows(0, 300, "a"), _rows(300, 200, "b"), _rows(1000, 50, "c")

    created = catalog.create_table("main.t", first, author="test", commit_message="first")
    appended = catalog.table("main", "t").append(second)
    replaced = catalog.table("main", "t").overwrite(third)
    assert created < appended < replaced

    assert_reads_back(lake, "t", first, snapshot=created)
    assert_reads_back(lake, "t", pa.concat_tables([first, second]), snapshot=appended)
    assert_reads_back(lake, "t", third, snapshot=replaced)
    if lake.mirror is None:  # (DuckDB reads a mirrored lake's local copy by its own paths)
        assert_bounds_hold(lake)

    # the change feed sees our commits as DuckDB's: same rows, same change types
    feed = (
        f"SELECT snapshot_id, change_type, id, name FROM "
        f"ducklake_table_changes('lake', 'main', 't', {created}, {replaced})"
    )
    reference = duckdb_reads(
        lake,
        f"SELECT snapshot_id, change_type, id, name FROM "
        f"lake.table_changes('t', {created}, {replaced})",
    )
    assert_same_rows(ours_reads(lake, feed), reference)
    assert reference.num_rows == first.num_rows + second.num_rows + third.num_rows + 500
    history = duckdb_reads(
        lake, f"SELECT author, commit_message FROM lake.snapshots() WHERE snapshot_id = {created}"
    )
    assert history.to_pylist() == [{"author": "test", "commit_message": "first"}]

    if lake.spec.catalog == "mysql":
        return
    # DuckDB keeps writing after us, and both readers agree at every step
    for statement in (
        "INSERT INTO lake.main.t (id, name) SELECT i, 'duck' FROM range(2000, 2100) r(i)",
        "DELETE FROM lake.main.t WHERE id % 3 = 0",
        "UPDATE lake.main.t SET name = 'updated' WHERE id BETWEEN 1000 AND 1010",
        "CALL ducklake_merge_adjacent_files('lake')",
        "CALL ducklake_expire_snapshots('lake', versions => [1])",
        "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)",
    ):
        lake.sql(statement)
        lake.detach()
        assert_same_answers(lake, "SELECT * FROM lake.main.t")
    # and we write after DuckDB again
    catalog = DuckLakeCatalog(**lake.reader_args())
    catalog.table("main", "t").append(_rows(5000, 10, "d"))
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    assert_same_answers(
        lake, "SELECT count(*) AS n, CAST(sum(id) AS BIGINT) AS s FROM lake.main.t WHERE id >= 5000"
    )


@pytest.mark.parametrize("kind", ["duckdb-created", "ours-created"])
def test_append_to_a_table_duckdb_created(make_lake, kind):
    """Appends to a table DuckDB created (with inlined rows and deletes) continue its row
    ids and statistics; DuckDB reads the union."""
    lake = make_lake(inline_limit=10)
    if kind == "duckdb-created":
        lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR, price DOUBLE, tags VARCHAR[])")
        lake.sql("INSERT INTO lake.main.t VALUES (1, 'inlined', 1.5, ['x'])")
        lake.sql("INSERT INTO lake.main.t SELECT i, 'file', i, [] FROM range(100, 200) r(i)")
        lake.sql("DELETE FROM lake.main.t WHERE id = 150")
    catalog = DuckLakeCatalog(**lake.reader_args())
    if kind == "ours-created":
        catalog.create_table("main.t", _rows(0, 0, "x").schema)
    catalog.table("main", "t").append(_rows(1000, 20, "ours"))
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    rowids = duckdb_reads(lake, "SELECT rowid FROM lake.main.t").column(0).to_pylist()
    assert len(rowids) == len(set(rowids)), "row ids must stay unique"
    assert_bounds_hold(lake)
    lake.sql("INSERT INTO lake.main.t (id) VALUES (7)")  # an inlined insert after ours
    lake.detach()
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    # an overwrite ends DuckDB's inlined rows and files too; time travel keeps them
    before = duckdb_reads(lake, "SELECT * FROM lake.main.t")
    kept = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    replaced = kept.overwrite(_rows(9000, 3, "new"))
    assert_same_rows(duckdb_reads(lake, "SELECT * FROM lake.main.t"), _rows(9000, 3, "new"))
    assert_same_rows(duckdb_reads(lake, "SELECT * FROM lake.main.t", replaced - 1), before)
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    lake.sql("INSERT INTO lake.main.t (id) VALUES (8)")
    lake.detach()
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
