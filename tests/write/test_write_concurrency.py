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
from support.writes import duckdb_reads

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
