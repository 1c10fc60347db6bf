"""What the Rust scan tells DataFusion's optimizer (``rust/src/statistics.rs``) and how it
splits one large file across partitions (``rust/src/partitions.rs``), against DuckDB.

Statistics are read where DataFusion shows them (``EXPLAIN`` with
``datafusion.explain.show_statistics``): the scan's row count is DuckDB's ``count(*)``,
exact, with deletes and inlined rows; a file's null counts are DuckDB's where it has no
deletes and an upper bound where it has; bounds are never exact, and enclose DuckDB's
``min``/``max``. A small table's join is then a ``CollectLeft`` one. A file split into
byte ranges returns the rows of the unsplit scan, the exact path's and DuckDB's, with
deletes in every row group.
"""

from __future__ import annotations

import re

import pytest
from datafusion import SessionConfig, SessionContext
from support.lakes import assert_same_rows, row_grouped_deletes

from ducklake_datafusion import DuckLakeCatalog, register


def _session(lake, config: SessionConfig | None = None, **kwargs) -> SessionContext:
    config = (config or SessionConfig()).set("datafusion.explain.show_statistics", "true")
    ctx = SessionContext(config)
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return ctx


def _plan(ctx, sql: str) -> str:
    return ctx.sql("EXPLAIN " + sql).to_arrow_table().column(1)[-1].as_py()


def _scan_statistics(ctx, sql: str) -> tuple[str, list[str]]:
    """The scan's row count and its per-column statistics, as ``EXPLAIN`` prints them."""
    line = next(x for x in _plan(ctx, sql).splitlines() if "DuckLakeScanExec" in x)
    rows = re.search(r"statistics=\[Rows=(\w+\(\d+\)|Absent)", line).group(1)
    columns = re.findall(r"\(Col\[\d+\]:(.*?)\)(?=,\(Col\[|\]\])", line)
    return rows, columns


@pytest.fixture
def stats_lake(make_lake):
    """``t (k BIGINT, v INTEGER, s VARCHAR)``: one file without deletes (k 0-999, v null
    in every 10th row), one with deletes (k 1000-1999, v null in every 5th row), and
    ``small (k, name)``: 5 rows, one name null."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, v INTEGER, s VARCHAR)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, CASE WHEN i % 10 = 0 THEN NULL ELSE i END, "
        "'s' || i FROM range(1000) r(i)"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, CASE WHEN i % 5 = 0 THEN NULL ELSE i END, "
        "'s' || i FROM range(1000, 2000) r(i)"
    )
    lake.sql("DELETE FROM lake.main.t WHERE k >= 1000 AND k % 4 = 0")
    lake.sql("CREATE TABLE lake.main.small (k BIGINT, name VARCHAR)")
    lake.sql(
        "INSERT INTO lake.main.small SELECT i, CASE WHEN i = 3 THEN NULL ELSE 'n' || i END "
        "FROM range(5) r(i)"
    )
    return lake


def _duckdb(lake, sql: str):
    return lake.reference(sql).to_pylist()[0]


def test_the_row_count_is_exact_with_deletes(stats_lake):
    ctx = _session(stats_lake)
    expected = _duckdb(stats_lake, "SELECT count(*) AS n FROM lake.main.t")["n"]
    assert expected == 1750
    rows, _ = _scan_statistics(ctx, "SELECT k, v FROM lake.main.t")
    assert rows == f"Exact({expected})"
    # DataFusion answers count(*) of the files' statistics: the same number
    assert ctx.sql("SELECT count(*) AS n FROM lake.main.t").to_pylist() == [{"n": expected}]


def test_null_counts_and_bounds_against_duckdb(stats_lake):
    ctx = _session(stats_lake)
    # a file without deletes: its null counts are the catalog's, exact
    clean = _scan_statistics(ctx, "SELECT k, name FROM lake.main.small")[1]
    nulls = _duckdb(stats_lake, "SELECT count(*) - count(name) AS n FROM lake.main.small")
    assert nulls["n"] == 1 and "Null=Exact(1)" in clean[1]
    assert "Null=Exact(0)" in clean[0]
    assert "Min=Inexact(Int64(0))" in clean[0] and "Max=Inexact(Int64(4))" in clean[0]
    # both files: the deleted rows' nulls are still counted, so an upper bound
    both = _scan_statistics(ctx, "SELECT k, v FROM lake.main.t")[1]
    actual = _duckdb(
        stats_lake, "SELECT count(*) - count(v) AS n, min(k) AS lo, max(k) AS hi FROM lake.main.t"
    )
    bound = int(re.search(r"Null=Inexact\((\d+)\)", both[1]).group(1))
    assert bound >= actual["n"] and bound == 100 + 200
    low = int(re.search(r"Min=Inexact\(Int64\((\d+)\)\)", both[0]).group(1))
    high = int(re.search(r"Max=Inexact\(Int64\((\d+)\)\)", both[0]).group(1))
    assert low <= actual["lo"] and high >= actual["hi"]
    # no exact bound anywhere, so min() and max() are computed, and equal DuckDB's
    assert "Min=Exact" not in "".join(both) and "Max=Exact" not in "".join(both)
    got = ctx.sql("SELECT min(k) AS lo, max(k) AS hi FROM lake.main.t").to_pylist()[0]
    assert (got["lo"], got["hi"]) == (actual["lo"], actual["hi"])


def test_inlined_rows_are_counted(make_lake):
    lake = make_lake(inline_limit=100)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(500) r(i)")  # a file
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")  # inlined
    ctx = _session(lake)
    expected = _duckdb(lake, "SELECT count(*) AS n FROM lake.main.t")["n"]
    assert _scan_statistics(ctx, "SELECT k FROM lake.main.t")[0] == f"Exact({expected})"


def test_a_small_table_is_collected_for_the_join(stats_lake):
    ctx = _session(stats_lake)
    sql = (
        "SELECT s.name, count(*) AS n FROM lake.main.t t JOIN lake.main.small s "
        "ON t.k = s.k GROUP BY s.name"
    )
    assert "HashJoinExec: mode=CollectLeft" in _plan(ctx, sql)
    assert_same_rows(ctx.sql(sql).to_arrow_table(), stats_lake.reference(sql))


def _split_sessions(lake):
    """The Rust scan splitting files above 1 byte into 4 partitions, the same unsplit,
    and the exact path."""
    split = SessionConfig().with_target_partitions(4).with_repartition_file_min_size(1)
    unsplit = SessionConfig().with_target_partitions(4).with_repartition_file_scans(False)
    return (
        _session(lake, split),
        _session(lake, unsplit),
        _session(lake, native=False),
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT k, s FROM lake.main.t",
        "SELECT count(*) AS n, max(s) AS top FROM lake.main.t WHERE k % 3 = 0",
        "SELECT k FROM lake.main.t WHERE k BETWEEN 9990 AND 10010",
    ],
)
def test_a_file_split_into_ranges_reads_the_rows_of_the_whole_file(make_lake, sql):
    lake = make_lake(inline_limit=0)
    row_grouped_deletes(lake)  # 2 files of 10 row groups, deletes in many of them
    split, unsplit, exact = _split_sessions(lake)
    assert "byte ranges of large files" in _plan(split, sql)
    assert "byte ranges" not in _plan(unsplit, sql)
    expected = lake.reference(sql)
    for ctx in (split, unsplit, exact):
        assert_same_rows(ctx.sql(sql).to_arrow_table(), expected)
    # statistics of the table stay exact when its files are split
    rows, _ = _scan_statistics(split, "SELECT k FROM lake.main.t")
    assert rows == f"Exact({_duckdb(lake, 'SELECT count(*) AS n FROM lake.main.t')['n']})"


def test_tables_of_many_files_give_rows_but_only_the_filters_statistics(stats_lake, monkeypatch):
    from ducklake_datafusion.provider import _rust_lazy

    monkeypatch.setattr(_rust_lazy, "ALL_STATISTICS_FILES", 1)  # t has 2 files
    ctx = _session(stats_lake)
    rows, columns = _scan_statistics(ctx, "SELECT k, v FROM lake.main.t")
    assert rows == "Exact(1750)"
    assert "Min=" not in "".join(columns) and "Null=" not in "".join(columns)
    sql = "SELECT k, v FROM lake.main.t WHERE v > 10"
    _, filtered = _scan_statistics(ctx, sql)
    assert "Min=" not in filtered[0] and "Min=Inexact(Int32(1))" in filtered[1]
    assert_same_rows(ctx.sql(sql).to_arrow_table(), stats_lake.reference(sql))
