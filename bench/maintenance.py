"""Compaction benchmark: our ``merge_adjacent_files`` against DuckDB's, on copies of one lake.

    .venv/bin/python bench/maintenance.py                        # 10,000 files of 1,000 rows
    .venv/bin/python bench/maintenance.py --files 1000 --repeat 1   # quicker
    .venv/bin/python bench/maintenance.py --spark     # also through Spark local[2]

DuckDB builds a lake of ``--files`` appends of ``--rows`` rows each (k BIGINT, v DOUBLE,
s VARCHAR; inlining off), one commit each, as a streaming sink leaves a table. Each run
copies it twice: ours merges one copy (``DuckLakeCatalog.merge_adjacent_files``), DuckDB the
other (``CALL ducklake_merge_adjacent_files``); both copies' rows are compared (DuckDB reads
both). Then our DataFusion reader runs a full scan (``count(*), sum(v)``) and a selective
query (a 1,000-row range of ``k``) on the lake before and after our merge: the gain the
merge buys. Printed: medians of ``--repeat`` runs, and the ratios ours/DuckDB and
after/before. Neither side's set-up is timed (DuckDB's attach and extension load, our
catalog's open and first imports). With ``--spark``, two more copies are merged through a
Spark ``local[2]`` session with the package's catalog: by ``CALL
lake.system.merge_adjacent_files()`` (the catalog's planner on the driver) and by
``call_procedure(..., on_executors=True)`` (the merged files written by Spark tasks, each
through the package's Python on its executor), each
compared with DuckDB's copy too (the session's start is not timed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import duckdb
import duckdb_extensions
from datafusion import SessionContext

from ducklake_datafusion import DuckLakeCatalog, register

FULL = "SELECT count(*) AS n, sum(v) AS s FROM lake.main.t"
SAME = "SELECT count(*), sum(hash(k, v, s)), sum(rowid) FROM lake.main.t"


def _duckdb(root: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    catalog, data = os.path.join(root, "cat.ducklake"), os.path.join(root, "data")
    con.execute(
        f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data}', DATA_INLINING_ROW_LIMIT 0)"
    )
    return con


def _build(root: str, files: int, rows: int) -> None:
    os.makedirs(root)
    con = _duckdb(root)
    con.execute("CREATE TABLE lake.main.t (k BIGINT, v DOUBLE, s VARCHAR)")
    started = time.perf_counter()
    for i in range(files):
        low = i * rows
        con.execute(
            f"INSERT INTO lake.main.t SELECT i, i / 7, 'name-' || (i % 1000) "
            f"FROM range({low}, {low + rows}) r(i)"
        )
    con.close()
    print(f"built {files} files of {rows} rows in {time.perf_counter() - started:.0f} s")


def _copy(source: str, target: str) -> None:
    shutil.copytree(source, target)
    # (the catalog names its data path: point the copy's at its own files)
    con = duckdb.connect(os.path.join(target, "cat.ducklake"))
    con.execute(
        "UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'",
        [os.path.join(target, "data") + "/"],
    )
    con.close()


def _ours(root: str) -> float:
    lake = DuckLakeCatalog(os.path.join(root, "cat.ducklake"))
    lake.snapshot_id()  # (the catalog opened: not timed)
    started = time.perf_counter()
    lake.merge_adjacent_files()
    elapsed = time.perf_counter() - started
    lake.close()
    return elapsed


def _spark_session():
    from pyspark.sql import SparkSession

    from ducklake_datafusion.spark import spark_jar

    os.environ["PYSPARK_PYTHON"] = sys.executable  # executors' and the planner's Python
    return (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", spark_jar())
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )


def _spark(spark, root: str, on_executors: bool, name: str) -> float:
    from ducklake_datafusion.spark import call_procedure

    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(f"{prefix}.metadata", os.path.join(root, "cat.ducklake"))
    spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
    spark.sql(f"SHOW NAMESPACES IN {name}").collect()  # (the planner started: not timed)
    started = time.perf_counter()
    if on_executors:
        call_procedure(spark, name, "merge_adjacent_files", on_executors=True).collect()
    else:
        spark.sql(f"CALL {name}.system.merge_adjacent_files()").collect()
    return time.perf_counter() - started


def _theirs(root: str) -> float:
    con = _duckdb(root)
    started = time.perf_counter()
    con.execute("CALL ducklake_merge_adjacent_files('lake')").fetchall()
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


def _reads(root: str, rows: int) -> tuple[float, float]:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(os.path.join(root, "cat.ducklake")))
    low = rows // 2
    selective = f"SELECT * FROM lake.main.t WHERE k BETWEEN {low} AND {low + 999}"
    ctx.sql(FULL).collect()  # (warm: the provider built, footers read)
    times = []
    for query in (FULL, selective):
        started = time.perf_counter()
        ctx.sql(query).collect()
        times.append(time.perf_counter() - started)
    return times[0], times[1]


def _same(root_a: str, root_b: str) -> None:
    answers = []
    for root in (root_a, root_b):
        con = _duckdb(root)
        answers.append(con.execute(SAME).fetchall())
        con.close()
    if answers[0] != answers[1]:
        raise SystemExit(f"the merged lakes differ: {answers}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true", help="also through Spark local[2]")
    args = parser.parse_args()
    spark = _spark_session() if args.spark else None
    sparks: dict[str, list[float]] = {"CALL (driver)": [], "on_executors": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        _build(base, args.files, args.rows)
        ours, theirs, before, after = [], [], [], []
        for run in range(args.repeat):
            mine, other = os.path.join(tmp, f"ours{run}"), os.path.join(tmp, f"theirs{run}")
            _copy(base, mine)
            _copy(base, other)
            before.append(_reads(mine, args.files * args.rows))
            ours.append(_ours(mine))
            theirs.append(_theirs(other))
            after.append(_reads(mine, args.files * args.rows))
            _same(mine, other)
            if spark is not None:
                for index, label in enumerate(sparks):
                    copy = os.path.join(tmp, f"spark{run}_{index}")
                    _copy(base, copy)
                    sparks[label].append(_spark(spark, copy, index == 1, f"lake{run}_{index}"))
                    _same(copy, other)
                    shutil.rmtree(copy)
            shutil.rmtree(mine)
            shutil.rmtree(other)
    med = statistics.median
    print(
        f"merge_adjacent_files, {args.files} files of {args.rows} rows (medians of {args.repeat})"
    )
    print(
        f"  ours {med(ours):.2f} s   DuckDB {med(theirs):.2f} s   ours/DuckDB {med(ours) / med(theirs):.2f}x"
    )
    for label, times in sparks.items():
        if times:
            print(
                f"  Spark local[2], {label}: {med(times):.2f} s   "
                f"/DuckDB {med(times) / med(theirs):.2f}x"
            )
    for index, name in enumerate(("full scan", "1,000-row range")):
        b, a = med(t[index] for t in before), med(t[index] for t in after)
        print(f"  {name}: before {b:.3f} s   after {a:.3f} s   after/before {a / b:.2f}x")


if __name__ == "__main__":
    main()
