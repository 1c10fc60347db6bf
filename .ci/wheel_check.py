"""What a user of the wheel gets, checked in a clean venv that has only the wheel (.ci/wheel_check.sh).

Run from a directory outside the checkout, so ``ducklake_datafusion`` is the installed wheel's:
    python wheel_check.py WORKDIR
It asserts that the package, its Rust extension and its Spark jar are the wheel's, builds a
lake with deletes with DuckDB (the reference writer), and compares with DuckDB's answers:
* a DataFusion query on the Rust scan (``DuckLakeScanExec`` in the plan);
* ``read_table`` in Spark with the wheel's jar: deletes applied inside Spark's Parquet reader
  (``parquet-deleted-rows`` in the executed plan, no mask join);
* the jar's Spark catalog (``spark.sql.catalog.<name>``): every file read by Spark's reader.
Any difference raises, naming the check.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

import duckdb
import duckdb_extensions
from datafusion import SessionContext

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.provider import _rust
from ducklake_datafusion.spark import read_table, spark_jar

SITE = Path(sysconfig.get_paths()["purelib"]).resolve()


def installed(path: str | os.PathLike, what: str) -> None:
    """``path`` lies in this venv's site-packages (the wheel), not in a checkout."""
    if SITE not in Path(path).resolve().parents:
        raise AssertionError(f"{what} is {path}, not the wheel's (under {SITE})")


def build_lake(root: Path) -> tuple[str, str]:
    """``lake.main.t``: two data files, positional deletes in both, an update, a rename."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    catalog, data = str(root / "lake.ducklake"), str(root / "data")
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data}')")
    con.execute("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    con.execute("INSERT INTO lake.main.t SELECT i, i % 7, 's' || i FROM range(0, 60000) r(i)")
    con.execute("INSERT INTO lake.main.t SELECT i, i % 7, 's' || i FROM range(60000, 90000) r(i)")
    con.execute("DELETE FROM lake.main.t WHERE k % 11 = 3 OR k BETWEEN 61000 AND 62500")
    con.execute("UPDATE lake.main.t SET s = 'updated' WHERE k % 1000 = 7")
    con.execute("ALTER TABLE lake.main.t RENAME COLUMN s TO label")
    con.execute("DETACH lake")
    return catalog, data


def duckdb_rows(catalog: str, data: str, sql: str) -> list[tuple]:
    """DuckDB's answer (the reference reader) to ``sql`` over ``lake``, sorted."""
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data}', READ_ONLY)")
    return sorted(con.execute(sql).fetchall(), key=repr)


def same(what: str, got: list[tuple], want: list[tuple]) -> None:
    got = sorted(got, key=repr)
    if got != want:
        extra = [r for r in got if r not in set(want)][:5]
        missing = [r for r in want if r not in set(got)][:5]
        raise AssertionError(
            f"{what}: {len(got)} rows, DuckDB has {len(want)}; only ours {extra}, "
            f"only DuckDB's {missing}"
        )
    print(f"wheel_check: {what}: {len(got)} rows as DuckDB", flush=True)


SQL = (
    "SELECT k, g, label FROM lake.main.t WHERE g <> 2 OR label = 'updated'",
    "SELECT g, count(*) AS n, sum(k) AS sk FROM lake.main.t GROUP BY g",
)


def check_datafusion(catalog: str, data: str) -> None:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(catalog, data_path=data))
    for sql in SQL:
        plan = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())
        if "DuckLakeScanExec" not in plan:
            raise AssertionError(f"DataFusion did not use the Rust scan for {sql}:\n{plan}")
        got = [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]
        same(f"DataFusion (Rust scan): {sql}", got, duckdb_rows(catalog, data, sql))


def spark_session(tmp: Path):
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("ducklake-wheel-check")
        .config("spark.jars", spark_jar())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", str(tmp / "spark-local"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def executed_plan(frame) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


def check_spark(catalog: str, data: str, tmp: Path) -> None:
    installed(spark_jar(), "spark_jar()")
    for scala in ("2.12", "2.13"):
        installed(spark_jar(scala=scala), f"spark_jar(scala={scala!r})")
    spark = spark_session(tmp)
    try:
        want = duckdb_rows(catalog, data, "SELECT * FROM lake.main.t")
        # With the jar on the classpath, read_table goes through the catalog's scan.
        frame = read_table(spark, catalog, "main.t", data_path=data)
        plan = executed_plan(frame)
        if "BatchScan" not in plan or "read by Spark" not in plan or "read exactly" in plan:
            raise AssertionError(f"read_table's scan is not the catalog's Spark reader:\n{plan}")
        same(
            "Spark read_table (the catalog's scan)",
            [tuple(r) for r in frame.collect()],
            want,
        )
        # Without it, read_table's own plan: deletes inside Spark's Parquet reader.
        frame = read_table(spark, catalog, "main.t", data_path=data, catalog_scan=False)
        plan = executed_plan(frame)
        if "parquet-deleted-rows" not in plan or "BroadcastHashJoin" in plan:
            raise AssertionError(f"read_table's deletes are not applied in Spark's reader:\n{plan}")
        same(
            "Spark read_table (deletes in Spark's reader)",
            [tuple(r) for r in frame.collect()],
            want,
        )

        prefix = "spark.sql.catalog.wheel"
        spark.conf.set(prefix, "io.ducklake_datafusion.spark.DuckLakeCatalog")
        spark.conf.set(f"{prefix}.metadata", catalog)
        spark.conf.set(f"{prefix}.data_path", data)
        spark.conf.set(f"{prefix}.python", sys.executable)
        spark.conf.set(f"{prefix}.planner_idle_seconds", "5")
        for sql in SQL:
            frame = spark.sql(sql.replace("lake.main.t", "wheel.main.t"))
            plan = executed_plan(frame)
            if "BatchScan" not in plan or "read exactly by the planner" in plan:
                raise AssertionError(f"the catalog's scan is not Spark's reader:\n{plan}")
            got = [tuple(r) for r in frame.collect()]
            same(f"Spark catalog: {sql}", got, duckdb_rows(catalog, data, sql))
    finally:
        spark.stop()


def main() -> None:
    tmp = Path(sys.argv[1]).resolve()
    installed(ducklake_datafusion.__file__, "ducklake_datafusion")
    installed(_rust.extension().__file__, "the Rust extension")
    for tool in ("cargo", "rustc", "javac", "mvn"):
        if shutil.which(tool):
            raise AssertionError(f"{tool} is on PATH ({shutil.which(tool)}): not a clean venv")
    catalog, data = build_lake(tmp / "lake")
    check_datafusion(catalog, data)
    check_spark(catalog, data, tmp)
    print("wheel_check: the wheel's package, Rust scan and Spark jar answer as DuckDB")


if __name__ == "__main__":
    main()
