"""Soak: a service that opens a catalog per query, 1,000 times, and what it keeps afterwards.

Each query makes a ``DuckLakeCatalog``, registers it in a fresh ``SessionContext``, reads
(the Rust scan, the exact reader and ``ducklake_table_changes`` in turn), and drops both.
Printed per catalog database: resident memory, open file descriptors, connections on the
PostgreSQL server and private DuckDB catalog copies, before and after, and the time per
query. Every answer is checked against DuckDB's. A leak shows as a count that grows with
the number of queries.

    .venv/bin/python bench/soak.py [--queries 1000] [--kinds duckdb,sqlite,postgres]

PostgreSQL runs when ``DUCKLAKE_TEST_PG`` names a server (``.ci/start_postgres.sh``).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import time
from pathlib import Path

from common import attach, cached_lake, connect, environment, markdown_table, same_rows, sorted_rows

QUERY = "SELECT k, s FROM lake.main.t WHERE k < 2000 OR k > 5990"
CHANGES = "SELECT * FROM ducklake_table_changes('lake', 'main', 't', 0, 4)"


def build(con) -> None:
    con.execute("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    con.execute("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000) r(i)")
    con.execute("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000, 6000) r(i)")
    con.execute("DELETE FROM lake.main.t WHERE k % 7 = 3")


def reference(lake, sql: str) -> list:
    con = connect(lake.kind)
    try:
        attach(con, lake, read_only=True)
        return sorted_rows(con.execute(sql).to_arrow_table())
    finally:
        con.close()


def held(lake) -> dict:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    rss_kib = resident_pages * resource.getpagesize() // 1024
    connections = None
    if lake.kind == "postgres":
        import psycopg

        with psycopg.connect(lake.metadata.removeprefix("postgres:")) as con:
            connections = con.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()[0]
    from ducklake_datafusion.catalog import _duckdb  # this process's copies, not others'

    copies = _duckdb._SHARED.copies()
    return {
        "rss_mib": rss_kib / 1024,
        "fds": len(os.listdir("/proc/self/fd")),
        "connections": connections,
        "copies": copies,
    }


def one_query(lake, kind: str, expected: dict) -> None:
    from datafusion import SessionContext

    from ducklake_datafusion import DuckLakeCatalog, register

    catalog = DuckLakeCatalog(lake.metadata, native=kind != "exact")
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    sql = CHANGES if kind == "changes" else QUERY
    got = sorted_rows(ctx.sql(sql).to_arrow_table())
    if not same_rows(got, expected[sql]):
        raise AssertionError(f"{lake.metadata}: {kind} differs from DuckDB")


def soak(lake, queries: int) -> list[str]:
    expected = {sql: reference(lake, sql) for sql in (QUERY, CHANGES)}
    kinds = ("rust", "exact", "changes")
    for kind in kinds:  # warm: imports, DataFusion's runtime threads
        one_query(lake, kind, expected)
    gc.collect()
    before = held(lake)
    started = time.perf_counter()
    for i in range(queries):
        one_query(lake, kinds[i % len(kinds)], expected)
    elapsed = time.perf_counter() - started
    gc.collect()
    after = held(lake)

    def cell(key: str, fmt: str = "{}") -> str:
        if before[key] is None:
            return "-"
        return f"{fmt.format(before[key])} -> {fmt.format(after[key])}"

    return [
        lake.kind,
        str(queries),
        cell("rss_mib", "{:.0f}"),
        cell("fds"),
        cell("connections"),
        cell("copies"),
        f"{elapsed / queries * 1000:.1f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--kinds", default="duckdb,sqlite,postgres")
    args = parser.parse_args()
    pg = os.environ.get("DUCKLAKE_TEST_PG")
    rows = []
    for kind in args.kinds.split(","):
        if kind == "postgres" and not pg:
            print("postgres: skipped (DUCKLAKE_TEST_PG is not set)")
            continue
        lake, _ = cached_lake("soak", {}, build, kind=kind, pg=pg)
        rows.append(soak(lake, args.queries))
    headers = ["catalog", "queries", "RSS MiB", "open fds", "PG connections", "copies", "per query"]
    print(markdown_table(headers, rows))
    print()
    print(environment())


if __name__ == "__main__":
    main()
