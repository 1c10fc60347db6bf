"""Spark's ``DELETE FROM`` and ``TRUNCATE TABLE`` by catalog metadata, against a twin lake.

The catalog's table ends the data files a condition matches whole, decided by their
partition values and statistics alone (``SupportsDeleteV2``). Each case runs the statement
through Spark on one lake and through DuckDB on its twin: the rows with their ``rowid`` and
the change feed at every snapshot, and the catalog rows, agree (``support.twins``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.lakes import LakeSpec
from support.twins import TWIN_SETUP, assert_twins_agree, twin_lakes
from support.writes import META, duckdb_reads

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark

PARTITIONED = [TWIN_SETUP[0], "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)", *TWIN_SETUP[1:]]


def _delete_on_both(spark, name, ours, theirs, statements) -> None:
    for statement in statements:
        spark.sql(statement.format(table=f"{name}.main.t")).collect()
        theirs.sql(statement.format(table="lake.main.t"))
        theirs.detach()


# (PostgreSQL's catalog rows for Spark's changes: test_spark_row_changes' inlined rows)
@pytest.mark.parametrize("spec", [LakeSpec("duckdb", "local")], ids=lambda s: s.id)
def test_deletes_of_whole_partitions_match_duckdb(spark, make_lake, catalog, spec):
    """Files of whole partitions ended, those with DuckDB's delete files among them; a
    condition no file matches commits nothing, as DuckDB's."""
    ours, theirs = twin_lakes(make_lake, spec, PARTITIONED)
    name = catalog(ours)
    _delete_on_both(
        spark,
        name,
        ours,
        theirs,
        [
            "DELETE FROM {table} WHERE grp = 'g2'",
            "DELETE FROM {table} WHERE grp IN ('g9', 'g5') OR grp = 'g0'",
            "DELETE FROM {table} WHERE grp = 'nowhere'",
        ],
    )
    assert_twins_agree(ours, theirs, file_ids=False)
    live = duckdb_reads(
        ours,
        f"SELECT count(*) FROM {META}.ducklake_data_file f JOIN "
        f"{META}.ducklake_file_partition_value p USING (data_file_id) "
        "WHERE p.partition_value IN ('g0', 'g2', 'g5', 'g9') AND f.end_snapshot IS NULL",
    )
    assert live.column(0)[0].as_py() == 0


def test_deletes_decided_by_statistics_match_duckdb(spark, make_lake, catalog):
    """An unpartitioned table: a file matched whole by its bounds (ranges, a negation)."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    name = catalog(ours)
    _delete_on_both(
        spark,
        name,
        ours,
        theirs,
        [
            "DELETE FROM {table} WHERE id >= 1000 AND id < 2000",
            "DELETE FROM {table} WHERE NOT (id < 2000) AND grp <> 'g0'",
        ],
    )
    assert_twins_agree(ours, theirs)


def test_delete_of_everything_and_truncate_end_inlined_rows_too(spark, make_lake, catalog):
    setup = [*TWIN_SETUP, "INSERT INTO lake.main.t VALUES (5000, 'g7', 1.5, ['i'])"]
    for statement in ("DELETE FROM {table}", "TRUNCATE TABLE {table}"):
        ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup, inline_limit=5)
        inlined = duckdb_reads(ours, f"SELECT count(*) FROM {META}.ducklake_inlined_data_tables")
        assert inlined.column(0)[0].as_py() == 1  # the last row is in the catalog
        name = catalog(ours)
        spark.sql(statement.format(table=f"{name}.main.t")).collect()
        theirs.sql("DELETE FROM lake.main.t")
        theirs.detach()
        assert_twins_agree(ours, theirs)


def test_a_delete_some_file_matches_in_part_is_deleted_row_by_row(spark, make_lake, catalog):
    """The catalog cannot decide it (``canDeleteWhere`` is false), so Spark rewrites it into
    its row-level form (``test_spark_row_changes``): DuckDB's delete files (cumulative ones,
    for files DuckDB had deleted from), not files ended."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), PARTITIONED)
    name = catalog(ours)
    _delete_on_both(
        spark, name, ours, theirs, ["DELETE FROM {table} WHERE grp = 'g2' AND id > 100"]
    )
    assert_twins_agree(ours, theirs, file_ids=False)
    ours.detach()
    changed = duckdb_reads(
        ours,
        f"SELECT count(*) FROM {META}.ducklake_delete_file "
        f"WHERE {ours.snapshot_id()} IN (begin_snapshot, partial_max)",
    )
    assert changed.column(0)[0].as_py() > 0


def _files(lake) -> tuple:
    """Every data and delete file the catalog lists, and every file under the data path."""
    listed = duckdb_reads(
        lake,
        f"SELECT path, end_snapshot FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path, end_snapshot FROM {META}.ducklake_delete_file ORDER BY ALL",
    )
    on_disk = sorted(str(p) for p in Path(lake.data_path).rglob("*") if p.is_file())
    return listed.to_pylist(), on_disk
