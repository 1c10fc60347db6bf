"""Scan benchmark: our provider vs DuckDB's own reader vs a raw pyarrow dataset.

    .venv/bin/python bench/scan.py            # 10M rows in 40 files + a 10,000-file table
    .venv/bin/python bench/scan.py --quick    # 1M rows in 8 files + a 1,000-file table

Lakes (built once by the reference writer, cached under ./bench_lakes/):

* ``t``: ``files`` x ``rows`` rows (k BIGINT, g INTEGER, v DOUBLE, s VARCHAR, d DATE). File
  i holds the contiguous range k in [i*rows, (i+1)*rows), so catalog statistics can prune;
  g has 97 groups; d runs over four years with k. 10% of the rows of every odd file are
  deleted (one DELETE: half the files get a delete file).
* ``p``: as many rows, partitioned by year(d), month(d), with d scattered over 2020-2023.
* ``t`` of a separate lake: 10,000 files of 2,048 rows each, for planning time.

Every query runs on four engines, round-robin (median of ``--repeat`` rounds after one
warm-up; wall clock and process CPU): DataFusion on our catalog (default: the Rust scan;
and the exact reader with ``native=False``), DuckDB on the same lake
(``ATTACH 'ducklake:...' (READ_ONLY)``), and DataFusion on a raw ``pyarrow.dataset`` over
the same Parquet files (deletes ignored, so it sees more rows where deletes exist). Our
answers are checked against DuckDB's. Results and how to read them: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager
from dataclasses import dataclass

import datafusion
import pyarrow.compute as pc
import pyarrow.dataset as ds
from common import (
    Lake,
    Timing,
    attach,
    build_many_files,
    cached_lake,
    connect,
    environment,
    load_average,
    markdown_table,
    measure,
    measure_interleaved,
    measure_planning,
    millis,
    ratio,
    same_rows,
    seconds,
    sorted_rows,
)

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.provider import DuckLakeDataset
from ducklake_datafusion.scan import ScanPlan


@dataclass(frozen=True)
class Sizes:
    files: int
    rows: int  # per file of t
    many_files: int

    @property
    def total(self) -> int:
        return self.files * self.rows


FULL = Sizes(files=40, rows=250_000, many_files=10_000)
QUICK = Sizes(files=8, rows=125_000, many_files=1_000)


# ------------------------------------------------------------------------------------------
# Lakes


def build_scan_lake(con, sizes: Sizes) -> None:
    """Tables ``t`` (clustered on k, deletes in odd files) and ``p`` (partitioned by month)."""
    columns = "k BIGINT, g INTEGER, v DOUBLE, s VARCHAR, d DATE"
    values = (
        "k, (hash(k + 1) % 97)::INTEGER, (hash(k) % 100000) / 100.0, "
        "'item_' || (hash(k + 2) % 10000), {d} FROM range(?, ?) r(k)"
    )
    clustered_d = f"DATE '2020-01-01' + (k * 1461 // {sizes.total})::INTEGER"
    scattered_d = "DATE '2020-01-01' + (hash(k + 3) % 1461)::INTEGER"
    con.execute(f"CREATE TABLE lake.main.t ({columns})")
    for i in range(sizes.files):  # one INSERT per file: file i holds one k range
        con.execute(
            f"INSERT INTO lake.main.t SELECT {values.format(d=clustered_d)}",
            [i * sizes.rows, (i + 1) * sizes.rows],
        )
    con.execute(f"DELETE FROM lake.main.t WHERE k % 10 = 0 AND (k // {sizes.rows}) % 2 = 1")
    con.execute(f"CREATE TABLE lake.main.p ({columns})")
    con.execute("ALTER TABLE lake.main.p SET PARTITIONED BY (year(d), month(d))")
    con.execute(f"INSERT INTO lake.main.p SELECT {values.format(d=scattered_d)}", [0, sizes.total])


@dataclass(frozen=True)
class Query:
    name: str
    sql: str  # with {t} and {p} for the table names


def queries(sizes: Sizes) -> list[Query]:
    """The benchmark queries; selective ones hit an odd file, so its deletes are applied."""
    mid = (sizes.files // 2) | 1  # an odd file index: it has a delete file
    lo = mid * sizes.rows + sizes.rows // 4
    hi = lo + sizes.total // 200 - 1  # 0.5% of the rows
    point = mid * sizes.rows + 12_345  # k % 10 != 0: not deleted
    return [
        Query("a full aggregate", "SELECT count(*) AS n, sum(v) AS sv, max(k) AS mk FROM {t}"),
        Query(
            "b range 0.5%",
            f"SELECT count(*) AS n, sum(v) AS sv FROM {{t}} WHERE k BETWEEN {lo} AND {hi}",
        ),
        Query("c group by g", "SELECT g, count(*) AS n, sum(v) AS sv FROM {t} GROUP BY g"),
        Query("d point lookup", f"SELECT * FROM {{t}} WHERE k = {point}"),
        Query(
            "e partition month",
            "SELECT count(*) AS n, sum(v) AS sv FROM {p} "
            "WHERE d >= DATE '2022-03-01' AND d < DATE '2022-04-01'",
        ),
        # p has no deletes: DataFusion's own Parquet reader scans it (native path)
        Query("f full aggregate, p", "SELECT count(*) AS n, sum(v) AS sv, max(k) AS mk FROM {p}"),
        Query("g group by g, p", "SELECT g, count(*) AS n, sum(v) AS sv FROM {p} GROUP BY g"),
        Query(
            "h range 0.5%, p",
            f"SELECT count(*) AS n, sum(v) AS sv FROM {{p}} WHERE k BETWEEN {lo} AND {hi}",
        ),
    ]


# ------------------------------------------------------------------------------------------
# Engines


@dataclass
class Result:
    timing: Timing
    rows: list
    planning: Timing | None = None
    plan: ScanPlan | None = None


@contextmanager
def recording_plans():
    """Collect the ScanPlan of every scan DataFusion plans through our dataset adapter.

    The catalog builds a fresh dataset per query, so the bench wraps the class method
    (overhead: one list append per scan).
    """
    plans: list[ScanPlan] = []
    original = DuckLakeDataset.get_fragments

    def get_fragments(self, filter=None):
        fragments = original(self, filter)
        plans.append(self.last_plan)
        return fragments

    DuckLakeDataset.get_fragments = get_fragments
    try:
        yield plans
    finally:
        DuckLakeDataset.get_fragments = original


@contextmanager
def duckdb_reader(lake: Lake):
    """DuckDB with the lake attached READ_ONLY as ``lake``.

    A read-only attach and our reader's read-only catalog handle coexist in one process
    (a read-write attach would lock the file), so the engines can be timed round-robin.
    """
    con = connect(lake.kind)
    try:
        attach(con, lake, read_only=True)
        yield con
        con.execute("DETACH lake")
    finally:
        con.close()


def _engines(q: Query, con, ours, exact, raw) -> tuple[dict, dict]:
    """Callables running ``q`` on each engine, and planning it on the DataFusion ones."""
    lake_sql = q.sql.format(t="lake.main.t", p="lake.main.p")
    raw_sql = q.sql.format(t="raw_t", p="raw_p")
    run = {
        "duckdb": lambda: con.execute(lake_sql).to_arrow_table(),
        "ours": lambda: ours.sql(lake_sql).to_arrow_table(),
        "exact": lambda: exact.sql(lake_sql).to_arrow_table(),
        "raw": lambda: raw.sql(raw_sql).to_arrow_table(),
    }
    plan_only = {
        "ours": lambda: ours.sql(lake_sql).execution_plan(),
        "exact": lambda: exact.sql(lake_sql).execution_plan(),
        "raw": lambda: raw.sql(raw_sql).execution_plan(),
    }
    return run, plan_only


def run_queries(lake: Lake, qs: list[Query], repeat: int) -> dict[str, dict[str, Result]]:
    """Each query on the four engines, round-robin; planning on the DataFusion ones too."""
    with duckdb_reader(lake) as con, recording_plans() as plans:
        files = {
            name: [
                r[0]
                for r in con.execute(
                    "SELECT data_file FROM ducklake_list_files('lake', ?)", [name]
                ).fetchall()
            ]
            for name in ("t", "p")
        }
        ours = datafusion.SessionContext()
        register(ours, "lake", DuckLakeCatalog(lake.metadata))
        exact = datafusion.SessionContext()
        register(exact, "lake", DuckLakeCatalog(lake.metadata, native=False))
        raw = datafusion.SessionContext()
        for name, paths in files.items():
            raw.register_dataset(f"raw_{name}", ds.dataset(paths, format="parquet"))
        results = {}
        for q in qs:
            run, plan_only = _engines(q, con, ours, exact, raw)
            timed = measure_interleaved(run, repeat=repeat)
            exact.sql(q.sql.format(t="lake.main.t", p="lake.main.p")).execution_plan()
            plan = plans[-1]  # the exact path's: what catalog pruning kept
            planning = measure_interleaved(plan_only, repeat=repeat)
            results[q.name] = {
                name: Result(
                    timing,
                    sorted_rows(table),
                    planning[name][0] if name in planning else None,
                    plan if name == "exact" else None,
                )
                for name, (timing, table) in timed.items()
            }
    return results


# ------------------------------------------------------------------------------------------
# Many files: planning


def run_many_files(lake: Lake, files: int, repeat: int) -> list[list[str]]:
    """Lookup and planning times on a table of ``files`` tiny files; one selective query
    and one full scan, against DuckDB."""
    lo, hi = files * 1024, files * 1024 + 9_999  # ~5 files of 2,048 rows
    selective = f"SELECT count(*) AS n, sum(v) AS sv FROM lake.main.t WHERE k BETWEEN {lo} AND {hi}"
    expr = (pc.field("k") >= lo) & (pc.field("k") <= hi)
    catalog = DuckLakeCatalog(lake.metadata)
    table = catalog.table("main", "t")
    lookup, _ = measure(lambda: catalog.table("main", "t"), repeat=repeat)
    t = measure_planning(catalog, table, expr, repeat=repeat)
    ctx = datafusion.SessionContext()
    register(ctx, "lake", catalog)
    df_plan, _ = measure(lambda: ctx.sql(selective).execution_plan(), repeat=repeat)
    full = "SELECT sum(v) AS sv, max(k) AS mk, count(DISTINCT g) AS ng FROM lake.main.t"
    with duckdb_reader(lake) as con:
        timed = measure_interleaved(
            {
                "ours": lambda: ctx.sql(selective).to_arrow_table(),
                "duckdb": lambda: con.execute(selective).to_arrow_table(),
            },
            repeat=repeat,
        )
        scanned = measure_interleaved(
            {
                "ours": lambda: ctx.sql(full).to_arrow_table(),
                "duckdb": lambda: con.execute(full).to_arrow_table(),
            },
            repeat=repeat,
        )
    catalog.backend.close()
    s = t.plan_pruned.stats
    pruning = f"{s.files_scanned} of {s.files_total} files kept"
    (ours, ours_rows), (duck, duck_rows) = timed["ours"], timed["duckdb"]
    check = "ok" if same_rows(sorted_rows(ours_rows), sorted_rows(duck_rows)) else "MISMATCH"
    (full_ours, full_rows), (full_duck, full_duck_rows) = scanned["ours"], scanned["duckdb"]
    full_check = (
        "ok" if same_rows(sorted_rows(full_rows), sorted_rows(full_duck_rows)) else "MISMATCH"
    )
    return [
        ["table lookup: lake.table('main', 't')", millis(lookup.median), "target < 5 ms"],
        [
            f"scan_plan() all {t.plan_all.stats.files_total} files, new lake version",
            millis(t.full_new.median),
            "after a commit; target < 100 ms",
        ],
        [
            "scan_plan(filter) plan + prune, new lake version",
            millis(t.pruned_new.median),
            f"{pruning}; target < 50 ms",
        ],
        ["scan_plan() all files, unchanged lake", millis(t.full.median), "metadata memoised"],
        ["scan_plan(filter), unchanged lake", millis(t.pruned.median), "metadata memoised"],
        ["DataFusion SQL -> physical plan (selective)", millis(df_plan.median), ""],
        ["selective query, ours end to end", millis(ours.median), f"answer vs DuckDB: {check}"],
        ["selective query, DuckDB end to end", millis(duck.median), ""],
        [
            "full scan: sum(v), max(k), count(DISTINCT g), ours",
            millis(full_ours.median),
            f"{ratio(full_ours.median, full_duck.median)} DuckDB; answer vs DuckDB: {full_check}",
        ],
        ["full scan, DuckDB", millis(full_duck.median), ""],
    ]


# ------------------------------------------------------------------------------------------


def report(qs: list[Query], results: dict) -> tuple[str, str]:
    """Two tables: times and ratios; what was read, planning and CPU seconds."""
    times, reads = [], []
    for q in qs:
        o, e, d, r = (results[q.name][name] for name in ("ours", "exact", "duckdb", "raw"))
        s = e.plan.stats
        agree = all(same_rows(x.rows, d.rows) for x in (o, e))
        times.append(
            [
                q.name,
                seconds(o.timing.median),
                seconds(e.timing.median),
                seconds(d.timing.median),
                seconds(r.timing.median),
                ratio(o.timing.median, d.timing.median),
                ratio(e.timing.median, d.timing.median),
                ratio(o.timing.median, e.timing.median),
                "ok" if agree else "MISMATCH",
            ]
        )
        reads.append(
            [
                q.name,
                f"{s.files_scanned}/{s.files_total}",
                f"{s.files_skipped_by_stats}/{s.files_skipped_by_partition}",
                str(s.files_with_deletes),
                f"{s.bytes_scanned / 1e6:.1f}",
                millis(o.planning.median),
                millis(e.planning.median),
                millis(r.planning.median),
                seconds(o.timing.cpu_median),
                seconds(d.timing.cpu_median),
                seconds(r.timing.cpu_median),
            ]
        )
    return (
        markdown_table(
            [
                "query",
                "ours s",
                "exact s",
                "duckdb s",
                "raw s",
                "ours/duckdb",
                "exact/duckdb",
                "ours/exact",
                "all vs duckdb",
            ],
            times,
        ),
        markdown_table(
            [
                "query",
                "files read/total",
                "skipped stats/partition",
                "read w/ deletes",
                "MB in files read",
                "plan ours",
                "plan exact",
                "plan raw",
                "cpu s ours",
                "cpu s duckdb",
                "cpu s raw",
            ],
            reads,
        ),
    )


def scan_lake(sizes: Sizes):
    """The cached 40-file scan lake (built on first use); returns ``(lake, build seconds)``.

    Shared by ``scan.py``, ``spark_scan.py`` and ``profile_scan.py`` so they measure the
    same lake.
    """
    return cached_lake(
        "scan", {"files": sizes.files, "rows": sizes.rows}, lambda con: build_scan_lake(con, sizes)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows, 1,000-file table")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 7, quick 3)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or (3 if args.quick else 7)
    print(environment())
    print(f"repeats:  {repeat} timed runs after 1 warm-up; medians in seconds\n")

    started = time.perf_counter()
    lake, built = scan_lake(sizes)
    print(f"lake {lake.metadata}: " + (f"built in {built:.1f} s" if built else "cached"))
    many, built = cached_lake(
        "files", {"n": sizes.many_files}, lambda con: build_many_files(con, sizes.many_files)
    )
    print(f"lake {many.metadata}: " + (f"built in {built:.1f} s" if built else "cached"))

    qs = queries(sizes)
    print(f"\n## Queries ({sizes.total:,} rows in {sizes.files} files; 10% deleted in half)\n")
    for q in qs:
        print(f"- {q.name}: {q.sql.format(t='t', p='p')}")
    results = run_queries(lake, qs, repeat)
    times, reads = report(qs, results)
    print(f"\n{times}\n\n{reads}")
    print(
        "\nours = DataFusion on our catalog (the Rust scan where it applies: the default); "
        "exact = the same with native=False (the streaming reader alone); files read = what the exact path's "
        "catalog pruning kept; duckdb = DuckDB + ducklake on the same lake; raw = "
        "DataFusion over pyarrow.dataset(files) of the same Parquet files, deletes ignored. "
        "Engines run round-robin; plan = SQL -> physical plan (catalog lookups and pruning "
        "included); cpu = process CPU seconds, all threads."
    )
    print(f"load average now: {load_average()}")

    print(f"\n## Planning a {sizes.many_files:,}-file table\n")
    print(
        markdown_table(["step", "median", "note"], run_many_files(many, sizes.many_files, repeat))
    )
    print(f"\ntotal bench time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
