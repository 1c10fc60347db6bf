"""The catalog's maintenance procedures from Spark, against a twin lake.

``CALL lake.system.<procedure>(...)`` (Spark 4's ``ProcedureCatalog``) and
``call_procedure`` (every release, pyspark 3.5 too) run the package's maintenance in the
catalog's planner; DuckDB runs its function of the same name on an identical lake. The
rows every snapshot reads, the change feed and the catalog rows then agree
(``support.twins``), and the procedure answers with the rows DuckDB's function answers.
"""

from __future__ import annotations

import datetime as _dt
import os

import pytest
from support.lakes import LakeSpec
from support.twins import assert_twins_agree, twin_catalog, twin_lakes, twin_rows
from support.writes import META, duckdb_reads

from ducklake_datafusion.errors import DuckLakeError

pytest.importorskip("pyspark")

from ducklake_datafusion.spark import call_procedure
from ducklake_datafusion.spark._core._versions import pyspark_at_least

pytestmark = pytest.mark.spark

HAS_CALL = pyspark_at_least(4, 0)  # Spark 3.5 has no CALL: call_procedure runs them

HISTORY = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
    *(
        f"INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] "
        f"FROM range({low}, {low + 50}) r(i)"
        for low in range(0, 200, 50)
    ),
    "DELETE FROM lake.main.t WHERE id < 48",  # 96% of the first file
    "DELETE FROM lake.main.t WHERE id = 120",
]


def _spark_calls(spark, name: str, procedure: str, sql_arguments: str, **arguments):
    """The procedure's rows: by ``CALL`` where Spark has it, else by ``call_procedure``."""
    if HAS_CALL:
        return spark.sql(f"CALL {name}.system.{procedure}({sql_arguments})").collect()
    return call_procedure(spark, name, procedure, **arguments).collect()


def test_merge_and_rewrite_procedures_match_duckdb(spark, make_lake, catalog):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)
    name = catalog(ours)
    merged = _spark_calls(spark, name, "merge_adjacent_files", "table => 'main.t'", table="main.t")
    rewritten = _spark_calls(
        spark,
        name,
        "rewrite_data_files",
        "table => 't', delete_threshold => 0.5",
        table="t",
        delete_threshold=0.5,
    )
    their_merge = theirs.sql("CALL ducklake_merge_adjacent_files('lake', 't')").fetchall()
    their_rewrite = theirs.sql(
        "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.5)"
    ).fetchall()
    theirs.detach()
    assert [tuple(r) for r in merged] == [tuple(r) for r in their_merge]
    assert [tuple(r) for r in rewritten] == [tuple(r) for r in their_rewrite]
    assert merged and rewritten
    assert_twins_agree(ours, theirs)


def test_expire_and_cleanup_procedures_match_duckdb(spark, make_lake, catalog):
    # snapshots: 1 create, 2-5 appends, 6-7 deletes, 8 the rewrite that ends the first file
    setup = [*HISTORY, "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0.5)"]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    dry = _spark_calls(
        spark,
        name,
        "expire_snapshots",
        "versions => array(2, 3), dry_run => true",
        versions=[2, 3],
        dry_run=True,
    )
    assert [r.snapshot_id for r in dry] == [2, 3]
    assert dry[0].changes == {"tables_inserted_into": ["1"]}
    assert twin_catalog(ours) == twin_catalog(theirs)  # a dry run changes nothing
    versions = list(range(2, 8))
    expired = _spark_calls(
        spark, name, "expire_snapshots", f"versions => array{tuple(versions)}", versions=versions
    )
    their_expired = theirs.sql(f"CALL ducklake_expire_snapshots('lake', versions => {versions})")
    assert [r.snapshot_id for r in expired] == [r[0] for r in their_expired.fetchall()]
    theirs.detach()
    later = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=1)
    cleaned = _spark_calls(
        spark,
        name,
        "cleanup_old_files",
        f"older_than => TIMESTAMP '{later:%Y-%m-%d %H:%M:%S}'",
        older_than=later,
    )
    their_cleaned = theirs.sql("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    assert len(cleaned) == len(their_cleaned.fetchall()) > 0
    theirs.detach()
    orphans = _spark_calls(
        spark, name, "delete_orphaned_files", "cleanup_all => true", cleanup_all=True
    )
    assert orphans == []
    assert twin_catalog(ours) == twin_catalog(theirs)
    last = duckdb_reads(ours, f"SELECT max(snapshot_id) FROM {META}.ducklake_snapshot")
    for snapshot in (1, last.column(0)[0].as_py()):
        assert twin_rows(ours, snapshot) == twin_rows(theirs, snapshot)


def test_procedures_are_listed_and_unknown_ones_named(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    lake.sql(HISTORY[0])
    name = catalog(lake)
    if HAS_CALL:  # Spark names the routine it failed to load (our error is the cause)
        with pytest.raises(Exception, match=r"FAILED_TO_LOAD_ROUTINE.*`system`.`nope`"):
            spark.sql(f"CALL {name}.system.nope()").collect()
    with pytest.raises(Exception, match="has no procedure system.nope; its procedures are"):
        call_procedure(spark, name, "nope")
    with pytest.raises(Exception, match="has no argument tabel"):
        call_procedure(spark, name, "merge_adjacent_files", tabel="t")
    if pyspark_at_least(4, 1):  # SHOW PROCEDURES
        listed = {r[-1] for r in spark.sql(f"SHOW PROCEDURES IN {name}.system").collect()}
        assert {"merge_adjacent_files", "expire_snapshots", "checkpoint"} <= listed


def test_a_merge_written_by_the_executors_matches_duckdb(spark, make_lake, catalog):
    """``on_executors``: the planner plans the merge, a Spark job's tasks write its groups
    (each through the package's Python on its executor), the planner commits them once:
    DuckDB's merge on the twin lake reads the same at every snapshot. Through ``CALL`` where
    Spark has it, through ``call_procedure`` elsewhere."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), [*HISTORY, *MORE])
    name = catalog(ours)
    if HAS_CALL:
        sql = f"CALL {name}.system.merge_adjacent_files(on_executors => true)"
        merged = spark.sql(sql).collect()
    else:
        merged = call_procedure(spark, name, "merge_adjacent_files", on_executors=True).collect()
    their_merge = theirs.sql("CALL ducklake_merge_adjacent_files('lake')").fetchall()
    theirs.detach()
    assert sorted(tuple(r) for r in merged) == sorted(tuple(r) for r in their_merge)
    assert len(merged) == 2  # two tables: two Spark tasks
    assert_twins_agree(ours, theirs)


def test_a_failed_executor_merge_commits_nothing_and_leaves_no_file(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    for statement in [*HISTORY, *MORE]:
        lake.sql(statement)
    name = catalog(lake)
    before = lake.snapshot_id()
    files = (
        duckdb_reads(
            lake,
            f"SELECT d.path FROM {META}.ducklake_data_file d JOIN {META}.ducklake_table t "
            "USING (table_id) WHERE t.table_name = 'u' ORDER BY data_file_id",
        )
        .column(0)
        .to_pylist()
    )
    on_storage = set(_parquet_files(lake))
    gone = next(p for p in on_storage if p.endswith(files[-1].rsplit("/", 1)[-1]))
    os.remove(gone)
    with pytest.raises(DuckLakeError, match="ducklake-"):
        call_procedure(spark, name, "merge_adjacent_files", on_executors=True)
    assert lake.snapshot_id() == before
    assert set(_parquet_files(lake)) == on_storage - {gone}  # table t's merged file deleted


MORE = [
    "CREATE TABLE lake.main.u (k INTEGER, s VARCHAR)",
    *(
        f"INSERT INTO lake.main.u SELECT i, 's' || i FROM range({i}, {i + 5}) r(i)"
        for i in (0, 5, 10)
    ),
]


def _parquet_files(lake) -> list[str]:
    found = []
    for root, _, names in os.walk(lake.data_path):
        found.extend(os.path.join(root, n) for n in names if n.endswith(".parquet"))
    return found
