"""A catalog releases what it holds when it is dropped, and at once when it is closed.

A service that makes a ``DuckLakeCatalog`` per request used to leave one PostgreSQL
connection (or one SQLite file descriptor) behind per catalog, until the server refused
every client ("too many clients already"): process-wide memos of planned providers held
the catalog. Here 200 catalogs are made, queried on every path (Rust scan, exact reader,
``ducklake_table_changes``) and dropped, against a PostgreSQL server of the test's own
started with a low ``max_connections`` so that a leak fails loudly; connections on the
server, the process's open file descriptors and the private copies of DuckDB catalogs must
stay at a small constant. Every answer is compared with DuckDB's.
"""

from __future__ import annotations

import gc
import os
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec, PgServer, assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import CatalogClosedError
from ducklake_datafusion.provider import _rust, _rust_lazy

ROOT = Path(__file__).resolve().parent.parent
# Low enough that ~10 leaked connections fail the loop (3 are reserved for superusers,
# which the tests are: the limit they meet is this minus 3).
MAX_CONNECTIONS = 16
# (a catalog leaking one connection per use fails within ~13 of these; 100 is 25 of each kind)
CATALOGS = 100
SPARK_READS = 20  # each ~0.3 s
# What may be open beyond the baseline: a connection of a DataFusion runtime thread still
# being torn down, a file a DuckDB instance keeps for its own use.
SLACK = 2


@pytest.fixture(scope="module")
def small_pg():
    """A PostgreSQL server of this module's own, with ``max_connections`` = 16."""
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes") and not os.environ.get(
        "DUCKLAKE_TEST_PG"
    ):
        pytest.skip("no PostgreSQL server binaries configured (set DUCKLAKE_TEST_PG; .ci/run)")
    started = subprocess.run(  # in a directory of its own (the server's user must reach it)
        [str(ROOT / ".ci" / "start_postgres.sh")],
        env={**os.environ, "PG_MAX_CONNECTIONS": str(MAX_CONNECTIONS)},
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        pytest.fail(f"could not start a small PostgreSQL server: {started.stderr}")
    exports = dict(
        line.removeprefix("export ").split("=", 1)
        for line in started.stdout.splitlines()
        if line.startswith("export ")
    )
    conninfo = shlex.split(exports["DUCKLAKE_TEST_PG"])[0]
    directory = shlex.split(exports["DUCKLAKE_TEST_PG_DIR"])[0]
    try:
        yield PgServer(conninfo)
    finally:
        subprocess.run(
            [str(ROOT / ".ci" / "stop_postgres.sh"), directory],
            capture_output=True,
            check=False,
        )


@pytest.fixture(params=["duckdb", "sqlite", "postgres", "mysql"])
def released_lake(request, tmp_path, small_pg_if_needed):
    """A local lake on each catalog database: deletes, an inlined row, five snapshots."""
    from support.lakes import make_lake

    spec = LakeSpec(request.param, "local")
    mysql = request.getfixturevalue("mysql") if spec.catalog == "mysql" else None
    lake = make_lake(spec, tmp_path, pg=small_pg_if_needed(spec), mysql=mysql, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000, 6000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 3")
    lake.sql("INSERT INTO lake.main.t VALUES (9999, 'inlined')")
    try:
        yield lake
    finally:
        lake.close()


@pytest.fixture
def small_pg_if_needed(request):
    def get(spec: LakeSpec):
        return request.getfixturevalue("small_pg") if spec.catalog == "postgres" else None

    return get


def _server_connections(lake) -> int:
    """Connections to the lake's PostgreSQL or MySQL database but this one (0 for file
    catalogs)."""
    metadata = lake.reader_args()["metadata"]
    if metadata.startswith("mysql:"):
        import pymysql
        from support.mysql_lakes import mysql_keys

        keys = mysql_keys(metadata.removeprefix("mysql:"))
        con = pymysql.connect(
            host=keys["host"], port=int(keys["port"]), user=keys["user"], database=keys["database"]
        )
        with con, con.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM information_schema.processlist "
                "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
            )
            return cursor.fetchone()[0]
    if not metadata.startswith("postgres:"):
        return 0
    import psycopg

    with psycopg.connect(metadata.removeprefix("postgres:"), autocommit=True) as con:
        (count,) = con.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return count


def _catalog_copies() -> int:
    """Private copies of DuckDB catalogs this process holds (each a temporary directory;
    counted here, not in the temporary directory other test processes share)."""
    from ducklake_datafusion.catalog import _duckdb

    return _duckdb._SHARED.copies()


def _held(lake, settled: int | None = None) -> tuple[int, int, int]:
    """(server connections, this process's open file descriptors, catalog copies).

    ``settled``: the server connections expected once closed ones are gone; a server ends
    the backend of a connection its client closed a moment later (PostgreSQL lists it
    until then), so the count is read again for up to 5 seconds until it is that."""
    connections = _server_connections(lake)
    deadline = time.monotonic() + 5
    while settled is not None and connections > settled and time.monotonic() < deadline:
        time.sleep(0.05)
        connections = _server_connections(lake)
    return connections, len(os.listdir("/proc/self/fd")), _catalog_copies()


QUERY = "SELECT k, s FROM lake.main.t WHERE k < 2000 OR k > 5990"
CHANGES = "SELECT * FROM ducklake_table_changes('lake', 'main', 't', 0, 4)"


def _query(lake, kind: str, expected: dict):
    """One catalog made, queried one way, and dropped (or closed)."""
    args = lake.reader_args()
    if kind == "with":
        with DuckLakeCatalog(**args) as catalog:
            ctx = SessionContext()
            register(ctx, "lake", catalog)
            got = ctx.sql(QUERY).to_arrow_table()
        assert_same_rows(got, expected["query"])
        return
    catalog = DuckLakeCatalog(**args, native=kind != "exact")
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    if kind == "changes":
        assert_same_rows(ctx.sql(CHANGES).to_arrow_table(), expected["changes"])
    else:
        assert_same_rows(ctx.sql(QUERY).to_arrow_table(), expected["query"])


def test_dropped_catalogs_release_their_connections_files_and_copies(released_lake):
    lake = released_lake
    expected = {"query": lake.reference(QUERY), "changes": lake.reference(CHANGES)}
    kinds = ("rust", "exact", "changes", "with")
    for kind in kinds:  # warm: imports, DataFusion's runtime threads, footers
        _query(lake, kind, expected)
    gc.collect()
    before = peak = _held(lake)
    for i in range(CATALOGS):
        _query(lake, kinds[i % len(kinds)], expected)
        if i % 25 == 24:  # dropped catalogs are freed by reference counting alone
            peak = tuple(max(a, b) for a, b in zip(peak, _held(lake)))
    gc.collect()
    after = _held(lake)
    assert after[0] <= before[0] + SLACK, f"connections {before[0]} -> {after[0]}"
    assert after[1] <= before[1] + SLACK, f"file descriptors {before[1]} -> {after[1]}"
    assert after[2] <= before[2], f"catalog copies {before[2]} -> {after[2]}"
    assert peak[0] <= before[0] + SLACK, f"connections peaked at {peak[0]} (from {before[0]})"
    assert peak[1] <= before[1] + SLACK + 2, f"descriptors peaked at {peak[1]} (from {before[1]})"
    assert _rust._built.owners() <= 1 and _rust_lazy._resolved.owners() <= 1


def test_close_releases_at_once_and_a_closed_catalog_says_so(released_lake):
    lake = released_lake
    expected = lake.reference(QUERY)
    # warm: the first query starts DataFusion's runtime (its threads and descriptors)
    _query(lake, "rust", {"query": expected})
    gc.collect()
    before = _held(lake)
    catalog = DuckLakeCatalog(**lake.reader_args())
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    # a scan on DataFusion's runtime threads, and a read on a thread of our own that
    # stays alive (its connection must close with the catalog, not with the thread)
    assert_same_rows(ctx.sql(QUERY).to_arrow_table(), expected)
    read, done = threading.Event(), threading.Event()

    def reader():
        catalog.table("main", "t").to_arrow()
        read.set()
        done.wait(30)

    other = threading.Thread(target=reader)
    other.start()
    try:
        assert read.wait(30)
        opened = _held(lake)
        catalog.close()
        closed = _held(lake, settled=before[0])
    finally:
        done.set()
        other.join()
    catalog.close()  # idempotent
    with pytest.raises(CatalogClosedError, match="was closed"):
        catalog.table("main", "t")
    with pytest.raises(CatalogClosedError, match="was closed"):  # registered, still closed
        ctx.sql(QUERY).to_arrow_table()
    if lake.spec.catalog in ("postgres", "mysql"):
        assert opened[0] > before[0]  # the catalog did hold connections
    if lake.spec.catalog == "duckdb":
        assert opened[2] == before[2] + 1  # and a private copy
    assert closed[0] == before[0], f"connections {before[0]} -> {opened[0]} -> {closed[0]}"
    assert closed[1] <= before[1] + SLACK, f"descriptors {before[1]} -> {closed[1]}"
    assert closed[2] == before[2], f"catalog copies {before[2]} -> {closed[2]}"


@pytest.mark.spark
def test_spark_reads_release_their_catalogs(released_lake, spark):
    """``read_table`` opens the catalog on the driver (and in the data source's Python
    workers, for inlined rows) and must leave no connection or copy behind."""
    from ducklake_datafusion.spark import read_table

    lake = released_lake
    args = lake.reader_args()
    expected = lake.reference("SELECT k, s FROM lake.main.t")

    def read() -> None:
        frame = read_table(spark, args["metadata"], "main.t")
        assert_same_rows(frame.toArrow(), expected)

    read()  # warm: the format's registration, Spark's Python workers
    gc.collect()
    before = _held(lake)
    for _ in range(SPARK_READS):
        read()
    gc.collect()
    after = _held(lake)
    assert after[0] <= before[0] + SLACK, f"connections {before[0]} -> {after[0]}"
    assert after[2] <= before[2], f"catalog copies {before[2]} -> {after[2]}"


def test_a_duckdb_catalog_freed_inside_a_copy_never_waits_for_it(released_lake):
    """A backend's finaliser runs wherever a garbage collection starts, also inside the
    shared instance while it holds its lock (copying a file): the release is queued, not
    waited for, and applied before the lock is let go (it once deadlocked the suite)."""
    if released_lake.spec.catalog != "duckdb":
        pytest.skip("DuckDB catalog files only")
    from ducklake_datafusion.catalog import _duckdb

    catalog = DuckLakeCatalog(**released_lake.reader_args())
    catalog.table("main", "t")  # makes the copy
    done = threading.Event()

    def release_under_the_lock() -> None:
        with _duckdb._SHARED._lock:  # as a finaliser inside _SharedInstance._copy is
            catalog.close()
        done.set()

    worker = threading.Thread(target=release_under_the_lock, daemon=True)
    worker.start()
    assert done.wait(10), "a release waited for the lock its own thread holds"
    assert _duckdb._SHARED.copies() == 0  # applied by the next holder of the lock
