"""Spark's DELETE, UPDATE and MERGE through the lake's catalog against DuckDB's own, on twins.

    .venv/bin/python bench/spark_dml.py                   # 10M rows, 3 runs, local[2]
    .venv/bin/python bench/spark_dml.py --rows 1000000 --repeat 1   # quicker
    .venv/bin/python bench/spark_dml.py --iceberg         # and Iceberg's merge-on-read

The twin lakes of ``bench/dml.py`` (``--rows`` rows of k BIGINT, g INTEGER, v DOUBLE,
s VARCHAR in DuckDB's files, inlining off; a MERGE source ``src`` of a tenth of the rows,
half matching). On each, in turn: a DELETE of 1% scattered rows, an UPDATE of 1%, a MERGE
of the source (one UPDATE and one INSERT action: DuckDB's MERGE takes one), then a read
(``count(*)``, ``sum(v)``), and the same read once before the statements: ours through
Spark SQL on the catalog (``spark.sql.catalog.lake``), DuckDB's through its own statements
on the twin.

Printed: each statement's seconds and the ratio ours/DuckDB, and our read after the
statements against our read before them, as medians of ``--repeat`` runs on fresh copies of
the twins; both lakes' rows are compared (DuckDB reads both) in every run. Not timed: the
session's start, the catalog's first planner, and the JIT's first pass (a statement that
changes nothing runs first).

``--iceberg``: the same statements on the same Spark session against Iceberg tables of the
same rows (a Hadoop catalog, format 2, merge-on-read deletes, updates and merges: position
delete files, as ours), copied once from the lake and rolled back to that copy before each
run; Iceberg's Spark runtime for the session's release comes from Maven Central through
``spark.jars.packages`` (Spark 3.5, 4.0 and 4.1 have one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from dml import READ, SAME, _build, _duckdb
from pyspark.sql import SparkSession

from ducklake_datafusion.spark import spark_jar

STATEMENTS = [
    ("delete 1%", "DELETE FROM lake.main.t WHERE k % 100 = 7"),
    ("update 1%", "UPDATE lake.main.t SET v = v + 1 WHERE k % 100 = 13"),
    (
        "merge 10%",
        (
            "MERGE INTO lake.main.t AS t USING lake.main.src AS s ON t.k = s.k WHEN MATCHED "
            "THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, g, v, s) "
            "VALUES (s.k, s.g, s.v, s.s)"
        ),
    ),
]
WARM = "DELETE FROM lake.main.src WHERE k < 0"
CATALOG = "io.ducklake_datafusion.spark.DuckLakeCatalog"
# Iceberg's Spark runtime per Spark release (the newest Iceberg that has one, resolved)
ICEBERG = {
    "3.5": "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
    "4.0": "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0",
    "4.1": "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",
}
MERGE_ON_READ = ", ".join(
    f"'write.{kind}.mode' = 'merge-on-read'" for kind in ("delete", "update", "merge")
)


def _session(iceberg_warehouse: str | None) -> SparkSession:
    import pyspark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("ducklake-datafusion-bench-dml")
        .config("spark.jars", spark_jar())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if iceberg_warehouse is not None:
        release = ".".join(pyspark.__version__.split(".")[:2])
        if release not in ICEBERG:
            sys.exit(f"--iceberg: no Iceberg runtime for Spark {release} (has: {list(ICEBERG)})")
        builder = (
            builder.config("spark.jars.packages", ICEBERG[release])
            .config(
                "spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            )
            .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.ice.type", "hadoop")
            .config("spark.sql.catalog.ice.warehouse", iceberg_warehouse)
        )
    return builder.getOrCreate()


def _iceberg_copy(spark: SparkSession, catalog: str, data: str) -> dict[str, int]:
    """Iceberg tables ``ice.db.t`` and ``ice.db.src`` of the lake's rows; their snapshots."""
    _catalog(spark, "pristine", catalog, data)
    snapshots = {}
    for table in ("t", "src"):
        spark.sql(
            f"CREATE TABLE ice.db.{table} USING iceberg TBLPROPERTIES ('format-version' = '2', "
            f"{MERGE_ON_READ}) AS SELECT * FROM pristine.main.{table}"
        )
        snapshots[table] = spark.sql(
            f"SELECT snapshot_id FROM ice.db.{table}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).collect()[0][0]
    return snapshots


def _iceberg_run(spark: SparkSession, snapshots: dict[str, int]) -> dict[str, float]:
    """The statements on the Iceberg copy, rolled back to it first: label -> seconds."""
    for table, snapshot in snapshots.items():
        spark.sql(f"CALL ice.system.rollback_to_snapshot('db.{table}', {snapshot})")
    spark.sql(WARM.replace("lake.main.", "ice.db.")).collect()
    times = {}
    for label, statement in STATEMENTS:
        times[label], _ = _timed(
            lambda statement=statement: spark.sql(
                statement.replace("lake.main.", "ice.db.")
            ).collect()
        )
    return times


def _catalog(spark: SparkSession, name: str, catalog: str, data: str) -> None:
    spark.conf.set(f"spark.sql.catalog.{name}", CATALOG)
    spark.conf.set(f"spark.sql.catalog.{name}.metadata", catalog)
    spark.conf.set(f"spark.sql.catalog.{name}.data_path", data)
    spark.conf.set(f"spark.sql.catalog.{name}.python", sys.executable)


def _timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def _run_once(spark, run: int, ours, theirs) -> dict[str, tuple[float, float]]:
    name = f"lake{run}"  # a fresh catalog (and planner) per run: its lake was copied anew
    _catalog(spark, name, *ours)

    def spark_sql(text: str):
        return spark.sql(text.replace("lake.main.", f"{name}.main.")).collect()

    spark_sql(WARM)
    con = _duckdb(*theirs)
    con.execute(WARM)
    con.close()
    times = {}
    before, _ = _timed(lambda: spark_sql(READ))
    for label, statement in STATEMENTS:
        mine, _ = _timed(lambda statement=statement: spark_sql(statement))
        con = _duckdb(*theirs)
        reference, _ = _timed(lambda con=con, statement=statement: con.execute(statement))
        con.close()
        times[label] = (mine, reference)
    after, rows = _timed(lambda: spark_sql(READ))
    times["read after/before"] = (after, before)
    check, twin = _duckdb(*ours), _duckdb(*theirs)
    assert check.execute(SAME).fetchall() == twin.execute(SAME).fetchall(), "the lakes differ"
    expected = twin.execute(READ).fetchall()[0]
    check.close()
    twin.close()
    assert rows[0][0] == expected[0] and abs(rows[0][1] - expected[1]) <= 1e-9 * abs(expected[1])
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--iceberg", action="store_true", help="Iceberg's MERGE too")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="ducklake-spark-dml-")
    spark = _session(os.path.join(root, "iceberg") if args.iceberg else None)
    try:
        twins = [_build(os.path.join(root, side), args.rows) for side in ("ours", "theirs")]
        for side in ("ours", "theirs"):
            shutil.copytree(os.path.join(root, side), os.path.join(root, f"{side}.pristine"))
        iceberg = _iceberg_copy(spark, *twins[0]) if args.iceberg else None
        runs, iceberg_runs = [], []
        for run in range(args.repeat):
            if run:
                for side in ("ours", "theirs"):
                    shutil.rmtree(os.path.join(root, side))
                    shutil.copytree(
                        os.path.join(root, f"{side}.pristine"), os.path.join(root, side)
                    )
            runs.append(_run_once(spark, run, *twins))
            if iceberg is not None:
                iceberg_runs.append(_iceberg_run(spark, iceberg))
                con = _duckdb(*twins[1])
                expected = con.execute(READ).fetchall()[0]
                con.close()
                got = spark.sql(READ.replace("lake.main.", "ice.db.")).collect()[0]
                assert got[0] == expected[0] and abs(got[1] - expected[1]) <= 1e-9 * abs(
                    expected[1]
                ), "Iceberg's rows differ from DuckDB's"
        print(
            f"{args.rows:,} rows, Spark {spark.version} local[2], {args.repeat} runs on fresh "
            "twins; median seconds (range)"
        )
        middle = len(runs) // 2
        for label in runs[0]:
            mine = sorted(r[label][0] for r in runs)
            reference = sorted(r[label][1] for r in runs)
            ratios = sorted(r[label][0] / r[label][1] for r in runs)
            other = "before" if label.startswith("read") else "DuckDB"
            print(
                f"{label:>18}: ours {mine[middle]:5.2f} ({mine[0]:.2f}-{mine[-1]:.2f})  "
                f"{other} {reference[middle]:5.2f} ({reference[0]:.2f}-{reference[-1]:.2f})  "
                f"ratio {ratios[middle]:4.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"
            )
        for label in iceberg_runs[0] if iceberg_runs else ():
            theirs = sorted(r[label] for r in iceberg_runs)
            ratios = sorted(r[label][0] / i[label] for r, i in zip(runs, iceberg_runs))
            print(
                f"{label:>18}: Iceberg {theirs[middle]:5.2f} ({theirs[0]:.2f}-{theirs[-1]:.2f})  "
                f"ours/Iceberg {ratios[middle]:4.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"
            )
        print("both lakes read the same by DuckDB, every run (and Iceberg's table read by Spark)")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
