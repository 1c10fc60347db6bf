"""Catalog benchmark: table lookup and scan planning on every catalog backend.

    .venv/bin/python bench/metadata.py            # 10,000-file table per backend
    .venv/bin/python bench/metadata.py --quick    # 1,000-file table per backend
    .venv/bin/python bench/metadata.py --files 100000 --sql   # + SQL after a commit

Backends: DuckDB file, SQLite file, and PostgreSQL when ``DUCKLAKE_TEST_PG`` holds a libpq
keyword string of a reachable server (start one with ``eval "$(.ci/start_postgres.sh)"``).
Each backend gets its own lake (written by the reference writer, cached under
./bench_lakes/; PostgreSQL lakes in a database of their own) with table ``main.t`` of
N files of 2,048 rows (k BIGINT clustered, so a range filter keeps ~5 files).

Targets: catalog lookups under 5 ms, planning a 10,000-file scan under 100 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import time
import types

import datafusion
import pyarrow.compute as pc
from common import (
    build_many_files,
    cached_lake,
    copy_catalog_rows,
    environment,
    load_average,
    markdown_table,
    measure,
    measure_planning,
    millis,
    replicate_file_rows,
)

from ducklake_datafusion import DuckLakeCatalog, register


def bench_backend(kind: str, files: int, repeat: int, pg: str | None) -> list[str]:
    """One row of the report: lookup and planning medians for one backend."""
    lake, built = files_lake(kind, files, pg)
    note = f"built in {built:.1f} s" if built else "cached"
    lo, hi = table_files(files) * 1024, table_files(files) * 1024 + 9_999
    expr = (pc.field("k") >= lo) & (pc.field("k") <= hi)

    def cold_lookup():
        catalog = DuckLakeCatalog(lake.metadata)
        try:
            return catalog.table("main", "t")
        finally:
            close = getattr(catalog.backend, "close", None)
            if close is not None:
                close()

    catalog = DuckLakeCatalog(lake.metadata)
    ctx = datafusion.SessionContext()
    register(ctx, "lake", catalog)
    cold, _ = measure(cold_lookup, repeat=repeat)
    warm, table = measure(lambda: catalog.table("main", "t"), repeat=repeat)
    resolve, _ = measure(lambda: ctx.sql("SELECT k FROM lake.main.t"), repeat=repeat)
    t = measure_planning(catalog, table, expr, repeat=repeat)
    committed = _after_commits(lake, kind, files, repeat) if kind != "postgres" else None
    close = getattr(catalog.backend, "close", None)
    if close is not None:
        close()
    return [
        kind,
        millis(cold.median),
        millis(warm.median),
        millis(resolve.median),
        _new_and_unchanged(t.full_new, t.full, f"{t.plan_all.stats.files_total} files"),
        _new_and_unchanged(t.pruned_new, t.pruned, f"{t.plan_pruned.stats.files_scanned} kept"),
        "-" if committed is None else f"{millis(committed[0])} (full read {millis(committed[1])})",
        note,
    ]


def _after_commits(lake, kind: str, files: int, repeat: int):
    """``scan_plan()`` right after a one-row commit by DuckDB (a copy of the catalog, so the
    cached lake stays as built): an open catalog refreshes what changed
    (``catalog/_refresh``); ``full`` re-reads everything, as a catalog without the
    previous version's memo does. Returns median seconds (refreshed, full)."""
    import shutil
    import tempfile

    from common import Lake, attach, connect

    path = lake.metadata.removeprefix("sqlite:")
    copy = os.path.join(tempfile.mkdtemp(), os.path.basename(path))
    shutil.copy(path, copy)
    metadata = ("sqlite:" if lake.metadata.startswith("sqlite:") else "") + copy
    writer = connect(kind)
    scratch = Lake(metadata=metadata, root=lake.root, kind=kind)
    counter = iter(range(10**9))

    def commit():
        attach(writer, scratch)  # DATA_PATH of the cached lake: one-row commits stay inlined
        writer.execute("INSERT INTO lake.main.t (k) VALUES (?)", [-1 - next(counter)])
        writer.execute("DETACH lake")

    catalog = DuckLakeCatalog(metadata)
    catalog.table("main", "t").scan_plan()

    def after_commit(forget: bool) -> float:
        """Median seconds of planning (the commit itself not timed)."""
        times = []
        for _ in range(repeat + 1):  # the first is a warm-up
            commit()
            if forget:
                catalog.forget_metadata()
            started = time.perf_counter()
            plan = catalog.table("main", "t").scan_plan()
            times.append(time.perf_counter() - started)
            assert plan.stats.files_total >= files, plan.stats
        return statistics.median(times[1:])

    return after_commit(False), after_commit(True)


def sql_after_commit(kind: str, files: int, repeat: int, pg: str | None) -> list[list[str]]:
    """The issue's table: SQL queries right after a one-row commit by DuckDB, ours (one
    open catalog registered in a SessionContext, planning and running) against DuckDB's
    (attached afresh after each commit, as a separate reader process would), and the
    query on a new catalog object (its metadata memo empty, the process's caches warm). Commits go into the
    cached lake (one inlined row each, negative k), so its counts grow run by run."""
    from common import attach, connect

    lake, _ = files_lake(kind, files, pg)
    middle = table_files(files) * 1024
    lo, hi = middle, middle + 4_095  # two files (each registered files / 100,000 times)
    queries = {
        "selective count (2 files)": f"SELECT count(*) FROM lake.main.t WHERE k BETWEEN {lo} AND {hi}",
        "count(*) of the table": "SELECT count(*) FROM lake.main.t",
    }
    writer = connect(kind)
    counter = iter(range(10**9))

    def commit():
        attach(writer, lake)
        writer.execute("INSERT INTO lake.main.t (k) VALUES (?)", [-1 - next(counter)])
        writer.execute("DETACH lake")

    catalog = DuckLakeCatalog(lake.metadata)
    ctx = datafusion.SessionContext()
    register(ctx, "lake", catalog)
    rows = []
    for label, sql in queries.items():
        ours, duck = [], []
        for run in range(repeat + 1):  # the first is a warm-up
            commit()
            started = time.perf_counter()
            got = ctx.sql(sql).to_pylist()
            ours.append(time.perf_counter() - started)
            reader = connect(kind)
            started = time.perf_counter()
            attach(reader, lake, read_only=True)
            expected = reader.execute(sql).fetchall()
            duck.append(time.perf_counter() - started)
            reader.close()
            assert next(iter(got[0].values())) == expected[0][0], (label, got, expected)
        first = []
        for _ in range(max(1, repeat // 2)):
            started = time.perf_counter()
            fresh = DuckLakeCatalog(lake.metadata)
            fresh_ctx = datafusion.SessionContext()
            register(fresh_ctx, "lake", fresh)
            fresh_ctx.sql(sql).to_pylist()
            first.append(time.perf_counter() - started)
            close = getattr(fresh.backend, "close", None)
            if close is not None:
                close()
        a, b = statistics.median(ours[1:]), statistics.median(duck[1:])
        rows.append(
            [kind, label, millis(a), millis(b), f"{a / b:.2f}x", millis(statistics.median(first))]
        )
    writer.close()
    close = getattr(catalog.backend, "close", None)
    if close is not None:
        close()
    return rows


def files_lake(kind: str, files: int, pg: str | None):
    """The ``files`` lake of ``kind``; a PostgreSQL one of more than 10,000 files is a copy
    of the DuckDB-file lake's catalog rows (``common.copy_catalog_rows``), and a DuckDB one
    of more than 100,000 files the catalog of the 100,000-file lake with every file
    registered ``files / 100,000`` times (``common.replicate_file_rows``: a million real
    files would not fit this machine's disk)."""
    if kind == "duckdb" and files > _REAL_FILES_MAX:
        source, _ = files_lake("duckdb", _REAL_FILES_MAX, None)

        def replicate(con):
            con.execute("DETACH lake")
            shutil.copy(source.metadata, target.metadata)
            con.execute(f"ATTACH '{target.metadata}' AS lake_catalog")
            replicate_file_rows(con, files // _REAL_FILES_MAX)
            con.execute("DETACH lake_catalog")
            con.execute(f"ATTACH 'ducklake:{target.metadata}' AS lake")

        target = _replicated_target(files)
        lake, built = cached_lake("files-replicated", {"n": files}, replicate, kind=kind)
        return dataclasses.replace(lake, root=source.root), built
    if kind == "postgres" and files > 10_000:
        source, _ = files_lake("duckdb", files, None)

        def build(con):
            copy_catalog_rows(con, source, lake_dsn(pg, files))

        lake, built = cached_lake("files-copied", {"n": files}, build, kind=kind, pg=pg)
        return dataclasses.replace(lake, root=source.root), built  # its files are the source's
    return cached_lake(
        "files", {"n": files}, lambda con: build_many_files(con, files), kind=kind, pg=pg
    )


_REAL_FILES_MAX = 100_000


def _replicated_target(files: int):
    from common import LAKES, RECIPE

    return types.SimpleNamespace(
        metadata=str(LAKES / f"files-replicated-duckdb-r{RECIPE}-n{files}" / "catalog.ducklake")
    )


def table_files(files: int) -> int:
    """Distinct files of the ``files`` lake's table (its key range: 2,048 rows each)."""
    return min(files, _REAL_FILES_MAX)


def lake_dsn(pg: str, files: int) -> str:
    """The libpq string of the copied lake's own database (as ``cached_lake`` names it)."""
    from common import RECIPE, _pg_name
    from psycopg.conninfo import make_conninfo

    key = f"files-copied-postgres-r{RECIPE}-n{files}"
    return make_conninfo(pg, dbname=_pg_name(key))


def _new_and_unchanged(new, unchanged, note: str) -> str:
    return f"{millis(new.median)} / {millis(unchanged.median)} ({note})"


def _planning_table(kinds: list[str], files: int, repeat: int, pg: str | None) -> None:
    rows = [bench_backend(kind, files, repeat, pg) for kind in kinds]
    print(f"\n## Catalog lookups and planning, table of {files:,} files\n")
    headers = [
        "backend",
        "lookup cold",
        "lookup warm",
        "DataFusion resolve",
        "scan_plan() all: new / unchanged",
        "scan_plan(filter): new / unchanged",
        "scan_plan() after a one-row commit",
        "lake",
    ]
    print(markdown_table(headers, rows))
    print(
        "\nlookup = DuckLakeCatalog(...).table('main', 't') (cold: new catalog object, so a new "
        "connection; warm: the same object again); DataFusion resolve = ctx.sql('SELECT k FROM "
        "lake.main.t') (schema + table lookups, logical plan); scan_plan = planning from catalog "
        "metadata (plus pruning with k BETWEEN, ~5 files kept); new = first scan of a lake "
        "version (after a commit: file metadata read and decoded), unchanged = the lake did "
        "not change since the last scan (metadata memoised per version, one version query). "
        "Targets: lookups < 5 ms, planning < 100 ms, plan + prune < 50 ms."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 files instead of 10,000")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 7, quick 3)")
    parser.add_argument("--files", type=int, default=None, help="files of the table")
    parser.add_argument(
        "--sql", action="store_true", help="also SQL queries right after a one-row commit"
    )
    parser.add_argument("--only-sql", action="store_true", help="only the --sql table")
    parser.add_argument("--backends", default=None, help="e.g. duckdb,sqlite (default: all)")
    args = parser.parse_args()
    files = args.files or (1_000 if args.quick else 10_000)
    repeat = args.repeat or (3 if args.quick else 7)
    pg = os.environ.get("DUCKLAKE_TEST_PG")
    print(environment())
    print(f"repeats:  {repeat} timed runs after 1 warm-up; medians")
    kinds = ["duckdb", "sqlite"] + (["postgres"] if pg else [])
    if not pg:
        print("postgres: skipped (set DUCKLAKE_TEST_PG; see .ci/start_postgres.sh)")
    if args.backends:
        kinds = [k for k in args.backends.split(",") if k in kinds]

    started = time.perf_counter()
    if not args.only_sql:
        _planning_table(kinds, files, repeat, pg)
    if args.sql or args.only_sql:
        sql_rows = [row for kind in kinds for row in sql_after_commit(kind, files, repeat, pg)]
        print(f"\n## SQL right after a one-row commit, table of {files:,} files\n")
        headers = ["backend", "query", "ours", "DuckDB", "ours / DuckDB", "new catalog (ours)"]
        print(markdown_table(headers, sql_rows))
        print(
            "\nours = ctx.sql(...).to_pylist() on one open catalog (plan and run); DuckDB = "
            "ATTACH (read-only) and the query, after each commit (a separate reader); new "
            "catalog = a new DuckLakeCatalog registered and queried (its metadata memo empty; "
            "the process's footer and layout caches warm); medians."
        )
    print(f"load average now: {load_average()}")
    print(f"total bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
