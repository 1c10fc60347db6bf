"""TPC-H through the lake: our scan against DataFusion's own Parquet and DuckDB.

    .venv/bin/python bench/tpch.py                       # SF 1, both lakes, 3 rounds
    .venv/bin/python bench/tpch.py --sf 0.1 --repeat 1   # quick
    .venv/bin/python bench/tpch.py --queries 1,2,11 --explain

The data is DuckDB's ``tpch`` extension (``CALL dbgen(sf=...)``, the
``duckdb-extension-tpch`` wheel), each table written into a DuckLake with one
``CREATE TABLE AS`` by the reference writer on one thread (so ``lineitem`` is one file, as
DuckDB writes it). Two lakes, built once and cached under ``./bench_lakes/``:

* ``clean``: the eight tables as written.
* ``deletes``: the same, then 4% of ``lineitem`` deleted, 2% of ``customer`` deleted and
  1% of ``orders`` updated (delete files, and new files for the updated rows).

The queries are DuckDB's own 22 texts (``tpch_queries()``). Each runs on four engines,
round-robin (``--repeat`` rounds after one warm-up, medians, wall clock): *ours*
(DataFusion on ``DuckLakeCatalog``, the Rust scan), *exact* (``native=False``, the
streaming reader), *parquet* (DataFusion's ``register_parquet`` of plain Parquet: for the
clean lake the lake's own data files, for the deletes lake a copy of its visible rows
written by DuckDB) and *duckdb* (DuckDB reading the lake). Every engine's answer is
compared with DuckDB's, numbers to the precision both keep (DataFusion averages decimals
at scale 6, DuckDB as doubles). ``--planning`` also times SQL to physical plan on ours and
parquet. Results and how to read them: docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import math
from dataclasses import dataclass
from pathlib import Path

import datafusion
import duckdb_extensions
from common import (
    Lake,
    Timing,
    attach,
    cached_lake,
    connect,
    environment,
    load_average,
    markdown_table,
    measure_interleaved,
    millis,
    ratio,
    seconds,
)

from ducklake_datafusion import DuckLakeCatalog, register

TABLES = ("nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem")
ENGINES = ("ours", "exact", "parquet", "duckdb")

# The deletes lake's changes (one statement each, so one delete file per table).
CHANGES = (
    "DELETE FROM lake.main.lineitem WHERE l_orderkey % 25 = 3",
    "DELETE FROM lake.main.customer WHERE c_custkey % 50 = 7",
    (
        "UPDATE lake.main.orders SET o_comment = o_comment || ' (updated)' "
        "WHERE o_orderkey % 100 = 11"
    ),
)


# ------------------------------------------------------------------------------------------
# Data


def build(con, sf: float, changes: tuple[str, ...]) -> None:
    """The TPC-H tables at scale factor ``sf`` into the lake attached as ``lake``."""
    duckdb_extensions.import_extension("tpch", con=con)
    con.execute("CALL dbgen(sf = ?)", [sf])
    for table in TABLES:
        con.execute(f"CREATE TABLE lake.main.{table} AS SELECT * FROM memory.main.{table}")
        con.execute(f"DROP TABLE memory.main.{table}")
    for statement in changes:
        con.execute(statement)


def lakes(sf: float, which: list[str]) -> dict[str, tuple[Lake, dict[str, list[str]]]]:
    """The lakes asked for, each with the Parquet files DataFusion's own reader gets."""
    built = {}
    for name in which:
        changes = CHANGES if name == "deletes" else ()
        lake, spent = cached_lake(
            f"tpch-{name}", {"sf": sf}, lambda con, c=changes: build(con, sf, c)
        )
        if spent is not None:
            print(f"built the {name} lake at SF {sf} in {spent:.0f} s")
        built[name] = (lake, parquet_files(lake, copy=bool(changes)))
    return built


def parquet_files(lake: Lake, *, copy: bool) -> dict[str, list[str]]:
    """Per table, plain Parquet files of the rows the lake shows: its own data files when
    nothing was deleted, else (or when its rows are inlined in the catalog) one file
    written by DuckDB, cached beside the lake."""
    con = connect(lake.kind)
    try:
        attach(con, lake, read_only=True)
        folder = lake.root / "parquet"
        folder.mkdir(exist_ok=True)
        files = {}
        for table in TABLES:
            own = [
                r[0]
                for r in con.execute(
                    "SELECT data_file FROM ducklake_list_files('lake', ?)", [table]
                ).fetchall()
            ]
            (inlined,) = con.execute(
                f"SELECT count(*) - ? FROM lake.main.{table}",
                [sum(pq_rows(con, f) for f in own)],
            ).fetchone()
            if own and not copy and inlined == 0:
                files[table] = own
                continue
            path = folder / f"{table}.parquet"
            if not path.exists():
                partial = path.with_suffix(".partial")
                con.execute(f"COPY lake.main.{table} TO '{partial}' (FORMAT parquet)")
                partial.rename(path)
            files[table] = [str(path)]
        return files
    finally:
        con.close()


def pq_rows(con, path: str) -> int:
    return con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()[0]


def queries(selected: list[int] | None) -> dict[int, str]:
    con = connect()
    duckdb_extensions.import_extension("tpch", con=con)
    texts = dict(con.execute("SELECT query_nr, query FROM tpch_queries()").fetchall())
    con.close()
    return {n: q for n, q in sorted(texts.items()) if not selected or n in selected}


# ------------------------------------------------------------------------------------------
# Engines


def engines(lake: Lake, files: dict[str, list[str]], which: list[str]) -> dict:
    """Per engine, a function running one query text to its rows, and what to close."""
    runners, closers = {}, []

    def datafusion_session(catalog=None):
        config = datafusion.SessionConfig().with_default_catalog_and_schema(
            "lake" if catalog else "datafusion", "main" if catalog else "public"
        )
        ctx = datafusion.SessionContext(config)
        if catalog is not None:
            register(ctx, "lake", catalog)
        return ctx

    def rows_of(ctx):
        return lambda sql: ctx.sql(sql).to_arrow_table().to_pylist()

    for name in which:
        if name in ("ours", "exact"):
            catalog = DuckLakeCatalog(lake.metadata, native=name == "ours")
            runners[name] = rows_of(datafusion_session(catalog))
            closers.append(catalog.backend.close)
        elif name == "parquet":
            ctx = datafusion_session()
            for table, paths in files.items():
                ctx.register_parquet(table, paths[0] if len(paths) == 1 else _folder(paths))
            runners[name] = rows_of(ctx)
        elif name == "duckdb":
            con = connect(lake.kind)
            attach(con, lake, read_only=True)
            con.execute("USE lake")
            cursor = con

            def run(sql, cursor=cursor):
                result = cursor.execute(sql)
                names = [d[0] for d in result.description]
                return [dict(zip(names, row)) for row in result.fetchall()]

            runners[name] = run
            closers.append(con.close)
    return {"run": runners, "close": closers}


def _folder(paths: list[str]) -> str:
    folders = {str(Path(p).parent) for p in paths}
    if len(folders) != 1:
        raise ValueError(f"a table's files in several folders: {sorted(folders)}")
    return folders.pop() + "/"


# ------------------------------------------------------------------------------------------
# Answers


def _value(v):
    """A cell as both engines can agree on it: decimals as floats, the rest as they are."""
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _close(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        # DataFusion's avg of a decimal keeps 6 digits after the point, DuckDB's is a double
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=2e-6)
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    return a == b


def _rows(result: list[dict]) -> list[tuple]:
    return [tuple(_value(v) for v in row.values()) for row in result]


def same_answer(got: list[dict], expected: list[dict]) -> bool:
    """Equal rows in the same order, or (ties of ORDER BY) in some order."""
    a, b = _rows(got), _rows(expected)
    if len(a) != len(b):
        return False

    def equal(x, y):
        return all(len(r) == len(s) and all(map(_close, r, s)) for r, s in zip(x, y))

    if equal(a, b):
        return True

    def key(row):
        return tuple((round(v, 2) if isinstance(v, float) else v) for v in row)

    return equal(sorted(a, key=key), sorted(b, key=key))


# ------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class QueryResult:
    timings: dict[str, Timing]
    agrees: dict[str, bool]
    planning: dict[str, Timing]


def run_lake(lake, files, texts, which, repeat, planning) -> dict[int, QueryResult]:
    sides = engines(lake, files, which)
    runners = sides["run"]
    results = {}
    try:
        for n, sql in texts.items():
            timed = measure_interleaved(
                {name: (lambda r=r, q=sql: r(q)) for name, r in runners.items()}, repeat=repeat
            )
            reference = timed["duckdb"][1] if "duckdb" in timed else None
            agrees = {
                name: reference is None or same_answer(rows, reference)
                for name, (_, rows) in timed.items()
            }
            planned = {}
            if planning:
                planned = plan_times(lake, files, sql, repeat)
            results[n] = QueryResult({name: t for name, (t, _) in timed.items()}, agrees, planned)
            line = ", ".join(f"{k} {seconds(v.median)} s" for k, v in results[n].timings.items())
            bad = [k for k, ok in agrees.items() if not ok]
            print(f"  q{n:02d}: {line}{'; ANSWER DIFFERS: ' + ', '.join(bad) if bad else ''}")
    finally:
        for close in sides["close"]:
            close()
    return results


_PLANNERS: dict = {}


def plan_times(lake, files, sql, repeat) -> dict[str, Timing]:
    """SQL to physical plan on ours and on DataFusion's Parquet (sessions kept per lake)."""
    key = lake.metadata
    if key not in _PLANNERS:
        ours = datafusion.SessionContext(
            datafusion.SessionConfig().with_default_catalog_and_schema("lake", "main")
        )
        register(ours, "lake", DuckLakeCatalog(lake.metadata))
        raw = datafusion.SessionContext()
        for table, paths in files.items():
            raw.register_parquet(table, paths[0] if len(paths) == 1 else _folder(paths))
        _PLANNERS[key] = {"ours": ours, "parquet": raw}
    timed = measure_interleaved(
        {name: (lambda c=c: c.sql(sql).execution_plan()) for name, c in _PLANNERS[key].items()},
        repeat=repeat,
    )
    return {name: t for name, (t, _) in timed.items()}


def explain(lake, files, texts) -> None:
    sides = engines(lake, files, ["ours", "parquet"])
    for n, sql in texts.items():
        for name in ("ours", "parquet"):
            rows = sides["run"][name]("EXPLAIN " + sql)
            print(f"-- q{n:02d} {name}\n" + rows[-1]["plan"])
    for close in sides["close"]:
        close()


# ------------------------------------------------------------------------------------------
# Report


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def report(results: dict[int, QueryResult], which: list[str], planning: bool) -> str:
    pairs = [
        (a, b)
        for a, b in (
            ("ours", "parquet"),
            ("ours", "duckdb"),
            ("parquet", "duckdb"),
            ("ours", "exact"),
        )
        if a in which and b in which
    ]
    headers = ["query", *which, *(f"{a}/{b}" for a, b in pairs), "answers"]
    if planning:
        headers += ["plan ours", "plan parquet"]
    rows, ratios = [], {p: [] for p in pairs}
    for n, r in results.items():
        med = {name: r.timings[name].median for name in which}
        for p in pairs:
            ratios[p].append(med[p[0]] / med[p[1]])
        bad = [k for k, ok in r.agrees.items() if not ok]
        row = [f"q{n:02d}", *(seconds(med[k]) for k in which)]
        row += [ratio(med[a], med[b]) for a, b in pairs]
        row.append("ok" if not bad else "DIFFERS: " + ", ".join(bad))
        if planning:
            row += [millis(r.planning[k].median) for k in ("ours", "parquet")]
        rows.append(row)
    totals = {k: geomean([r.timings[k].median for r in results.values()]) for k in which}
    last = ["geomean", *(seconds(totals[k]) for k in which)]
    last += [f"{geomean(ratios[p]):.2f}x" for p in pairs]
    last.append("")
    if planning:
        last += [
            millis(geomean([r.planning[k].median for r in results.values()]))
            for k in ("ours", "parquet")
        ]
    rows.append(last)
    return markdown_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per query")
    parser.add_argument("--lakes", default="clean,deletes", help="clean, deletes or both")
    parser.add_argument("--engines", default=",".join(ENGINES), help=",".join(ENGINES))
    parser.add_argument("--queries", default="", help="query numbers, e.g. 1,2,11")
    parser.add_argument("--planning", action="store_true", help="also time planning")
    parser.add_argument("--explain", action="store_true", help="print plans instead of timing")
    args = parser.parse_args()
    sf = int(args.sf) if args.sf == int(args.sf) else args.sf
    selected = [int(q) for q in args.queries.split(",") if q]
    which = [e for e in ENGINES if e in args.engines.split(",")]
    texts = queries(selected)
    built = lakes(sf, args.lakes.split(","))
    if args.explain:
        for lake, files in built.values():
            explain(lake, files, texts)
        return
    print(environment())
    for name, (lake, files) in built.items():
        print(f"\n{name} lake, SF {sf} (load average {load_average()}):")
        results = run_lake(lake, files, texts, which, args.repeat, args.planning)
        print(f"\n{name} lake, SF {sf}, medians of {args.repeat} (load average {load_average()}):")
        print(report(results, which, args.planning))


if __name__ == "__main__":
    main()
