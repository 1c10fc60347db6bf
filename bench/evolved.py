"""Schema evolution benchmark: a table whose files have three column layouts.

    .venv/bin/python bench/evolved.py             # 4M rows in 20 files
    .venv/bin/python bench/evolved.py --quick     # 400k rows in 4 files

The table (built once by the reference writer, cached under ./bench_lakes/) got a column
renamed, a column added with a default and an integer widened between its inserts, so
its files come in three layouts, plus a few inlined rows. Our default catalog reads it
natively (the Rust scan, columns mapped by Parquet field id); ``exact`` is
``native=False``; DuckDB reads the same lake; *raw* is DataFusion on a raw
``pyarrow.dataset`` of the newest layout's files alone (a floor for the decode, fewer
rows). Round-robin, medians; our answers are checked against DuckDB's.
"""

from __future__ import annotations

import argparse

import datafusion
import pyarrow.dataset as ds
from common import (
    attach,
    cached_lake,
    connect,
    environment,
    load_average,
    markdown_table,
    measure_interleaved,
    ratio,
    same_rows,
    seconds,
    sorted_rows,
)

from ducklake_datafusion import DuckLakeCatalog, register

QUERIES = {
    "full aggregate": "SELECT count(*) AS n, sum(w) AS sw, max(k) AS mk, sum(extra) AS se FROM {t}",
    "group by g": "SELECT g, count(*) AS n, sum(v) AS sv FROM {t} GROUP BY g",
    "range 0.5%": "SELECT count(*) AS n, max(label) AS ml FROM {t} WHERE k BETWEEN {lo} AND {hi}",
}


def build(files: int, rows: int):
    def run(con) -> None:
        values = "k, (k % 97)::INTEGER, (hash(k) % 100000) / 100.0, 'item_' || (k % 10000)"
        con.execute(
            "CREATE TABLE lake.main.t (k BIGINT, g INTEGER, v DOUBLE, name VARCHAR, w INTEGER)"
        )
        for i in range(files):
            if i == files // 3:
                con.execute("ALTER TABLE lake.main.t RENAME COLUMN name TO label")
                con.execute("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 5")
            if i == 2 * files // 3:
                con.execute("ALTER TABLE lake.main.t ALTER COLUMN w TYPE BIGINT")
            extra = ", (k % 3)::INTEGER" if i >= files // 3 else ""
            con.execute(
                f"INSERT INTO lake.main.t SELECT {values}, (k % 1000)::INTEGER{extra} "
                "FROM range(?, ?) r(k)",
                [i * rows, (i + 1) * rows],
            )
        con.execute("INSERT INTO lake.main.t VALUES (-1, 1, 1.0, 'inlined', 1, 1)")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    files, rows = (4, 100_000) if args.quick else (20, 200_000)
    lake, built = cached_lake("evolved", {"files": files, "rows": rows}, build(files, rows))
    print(environment())
    if built is not None:
        print(f"built the lake in {built:.1f} s")
    lo = (files // 2) * rows + rows // 4
    sql = {
        name: q.format(t="{t}", lo=lo, hi=lo + files * rows // 200 - 1)
        for name, q in QUERIES.items()
    }

    duck = connect()
    attach(duck, lake, read_only=True)
    ours = datafusion.SessionContext()
    register(ours, "lake", DuckLakeCatalog(lake.metadata))
    exact = datafusion.SessionContext()
    register(exact, "lake", DuckLakeCatalog(lake.metadata, native=False))
    newest = DuckLakeCatalog(lake.metadata).table("main", "t").scan_plan()
    newest_files = [
        t.file.url.removeprefix("file://")
        for t in newest.tasks[-files // 3 :]
        if hasattr(t, "file")
    ]
    raw = datafusion.SessionContext()
    raw.register_dataset("t", ds.dataset(newest_files, format="parquet"))

    rows_out = []
    for name, query in sql.items():
        on_lake, on_raw = query.format(t="lake.main.t"), query.format(t="t")
        timings = measure_interleaved(
            {
                "ours": lambda q=on_lake: ours.sql(q).to_arrow_table(),
                "exact": lambda q=on_lake: exact.sql(q).to_arrow_table(),
                "duckdb": lambda q=on_lake: duck.execute(q).to_arrow_table(),
                "raw": lambda q=on_raw: raw.sql(q).to_arrow_table(),
            },
            repeat=args.repeat,
        )
        reference = sorted_rows(timings["duckdb"][1])
        for engine in ("ours", "exact"):
            assert same_rows(sorted_rows(timings[engine][1]), reference), (engine, name)
        ours_t, exact_t, duck_t, raw_t = (
            timings[e][0].median for e in ("ours", "exact", "duckdb", "raw")
        )
        rows_out.append(
            [
                name,
                seconds(ours_t),
                seconds(exact_t),
                seconds(duck_t),
                seconds(raw_t),
                ratio(ours_t, duck_t),
                ratio(exact_t, duck_t),
            ]
        )
    print(f"load average: {load_average()}")
    print(
        markdown_table(
            [
                "query",
                "ours (native)",
                "exact",
                "DuckDB",
                "raw (newest third)",
                "ours/DuckDB",
                "exact/DuckDB",
            ],
            rows_out,
        )
    )


if __name__ == "__main__":
    main()
