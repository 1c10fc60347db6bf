"""Row-change benchmark: our DELETE, UPDATE and MERGE against DuckDB's own, on twin lakes.

    .venv/bin/python bench/dml.py                   # 10M rows, a DuckDB-file catalog, 5 runs
    .venv/bin/python bench/dml.py --rows 1000000 --repeat 1   # quicker

Two identical lakes are built by DuckDB (``--rows`` rows of k BIGINT, g INTEGER, v DOUBLE,
s VARCHAR, in files of DuckDB's size, inlining off). On each, in turn:

* DELETE of 1% scattered rows (``k % 100 = 7``), then UPDATE of 1% (``v = v + 1`` where
  ``k % 100 = 13``), then a MERGE of a source of a tenth of the rows (``src``, in the lake),
  half of them matching (update) and half new (insert): ours through
  ``ducklake_datafusion.sql`` in a DataFusion session, DuckDB's through its own statements
  on the twin;
* then a read of the table (``count(*)``, ``sum(v)``) by each engine of its own lake.

Printed: each statement's time and the ratio ours/DuckDB, and the read ratio, as the
median of ``--repeat`` runs, each on fresh copies of one pair of twins (a single run of a
0.2 s statement on two cores varied by 1.0-1.8x); both lakes' answers are compared
(DuckDB reads both) in every run. Neither side's set-up is timed: DuckDB's attach
and extension load, our catalog's registration and the modules a first statement imports
(a statement that changes nothing, ``WARM``, runs on each twin first).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import duckdb
import duckdb_extensions
from datafusion import SessionContext

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register

STATEMENTS = [
    ("delete 1%", "DELETE FROM lake.main.t WHERE k % 100 = 7"),
    ("update 1%", "UPDATE lake.main.t SET v = v + 1 WHERE k % 100 = 13"),
    (
        "merge 10%",
        (
            "MERGE INTO lake.main.t USING lake.main.src AS s ON t.k = s.k WHEN MATCHED THEN "
            "UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.g, s.v, s.s)"
        ),
    ),
]
WARM = "DELETE FROM lake.main.src WHERE k < 0"
READ = "SELECT count(*) AS n, sum(v) AS s FROM lake.main.t"
# every row, exactly (a sum of doubles depends on the order DuckDB's threads add them in)
SAME = "SELECT count(*), sum(hash(k, g, v, s)) FROM lake.main.t"


def _duckdb(catalog: str, data: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(
        f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data}', DATA_INLINING_ROW_LIMIT 0)"
    )
    return con


def _build(root: str, rows: int) -> tuple[str, str]:
    os.makedirs(root)
    catalog, data = os.path.join(root, "cat.ducklake"), os.path.join(root, "data")
    con = _duckdb(catalog, data)
    con.execute(
        "CREATE TABLE lake.main.t AS SELECT i AS k, CAST(i % 97 AS INTEGER) AS g, i / 7 AS v, "
        f"'name-' || (i % 1000) AS s FROM range({rows}) r(i)"
    )
    con.execute(  # the MERGE's source: every other row matches one of t's
        f"CREATE TABLE lake.main.src AS SELECT CASE WHEN i % 2 = 0 THEN i * 10 ELSE {rows} + i "
        f"END AS k, CAST(i % 5 AS INTEGER) AS g, -i / 3 AS v, 'src' AS s FROM range({rows // 10}) r(i)"
    )
    con.close()
    return catalog, data


def _run_once(ours: tuple[str, str], theirs: tuple[str, str]) -> dict[str, tuple[float, float]]:
    """Each statement, then the read, on the twins: name -> (ours, DuckDB's) seconds."""
    times = {}
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(ours[0], data_path=ours[1]))
    ducklake_datafusion.sql(ctx, WARM).collect()
    con = _duckdb(*theirs)
    con.execute(WARM)
    con.close()
    for name, statement in STATEMENTS:
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(ours[0], data_path=ours[1]))
        start = time.perf_counter()
        ducklake_datafusion.sql(ctx, statement).collect()
        mine = time.perf_counter() - start
        con = _duckdb(*theirs)
        start = time.perf_counter()
        con.execute(statement)
        reference = time.perf_counter() - start
        con.close()
        times[name] = (mine, reference)
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(ours[0], data_path=ours[1]))
    start = time.perf_counter()
    mine_rows = ctx.sql(READ).to_pylist()
    mine = time.perf_counter() - start
    con = _duckdb(*theirs)
    start = time.perf_counter()
    reference_rows = con.execute(READ).fetchall()
    reference = time.perf_counter() - start
    con.close()
    times["read"] = (mine, reference)
    check, twin = _duckdb(*ours), _duckdb(*theirs)
    assert check.execute(SAME).fetchall() == twin.execute(SAME).fetchall(), "the lakes differ"
    check.close()
    twin.close()
    (n, total), mine_n, mine_total = reference_rows[0], *mine_rows[0].values()
    assert mine_n == n and abs(mine_total - total) <= 1e-9 * abs(total)  # (float sums)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs on fresh twins; the medians are printed"
    )
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="ducklake-dml-")
    try:
        twins = [_build(os.path.join(root, side), args.rows) for side in ("ours", "theirs")]
        for side in ("ours", "theirs"):  # (a catalog names its data path: runs restore these)
            shutil.copytree(os.path.join(root, side), os.path.join(root, f"{side}.pristine"))
        runs = []
        for run in range(args.repeat):
            if run:
                for side in ("ours", "theirs"):
                    shutil.rmtree(os.path.join(root, side))
                    shutil.copytree(
                        os.path.join(root, f"{side}.pristine"), os.path.join(root, side)
                    )
            runs.append(_run_once(*twins))
        print(f"{args.rows:,} rows, {args.repeat} runs on fresh twins; median seconds (range)")
        for name in runs[0]:
            mine = sorted(r[name][0] for r in runs)
            reference = sorted(r[name][1] for r in runs)
            ratios = sorted(r[name][0] / r[name][1] for r in runs)
            middle = len(runs) // 2
            print(
                f"{name:>10}: ours {mine[middle]:5.2f} ({mine[0]:.2f}-{mine[-1]:.2f})  "
                f"DuckDB {reference[middle]:5.2f} ({reference[0]:.2f}-{reference[-1]:.2f})  "
                f"ratio {ratios[middle]:4.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"
            )
        print("both lakes read the same by DuckDB, every run")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
