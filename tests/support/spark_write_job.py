"""Spark writes under faults, in a session of their own (``local[2,4]``: a failed task is
retried, which the suite's ``local[2]`` session never does), run by
``test_spark_write_faults``:

    python spark_write_job.py --serve JAR [MASTER]   # cases one after another

``--serve`` reads one SPEC path per line on standard input and runs each as it comes
(its ``result.json`` says it is done; the JVM shares standard output): the cases share one
session and its JVM's start (~10 s a case), each on its own lake through a catalog of its
own; the speculation cases share a second one, which speculates, on the standalone
cluster MASTER (``spark_standalone``: Spark copies no task in a ``local`` master).
SPEC: ``metadata`` (the lake's catalog), ``data_path``, ``jar`` (the package's jar), ``out``
(a directory) and ``case``. An append of 4,000 rows, or with ``merge_`` a ``MERGE INTO`` of
them and an update of the table's row (executors write both kinds of files, after a
shuffle: their faults are the jar's ``TaskFaults``), acting out one of:

* ``retry``, ``merge_retry``: the first attempt of a task fails after writing rows; Spark
  retries it;
* ``speculation``, ``merge_speculation``: a task's first attempt is slow; Spark runs a
  speculative copy (on the other worker's host), and one of the two commits;
* ``cancel``, ``merge_cancel``: the job is cancelled while its tasks write;
* ``locked``, ``merge_locked``: another process holds the catalog database's lock when the
  driver commits;
* ``outcome_unknown``, ``merge_outcome_unknown``: the planner process ends once it
  committed, before it answers (``DUCKLAKE_PLANNER_FAULT``, set for that catalog's
  planner alone);
* ``concurrent_append`` / ``concurrent_overwrite``: DuckDB commits to the table while
  Spark's tasks write.

Each writes ``result.json``: ``{"error": text or null, "failed_tasks": the number of task
attempts that failed in the case's jobs, "seconds": the statement's time, "copied": whether
an append's speculative copy ran}``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.functions import lit, udf


def _session(jar: str, master: str | None) -> SparkSession:
    """A ``local[2,4]`` session; on a cluster ``master``, one that copies a slow task and
    cuts a shuffle into 4 tasks (adaptive execution would coalesce a change's rows into
    one task, which speculation never copies: it compares a task with its stage's others)."""
    speculation = master is not None
    builder = (
        SparkSession.builder.master(master or "local[2,4]")
        .appName("ducklake-datafusion-write-faults")
        .config("spark.jars", jar)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # (as the tests' shared session: conftest.TEST_JVM_OPTIONS)
        .config(
            "spark.driver.extraJavaOptions",
            os.environ.get("DUCKLAKE_TEST_JVM_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"),
        )
    )
    if speculation:
        builder = (
            builder.config("spark.speculation", "true")
            .config("spark.speculation.interval", "100ms")
            .config("spark.speculation.multiplier", "1.5")
            .config("spark.speculation.quantile", "0.5")
            .config("spark.speculation.minTaskRuntime", "0")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def _catalog(spark: SparkSession, metadata: str, python: str = sys.executable) -> str:
    """A catalog of the lake ``metadata`` in the session, under a name of its own, whose
    planner ``python`` runs."""
    global _catalogs
    _catalogs += 1
    name = f"lake{_catalogs}"
    spark.conf.set(f"spark.sql.catalog.{name}", "io.ducklake_datafusion.spark.DuckLakeCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.metadata", metadata)
    spark.conf.set(f"spark.sql.catalog.{name}.python", python)
    return name


def _faulty_planner(out: Path) -> str:
    """A Python whose planner processes end once they committed, before they answer."""
    script = out / "python-exiting-after-commit"
    script.write_text(
        f'#!/bin/sh\nDUCKLAKE_PLANNER_FAULT=exit-after-commit exec "{sys.executable}" "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


# The jar's task faults (``TaskFaults``) a row change's writing tasks act out, by case.
_TASK_FAULTS = {
    "merge_retry": "fail-after-write",
    "merge_speculation": "slow-while-writing",
    "merge_cancel": "block-after-write:{out}/writing",
}


_catalogs = 0


def _faulty(case: str, metadata: str, marks: str):
    """A UDF that is the identity on ``id`` and acts out the case at partition 0's last row
    (``id`` 999), when that task's file already holds the rows before it."""

    def act(value):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context.partitionId() != 0 or value != 999:
            return value
        attempt = context.attemptNumber()
        if case == "speculation" and attempt > 0:
            Path(marks, "copied").touch()
        if case == "retry" and attempt == 0:
            raise RuntimeError("the first attempt of task 0 fails")
        if case == "speculation" and attempt == 0:
            time.sleep(4)  # (its copy starts after ~0.5 s)
        if case == "cancel":
            Path(marks, "writing").touch()
            time.sleep(60)
        if case == "merge_locked":
            Path(marks, "writing").touch()  # (the MERGE is planned: its scan read the catalog)
        if case.startswith("concurrent") and attempt == 0:
            import duckdb
            import duckdb_extensions

            con = duckdb.connect()
            duckdb_extensions.import_extension("ducklake", con=con)
            con.execute(f"ATTACH 'ducklake:{metadata}' AS other")
            con.execute("INSERT INTO other.main.t VALUES (-1, 'duckdb')")
            con.close()
        return value

    return udf(act, "bigint")


def _parquet_files(folder: Path) -> set[Path]:
    return set(folder.rglob("*.parquet"))


def run_case(spark: SparkSession, spec: dict) -> None:
    """Write as ``spec`` says, acting out its case; ``result.json`` in its ``out``."""
    case, out = spec["case"], Path(spec["out"])
    python = _faulty_planner(out) if case.endswith("outcome_unknown") else sys.executable
    table = f"{_catalog(spark, spec['metadata'], python)}.main.t"
    data = Path(spec["data_path"])
    before = _parquet_files(data)
    act = _faulty(case, spec["metadata"], str(out))
    rows = (
        spark.range(0, 4000, 1, 4)
        .select(act("id").alias("id"))
        .selectExpr("id", "concat('spark', id) AS s")
    )
    lock = None
    if case in ("locked", "merge_locked"):
        import duckdb

        def hold() -> None:  # the catalog's file lock, taken while the tasks run
            nonlocal lock
            time.sleep(1)
            while case == "merge_locked" and not Path(out, "writing").exists():
                time.sleep(0.05)
            lock = duckdb.connect(spec["metadata"])

        threading.Thread(target=hold, daemon=True).start()
        slow = udf(lambda v: (time.sleep(0.001), v)[1], "bigint")
        rows = rows.select(slow("id").alias("id"), "s")
    if case in ("cancel", "merge_cancel"):

        def cancel() -> None:
            while not Path(out, "writing").exists():
                time.sleep(0.1)
            time.sleep(1)
            spark.sparkContext.cancelAllJobs()

        threading.Thread(target=cancel, daemon=True).start()
    error = None
    context = spark.sparkContext
    context.setJobGroup(f"case-{out}", case)
    started = time.monotonic()
    try:
        if case == "concurrent_overwrite":
            rows.writeTo(table).overwrite(lit(True))
        elif case.startswith("merge_"):
            fault = _TASK_FAULTS.get(case)
            context.setLocalProperty("ducklake.test.fault", fault and fault.format(out=out))
            rows.union(spark.sql("SELECT 100000L AS id, 'merged' AS s")).createOrReplaceTempView(
                "source"
            )
            try:
                spark.sql(
                    f"MERGE INTO {table} t USING source ON t.id = source.id WHEN MATCHED THEN "
                    "UPDATE SET s = source.s WHEN NOT MATCHED THEN INSERT *"
                )
            finally:
                context.setLocalProperty("ducklake.test.fault", None)
        else:
            rows.writeTo(table).append()
    except Exception as exc:  # noqa: BLE001 - the test inspects the error text
        error = f"{type(exc).__name__}: {exc}"[:4000]
    seconds = time.monotonic() - started
    tracker = context.statusTracker()
    failed_tasks = sum(
        stage.numFailedTasks
        for job in tracker.getJobIdsForGroup(f"case-{out}")
        for stage_id in (tracker.getJobInfo(job).stageIds if tracker.getJobInfo(job) else [])
        if (stage := tracker.getStageInfo(stage_id)) is not None
    )
    if lock is not None:
        lock.close()
    # killed attempts' aborts run after the job ends: a cancelled task's Python worker is
    # killed first, which took over 2 s on a loaded CI machine, and a fixed 10 s was not
    # always enough either. A cancelled job commits nothing, so its aborts are done when
    # the table's folder holds the files it held before (the test then checks that it
    # does: a file an abort never deleted fails it).
    time.sleep(2)
    if case in ("cancel", "merge_cancel"):
        deadline = time.monotonic() + 90
        while _parquet_files(data) != before and time.monotonic() < deadline:
            time.sleep(0.2)
    written = out / "result.json.tmp"  # (renamed: a test waiting for it reads it whole)
    written.write_text(
        json.dumps(
            {
                "error": error,
                "failed_tasks": failed_tasks,
                "seconds": seconds,
                "copied": Path(out, "copied").exists(),
            }
        )
    )
    written.replace(out / "result.json")


def serve(jar: str, master: str | None) -> None:
    """Run the cases whose SPEC paths arrive on standard input, in one session."""
    spark = None
    for line in sys.stdin:
        spec = json.loads(Path(line.strip()).read_text())
        if spark is None:
            spark = _session(jar, master)
        run_case(spark, spec)
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    assert sys.argv[1] == "--serve", __doc__
    serve(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
