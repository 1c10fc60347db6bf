"""A reader never makes a DuckDB writer fail, and never keeps secrets in its errors.

The writer runs in another process (as a user's pipeline would) and attaches, commits and
detaches in a loop while this process queries the same DuckDB catalog file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from datafusion import SessionContext
from support.lakes import LakeSpec

from ducklake_datafusion import DuckLakeCatalog, register

WRITER = textwrap.dedent(
    """
    import duckdb, duckdb_extensions, sys, time
    path, data, commits = sys.argv[1], sys.argv[2], int(sys.argv[3])
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    failures = 0
    for i in range(commits):
        try:
            con.execute(f"ATTACH 'ducklake:{path}' AS w (DATA_PATH '{data}')")
        except duckdb.Error as exc:
            failures += 1
            print("FAILED", exc, flush=True)
            continue
        con.execute(f"INSERT INTO w.main.t VALUES ({i})")
        con.execute("DETACH w")
        print("committed", i, flush=True)
        time.sleep(0.02)
    print("failures", failures, flush=True)
    """
)


def test_writer_commits_between_and_during_queries(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"))
    lake.sql("CREATE TABLE lake.main.t (i INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100000) r(i)")
    lake.reader_args()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(lake.metadata))

    # During a query: while a scan streams data files, the catalog file is not held.
    stream = ctx.sql("SELECT i FROM lake.main.t").execute_stream()
    during = subprocess.run(
        [sys.executable, "-c", WRITER, lake.metadata, lake.data_path, "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "failures 0" in during.stdout, during.stdout + during.stderr
    assert sum(batch.to_pyarrow().num_rows for batch in stream) == 100000

    # Between queries: a reader querying in a loop next to a writer committing in a loop.
    commits = 40
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, lake.metadata, lake.data_path, str(commits)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reads, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            reads.append(ctx.sql("SELECT count(*) AS n FROM lake.main.t").to_pydict()["n"][0])
            time.sleep(0.005)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        out, err = writer.communicate(timeout=300)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert "failures 0" in out, out + err
    assert len(reads) > 5 and reads == sorted(reads)  # counts only grow
    assert (
        ctx.sql("SELECT count(*) AS n FROM lake.main.t").to_pydict()["n"][0]
        == (lake.reference("SELECT count(*) AS n FROM lake.main.t").to_pydict()["n"][0])
    )
