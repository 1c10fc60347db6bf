"""Filtered reads of files that need per-row work (deletes, merged files, old layouts).

Such files are read row group by row group in two passes: the filter columns first, then
the other columns only where rows survive, stopping after the last one. Every answer is
compared with DuckDB's; row groups are kept small so lookups land in the first, a middle
and the last row group of a file.
"""

from __future__ import annotations

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.lakes import assert_same_rows
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.read import execute_plan


@pytest.fixture
def lake(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CALL lake.set_option('parquet_row_group_size', '1000')")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR, v DOUBLE)")
    for part in range(2):
        lake.sql(
            "INSERT INTO lake.main.t SELECT i, i % 13, CASE WHEN i % 11 = 0 THEN NULL "
            "ELSE 's' || i END, i / 4 FROM range(?, ?) r(i)",
            [part * 5000, (part + 1) * 5000],
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 3")
    return lake


QUERIES = [
    "SELECT * FROM lake.main.t WHERE k = 17",  # first row group
    "SELECT * FROM lake.main.t WHERE k = 2500",  # a middle one
    "SELECT * FROM lake.main.t WHERE k = 4999",  # the last row of a file
    "SELECT * FROM lake.main.t WHERE k = 3",  # deleted: nothing
    "SELECT s, v FROM lake.main.t WHERE k BETWEEN 900 AND 3100",  # across row groups
    "SELECT * FROM lake.main.t WHERE k >= 0",  # everything that is not deleted
    "SELECT * FROM lake.main.t WHERE k < 0",  # nothing
    "SELECT k, v FROM lake.main.t WHERE s = 's4321'",  # a string filter, no row-group stats
    "SELECT k FROM lake.main.t WHERE s IS NULL AND g = 5",
    "SELECT k, s FROM lake.main.t WHERE g = 3 OR k = 9998",
    "SELECT count(*) AS n FROM lake.main.t WHERE g = 4",  # no output columns
    "SELECT count(*) AS n, sum(v) AS sv FROM lake.main.t WHERE k % 2 = 0",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_filtered_reads_of_files_with_deletes(lake, sql):
    check(lake, sql)


def test_old_layouts_and_merged_files(lake):
    first = lake.snapshot_id()
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN x INTEGER DEFAULT 42")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN g TO grp")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN grp SET DATA TYPE BIGINT")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, i % 5, 'n' || i, i, i % 3 FROM range(10000, 10500) r(i)"
    )
    check(lake, "SELECT k, x FROM lake.main.t WHERE x = 42 AND k % 500 = 1")  # a default
    check(lake, "SELECT k, grp FROM lake.main.t WHERE grp = 4 AND k > 9000")  # renamed, promoted
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE x <> 42")
    lake.sql("INSERT INTO lake.main.t SELECT i, 1, 'm' || i, i, 7 FROM range(20000, 20100) r(i)")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    latest = lake.snapshot_id()
    for snapshot in (first, latest - 2, latest):
        check(lake, "SELECT k, s FROM lake.main.t WHERE k >= 10400", snapshot=snapshot)


def test_no_matching_row_group_decodes_other_columns(lake, monkeypatch):
    """A filter that matches nothing in a row group never decodes the output columns."""
    decoded: list[list[str]] = []
    for name in ("read_row_group", "iter_batches"):
        original = getattr(pq.ParquetFile, name)

        def spy(self, *args, _original=original, **kwargs):
            decoded.append(list(kwargs.get("columns") or []))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(pq.ParquetFile, name, spy)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    plan = table.scan_plan(filter=pc.field("k") == 3, columns=["s", "v"])  # k=3 is deleted
    result = execute_plan(plan)
    assert decoded and all(columns == ["k"] for columns in decoded), decoded
    assert_same_rows(result, lake.reference("SELECT s, v FROM lake.main.t WHERE k = 3"))
    plan = table.scan_plan(filter=pc.field("k") == 2500, columns=["s", "v"])
    result = execute_plan(plan)
    expected = lake.reference("SELECT s, v FROM lake.main.t WHERE k = 2500")
    assert_same_rows(result, expected)
