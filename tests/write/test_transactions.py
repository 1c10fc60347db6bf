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
from support.twins import twin_feed, twin_lakes, twin_rows
from support.writes import duckdb_reads, ours_reads

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
    ours, theirs = twin_lakes(make_lake, spec, SETUP)
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


# What another writer (DuckDB) commits between a DELETE's plan and its commit, and what the
# conflict table (catalog/_conflicts.py) makes of it: an append never conflicts with a
# delete; another delete of the same file, a rewrite that ends it and an ALTER of the table
# do. With no second plan the conflict is the answer (typed, naming what changed, the lake
# as the other writer left it); with the default re-plans the delete lands on the new state
# and equals DuckDB running both statements in that order on a twin.
BETWEEN = {
    "append": ("INSERT INTO lake.main.t VALUES (5003, 'late', 1.0, [])", None),
    "delete": ("DELETE FROM lake.main.t WHERE id = 13", r"had rows of its data file \d+"),
    "rewrite": (
        "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0)",
        r"had its data file \d+ ended",
    ),
    "alter": ("ALTER TABLE lake.main.t ADD COLUMN w INTEGER", "had its columns or partitioning"),
}


@pytest.mark.parametrize("case", list(BETWEEN))
def test_what_commits_between_a_deletes_plan_and_its_commit(make_lake, monkeypatch, case):
    from ducklake_datafusion.provider import _row_statements

    statement, conflict = BETWEEN[case]
    where = "id % 10 = 3"
    for replans in (1, _row_statements.REPLANS):
        ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
        base = ours.snapshot_id()
        interleaved = []
        real = _row_statements.locate

        def locate_then_commit_another(*args, _real=real, _lake=ours, _done=interleaved, **kwargs):
            found = _real(*args, **kwargs)
            if not _done:  # the first plan only: the other writer commits after it
                _done.append(True)
                _lake.sql(statement)
                _lake.detach()
            return found

        monkeypatch.setattr(_row_statements, "locate", locate_then_commit_another)
        monkeypatch.setattr(_row_statements, "REPLANS", replans)
        table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
        if conflict is None:  # the appended row matches the condition, but came after the
            theirs.sql(statement)  # plan: it stays, as in DuckDB when the delete began before
            theirs.sql(f"DELETE FROM lake.main.t WHERE {where} AND id <> 5003")  # the append
            assert table.delete(where).snapshot_id == theirs.snapshot_id()
            theirs.detach()
        elif replans == 1:
            theirs.sql(statement)
            named = rf"main.t {conflict}.* by snapshot {base + 1} after snapshot {base}"
            with pytest.raises(CommitConflictError, match=named):
                table.delete(where)
            theirs.detach()
        else:
            theirs.sql(statement)
            result = table.delete(where)
            theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
            theirs.detach()
            assert result.snapshot_id == theirs.snapshot_id()
        monkeypatch.setattr(_row_statements, "locate", real)
        assert ours.snapshot_id() == theirs.snapshot_id()
        # every snapshot since the base: rows (with rowid) and the change feed
        for snapshot in range(base + 1, theirs.snapshot_id() + 1):
            for mine, their in zip(
                (twin_rows(ours, snapshot), twin_feed(ours, snapshot)),
                (twin_rows(theirs, snapshot), twin_feed(theirs, snapshot)),
            ):
                if case == "rewrite":  # DuckDB numbers the rows it rewrites in its threads'
                    mine, their = mine.drop_columns("rowid"), their.drop_columns("rowid")
                assert_same_rows(mine, their, ordered=case != "rewrite")
        assert_same_rows(
            ours_reads(ours, "SELECT * FROM lake.main.t"),
            duckdb_reads(theirs, "SELECT * FROM lake.main.t"),
        )
        if conflict is None:
            break
