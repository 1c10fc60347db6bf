"""Concurrent commits: two writer processes of ours, and DuckDB's writer beside them.

Each of our processes appends ``COMMITS`` times (one commit each) to one table of one
catalog while the test process commits DuckDB inserts to the same table; the loops are
bounded. Every commit must land or fail typed (a lost race is retried inside the commit);
afterwards DuckDB reads exactly the union: every row once, none lost, none doubled, and
one snapshot per commit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import duckdb
import pytest
from support.lakes import LakeSpec
from support.writes import duckdb_reads, ours_reads

COMMITS = 8
WRITER = textwrap.dedent(
    """
    import json, sys
    import pyarrow as pa
    from ducklake_datafusion import DuckLakeCatalog

    args = json.loads(sys.argv[1])
    catalog = DuckLakeCatalog(**args["reader"])
    for i in range(args["commits"]):
        rows = pa.table({"id": [args["worker"] * 1000 + i], "who": [f"ours{args['worker']}"]})
        catalog.table("main", "t").append(rows)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec",
    [LakeSpec(c, "local") for c in ("sqlite", "postgres", "mysql", "duckdb")],
    ids=lambda s: s.id,
)
def test_concurrent_writers_lose_nothing(make_lake, spec):
    import json

    lake = make_lake(spec, inline_limit=0)
    if spec.catalog == "mysql":
        import pyarrow as pa

        from ducklake_datafusion import DuckLakeCatalog

        DuckLakeCatalog(**lake.reader_args()).create_table(
            "main.t", pa.schema([("id", pa.int64()), ("who", pa.string())])
        )
    else:
        lake.sql("CREATE TABLE lake.main.t (id BIGINT, who VARCHAR)")
        lake.detach()
    args = lake.reader_args()
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                json.dumps({"reader": args, "commits": COMMITS, "worker": worker}),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in (1, 2)
    ]
    duck_commits = 0
    # DuckDB's writer beside ours (its own file lock makes a DuckDB-file catalog one
    # writer process at a time; MySQL cells have no DuckDB writer: support.mysql_lakes)
    if spec.catalog in ("sqlite", "postgres"):
        deadline = time.monotonic() + 60
        while duck_commits < COMMITS and time.monotonic() < deadline:
            try:
                lake.sql(f"INSERT INTO lake.main.t VALUES ({duck_commits}, 'duck')")
                duck_commits += 1
            except duckdb.Error as exc:  # DuckDB's own conflict: it says so; retry
                assert "conflict" in str(exc).lower() or "lock" in str(exc).lower(), exc
            finally:
                lake.detach()
    for worker in workers:
        _, stderr = worker.communicate(timeout=300)
        assert worker.returncode == 0, stderr
    rows = duckdb_reads(lake, "SELECT id, who FROM lake.main.t").to_pylist()
    expected = {(w * 1000 + i, f"ours{w}") for w in (1, 2) for i in range(COMMITS)}
    expected |= {(i, "duck") for i in range(duck_commits)}
    assert sorted((r["id"], r["who"]) for r in rows) == sorted(expected)
    snapshots = duckdb_reads(lake, "SELECT snapshot_id FROM lake.snapshots()").column(0)
    # creation (schema and table) plus one snapshot per commit, ids distinct
    assert len(set(snapshots.to_pylist())) == len(snapshots) == 2 + 2 * COMMITS + duck_commits


CHANGES = 5
CHANGER = textwrap.dedent(
    """
    import json, sys, time
    import pyarrow as pa
    from ducklake_datafusion import DuckLakeCatalog
    from ducklake_datafusion.errors import CommitConflictError

    args = json.loads(sys.argv[1])
    catalog = DuckLakeCatalog(**args["reader"])
    worker, done = args["worker"], {"updated": 0, "deleted": [], "conflicts": []}
    time.sleep(max(0.0, args["start_at"] - time.time()))  # every writer at once
    for i in range(args["changes"]):
        table = catalog.table("main", "t")
        table.append(pa.table({"id": [10000 * worker + i], "v": [0]}))  # always lands
        try:
            table.update({"v": "v + 1"}, "id = 3")  # the same row as every other writer
            done["updated"] += 1
        except CommitConflictError as exc:
            done["conflicts"].append(str(exc))
        try:
            table.delete(f"id = {100 * worker + i}")  # a row of its own, in the same file
            done["deleted"].append(100 * worker + i)
        except CommitConflictError as exc:
            done["conflicts"].append(str(exc))
    print(json.dumps(done))
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", [LakeSpec(c, "local") for c in ("sqlite", "postgres", "mysql")], ids=lambda s: s.id
)
def test_racing_updates_and_deletes_lose_no_update_and_raise_no_row(make_lake, spec):
    """Two processes of ours increment the same row, delete rows of one data file (racing
    each other) and append; DuckDB's writer increments the row too and deletes rows of a
    file of its own (on MySQL it only deletes: its UPDATE fails there,
    ``support.mysql_lakes``). Every increment that reported success is in the final value
    (no lost update), exactly the deletes that succeeded are gone (no resurrected row),
    every append landed; a change that lost four times is a ``CommitConflictError``
    naming the table; the row keeps its rowid; one snapshot per change that landed, no
    snapshot id twice; DuckDB reads exactly that."""
    import json

    lake = make_lake(spec, inline_limit=0)
    # three data files: our workers' rows (each deletes its own, racing the other), the
    # row everyone updates (each update ends the one-row file it is in), DuckDB's rows.
    # DuckDB 1.5.5 deletes only from a file no other writer deletes from: its conflict
    # check misses another writer's cumulative delete file on the same data file (it looks
    # for delete files that begin after its snapshot, and a cumulative one begins at its
    # oldest position's), so both commit and rows come back: DuckDB's bug, and DuckDB's own
    # two writers do the same (docs/writing.md); ours see every other writer's.
    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, v BIGINT)",
        (
            "INSERT INTO lake.main.t SELECT i, 0 FROM range(10) r(i) WHERE i <> 3 UNION ALL "
            f"SELECT w * 100 + i, 0 FROM range(1, 3) a(w), range({CHANGES}) b(i) ORDER BY 1"
        ),
        "INSERT INTO lake.main.t VALUES (3, 0)",
        f"INSERT INTO lake.main.t SELECT 300 + i, 0 FROM range({CHANGES}) r(i)",
    ]
    for statement in setup:
        lake.sql(statement)
    lake.detach()
    rowid = duckdb_reads(lake, "SELECT rowid FROM lake.main.t WHERE id = 3").column(0)[0]
    args = lake.reader_args()
    start_at = time.time() + 4  # after the workers' imports
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHANGER,
                json.dumps(
                    {"reader": args, "changes": CHANGES, "worker": worker, "start_at": start_at}
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in (1, 2)
    ]
    time.sleep(max(0.0, start_at - time.time()))
    duck = _duckdb_writer(lake, spec)
    duck_updates, duck_deletes = 0, []
    deadline = time.monotonic() + 90
    while len(duck_deletes) < CHANGES and time.monotonic() < deadline:
        try:
            if spec.catalog == "mysql":
                duck(f"DELETE FROM lake.main.t WHERE id = {300 + len(duck_deletes)}")
                duck_deletes.append(300 + len(duck_deletes))
            else:
                duck("UPDATE lake.main.t SET v = v + 1 WHERE id = 3")
                duck_updates += 1
                duck(f"DELETE FROM lake.main.t WHERE id = {300 + len(duck_deletes)}")
                duck_deletes.append(300 + len(duck_deletes))
        except duckdb.Error as exc:  # DuckDB's own conflict: it says so; retry
            # (on MySQL it is the snapshot table's key refusing a snapshot id taken meanwhile)
            lost = ("conflict", "lock", "duplicate entry")
            assert any(word in str(exc).lower() for word in lost), exc
    results = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=600)
        assert worker.returncode == 0, stderr
        results.append(json.loads(stdout))
    for result in results:
        for message in result["conflicts"]:
            assert "main.t" in message and "snapshot" in message, message
    ours = sum(r["updated"] for r in results)
    assert ours > 0
    rows = {
        r["id"]: r for r in duckdb_reads(lake, "SELECT rowid, id, v FROM lake.main.t").to_pylist()
    }
    assert rows[3]["v"] == ours + duck_updates
    assert rows[3]["rowid"] == rowid.as_py()
    deleted = {i for r in results for i in r["deleted"]} | set(duck_deletes)
    own = {w * 100 + i for w in (1, 2, 3) for i in range(CHANGES)}
    appended = {10000 * w + i for w in (1, 2) for i in range(CHANGES)}
    assert set(rows) == (set(range(10)) | own | appended) - deleted
    for lake_rows in (ours_reads(lake, "SELECT id, v FROM lake.main.t"),):
        assert sorted(lake_rows.column("id").to_pylist()) == sorted(rows)
    snapshots = duckdb_reads(lake, "SELECT snapshot_id FROM lake.snapshots()").column(0)
    landed = 2 * CHANGES + ours + len(deleted) + duck_updates
    # the schema's and the set-up's four, then one per change that landed, ids distinct
    assert len(set(snapshots.to_pylist())) == len(snapshots) == 5 + landed


def _duckdb_writer(lake, spec):
    """``run(statement)``: DuckDB's writer on ``lake``'s catalog, attached per statement
    (DuckDB holds no lock between them). A MySQL cell's lake is written through a DuckDB
    file and copied (``support.mysql_lakes``); its racing writer attaches DuckDB's own
    ``ducklake:mysql:`` catalog instead, which takes DELETEs of file rows."""
    if spec.catalog != "mysql":

        def run(statement: str) -> None:
            try:
                lake.sql(statement)
            finally:
                lake.detach()

        return run
    import duckdb_extensions

    lake.reader_args()  # the copy into MySQL made, the writer detached
    con = duckdb.connect()
    for name in ("ducklake", "mysql_scanner"):
        duckdb_extensions.import_extension(name, con=con)

    def run_on_mysql(statement: str) -> None:
        con.execute(f"ATTACH 'ducklake:{lake.metadata}' AS lake (DATA_PATH '{lake.data_path}')")
        try:
            con.execute(statement)
        finally:
            con.execute("DETACH lake")

    return run_on_mysql


def test_duckdb_s_racing_deletes_of_one_file_both_commit(make_lake):
    """A canary for DuckDB 1.5.5's conflict check (docs/writing.md, "DuckDB 1.5.5 beside
    us"): two DuckDB transactions deleting rows of a data file that has a delete file both
    commit, and both rows come back. The racing test keeps DuckDB's deletes off our files
    for this; when DuckDB refuses the second commit, this fails, and that test can let
    DuckDB delete from our files again."""
    lake = make_lake(inline_limit=0)
    for statement in (
        "CREATE TABLE lake.main.t AS SELECT i AS id FROM range(100) r(i)",
        "DELETE FROM lake.main.t WHERE id = 1",  # the file's first delete file
        "DELETE FROM lake.main.t WHERE id = 2",  # a cumulative one
    ):
        lake.sql(statement)
    con = lake.attach()
    first, second = con.cursor(), con.cursor()
    first.execute("BEGIN")
    first.execute("DELETE FROM lake.main.t WHERE id = 10")
    second.execute("DELETE FROM lake.main.t WHERE id = 20")
    first.execute("COMMIT")  # DuckDB's conflict check does not see the second's file
    lake.detach()
    kept = duckdb_reads(lake, "SELECT id FROM lake.main.t WHERE id IN (1, 2, 10, 20)")
    assert sorted(kept.column(0).to_pylist()) == [10, 20]  # both deletes lost
    live = duckdb_reads(
        lake,
        "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_delete_file "
        "WHERE end_snapshot IS NULL",
    )
    assert live.column(0)[0].as_py() == 2  # two live delete files for one data file
