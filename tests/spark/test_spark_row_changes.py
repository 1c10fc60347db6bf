"""Spark's row-level ``DELETE``, ``UPDATE`` and ``MERGE INTO``, against a twin lake.

Spark rewrites each statement into a scan that names each row by ``_ducklake_rowid``, its
data file and position, and a delta write (``SupportsDelta``); the driver commits once. Each
case runs the statement through Spark on one lake and through DuckDB on its twin: the rows
with their ``rowid`` and the change feed at every snapshot, and the catalog rows, agree
(``support.twins``).
"""

from __future__ import annotations

import pytest
from support.lakes import LakeSpec
from support.twins import TWIN_SETUP, assert_twins_agree, twin_lakes

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def _on_both(spark, name, theirs, statements) -> None:
    for statement in statements:
        spark.sql(statement.format(table=f"{name}.main.t")).collect()
        theirs.sql(statement.format(table="lake.main.t"))
        theirs.detach()


def test_metadata_columns_name_each_row_as_duckdb(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    for statement in TWIN_SETUP:
        lake.sql(statement)
    name = catalog(lake)
    ours = spark.sql(
        f"SELECT _ducklake_rowid, _ducklake_file_id, _ducklake_position, id FROM {name}.main.t"
    ).toPandas()
    from support.writes import duckdb_reads

    theirs = duckdb_reads(
        lake, "SELECT rowid AS _ducklake_rowid, id FROM lake.main.t ORDER BY rowid"
    ).to_pandas()
    ours = ours.sort_values("_ducklake_rowid").reset_index(drop=True)
    assert ours[["_ducklake_rowid", "id"]].equals(theirs)
    assert ours["_ducklake_position"].notna().all()


@pytest.mark.parametrize("spec", [LakeSpec("duckdb", "local")])
def test_delete_of_some_rows_matches_duckdb(spark, make_lake, catalog, spec):
    ours, theirs = twin_lakes(make_lake, spec)
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        [
            "DELETE FROM {table} WHERE id % 5 = 1",
            "DELETE FROM {table} WHERE id IN (SELECT id * 3 FROM {table} WHERE grp = 'g2')",
        ],
    )
    assert_twins_agree(ours, theirs)


def test_update_matches_duckdb(spark, make_lake, catalog):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        ["UPDATE {table} SET v = v * 10, grp = 'u' WHERE id % 9 = 2"],
    )
    assert_twins_agree(ours, theirs)
