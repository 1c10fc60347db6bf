"""``with lake.transaction() as tx:``: changes of several tables as one snapshot, or none.

The oracle is DuckDB running the same changes in one transaction (``BEGIN`` ... ``COMMIT``)
on a twin lake: one snapshot on both, the rows of every table with their ``rowid``, the
change feed, read by DuckDB and by our readers. A block that raises, or a commit that loses
to another writer, leaves the lake as it was and no file behind.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.writes import duckdb_reads, ours_reads
from test_deletes import _twins

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import CommitConflictError, InvalidOptionError

TABLES = ("a", "b", "c", "d")
SETUP = [
    statement
    for name in TABLES
    for statement in (
        f"CREATE TABLE lake.main.{name} (id BIGINT, v VARCHAR)",
        f"INSERT INTO lake.main.{name} SELECT i, 'v' || i FROM range(100) r(i)",
    )
]


def _files(lake) -> set[str]:
    found = set()
    for root, _, names in os.walk(lake.data_path):
        found.update(os.path.join(root, n) for n in names)
    return found


def _rows(lake, name: str, snapshot: int | None = None) -> pa.Table:
    return duckdb_reads(lake, f"SELECT rowid, * FROM lake.main.{name} ORDER BY rowid", snapshot)


@pytest.mark.parametrize(
    "spec", [LakeSpec("duckdb", "local"), LakeSpec("postgres", "local")], ids=lambda s: s.id
)
def test_changes_of_four_tables_are_one_snapshot_as_in_duckdb(make_lake, spec):
    ours, theirs = _twins(make_lake, spec, SETUP)
    before = theirs.snapshot_id()
    theirs.sql(
        "BEGIN; "
        "INSERT INTO lake.main.a VALUES (500, 'new'), (501, 'new'); "
        "DELETE FROM lake.main.b WHERE id % 3 = 0; "
        "UPDATE lake.main.c SET v = upper(v) WHERE id < 10; "
        "MERGE INTO lake.main.d USING (SELECT * FROM (VALUES (5, 'five'), (700, 'seven')) "
        "AS s(id, v)) AS s ON d.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v; "
        "COMMIT"
    )
    theirs.detach()
    lake = DuckLakeCatalog(**ours.reader_args())
    with lake.transaction(commit_message="four tables") as tx:
        added = tx.table("main", "a").append(
            pa.table({"id": pa.array([500, 501], pa.int64()), "v": ["new", "new"]})
        )
        deleted = tx.table("main.b").delete("id % 3 = 0")
        updated = tx.table("main", "c").update({"v": "upper(v)"}, "id < 10")
        merged = (
            tx.table("main", "d")
            .merge(pa.table({"id": [5, 700], "v": ["five", "seven"]}), ["id"])
            .when_matched_update({"v": "source.v"})
            .execute()
        )
        assert ours.snapshot_id() == before  # nothing visible before the block ends
    assert (added.inserted, deleted.deleted, updated.updated, merged.updated) == (2, 34, 10, 1)
    assert added.snapshot_id is None
    assert tx.snapshot_id == ours.snapshot_id() == theirs.snapshot_id() == before + 1
    for name in TABLES:
        assert_same_rows(_rows(ours, name), _rows(theirs, name), ordered=True)
        feed = (
            f"SELECT * FROM ducklake_table_changes('lake', 'main', '{name}', {before + 1}, "
            f"{before + 1}) ORDER BY rowid, change_type"
        )
        assert_same_rows(duckdb_reads(ours, feed), duckdb_reads(theirs, feed), ordered=True)
        expected = duckdb_reads(theirs, f"SELECT * FROM lake.main.{name}")
        assert_same_rows(ours_reads(ours, f"SELECT * FROM lake.main.{name}"), expected)
    message = "SELECT commit_message FROM lake.snapshots() ORDER BY snapshot_id DESC LIMIT 1"
    assert duckdb_reads(ours, message).column(0).to_pylist() == ["four tables"]


def test_a_block_that_raises_or_loses_commits_nothing_and_leaves_no_file(make_lake):
    lake = make_lake(inline_limit=0)
    for statement in SETUP:
        lake.sql(statement)
    lake.detach()
    before, files = lake.snapshot_id(), _files(lake)
    catalog = DuckLakeCatalog(**lake.reader_args())
    with pytest.raises(RuntimeError, match="changed my mind"), catalog.transaction() as tx:
        tx.table("main", "a").append(pa.table({"id": [1000]}))
        tx.table("main", "b").delete("id < 50")
        raise RuntimeError("changed my mind")
    assert (lake.snapshot_id(), _files(lake)) == (before, files)

    # a change that fails inside the block rolls the whole transaction back at once
    tx = catalog.transaction()
    tx.table("main", "a").append(pa.table({"id": [1002]}))
    with pytest.raises(InvalidOptionError, match="nope"):
        tx.table("main", "c").update({"nope": "1"}, "id = 1")
    with pytest.raises(InvalidOptionError, match="rolled back"):
        tx.commit()
    assert (lake.snapshot_id(), _files(lake)) == (before, files)

    tx = catalog.transaction()
    tx.table("main", "a").update({"v": "'x'"}, "id = 1")
    tx.table("main", "b").append(pa.table({"id": [1001]}))
    with pytest.raises(InvalidOptionError, match="already changed in this transaction"):
        tx.table("main", "a").delete("id = 2")
    with pytest.raises(InvalidOptionError, match="already appended to"):
        tx.table("main", "b").delete("id = 2")
    catalog.table("main", "a").delete("id < 5")  # another writer, the same file
    with pytest.raises(CommitConflictError, match="main.a"):
        tx.commit()
    with pytest.raises(InvalidOptionError, match="committed or rolled back"):
        tx.table("main", "c")
    assert lake.snapshot_id() == before + 1
    assert (
        _files(lake) - files
        == {path for path in _files(lake) if path.endswith("-delete.parquet")} - files
    )  # only the other writer's delete file is new
    assert duckdb_reads(lake, "SELECT count(*) FROM lake.main.b").column(0)[0].as_py() == 100
