"""The catalog's first cut (``catalog._file_cut``): a filter's integer bounds in the file
query's SQL, on every catalog database.

A catalog opened afresh plans a filtered scan from the files the catalog query keeps; a
catalog whose memo holds the whole file list prunes that list in Python. Both must give
the same plan (same tasks, same counts), DuckDB's answer, and the cut must really have
left the pruned files in the catalog. Statistics text that is not a plain integer must
keep its file, never fail the query.
"""

from __future__ import annotations

import sqlite3

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.readcheck import ours

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.catalog import metadata
from ducklake_datafusion.catalog._file_cut import DeletedCut
from ducklake_datafusion.provider._pyarrow_filter import filter_of
from ducklake_datafusion.read import execute_plan
from ducklake_datafusion.scan._catalog_cut import catalog_cut
from ducklake_datafusion.scan._pruning import stats_columns

CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres", "mysql")]

k, i, w, s = (pc.field(n) for n in "kiws")
# (pyarrow filter, the same filter in SQL, whether it bounds an integer column)
FILTERS = [
    ((k >= 250) & (k <= 420), "k BETWEEN 250 AND 420", True),
    (k == 705, "k = 705", True),
    (k < 130, "k < 130", True),
    (k <= 99, "k <= 99", True),
    (k > 1100, "k > 1100", True),
    (k >= 1100, "k >= 1100", True),
    (pc.scalar(300) > k, "300 > k", True),
    (k.isin([3, 950]), "k IN (3, 950)", True),
    (i > 900, "i > 900", True),  # INTEGER promoted to BIGINT after some files
    (w == 7, "w = 7", True),  # older files lack the column (default 7) and its statistics
    (w >= 1250, "w >= 1250", True),
    ((k > 200) & (i > 0), "k > 200 AND i > 0", True),
    (k > 10**12, "k > 1000000000000", True),  # nothing matches
    ((k > 1100) | (s == "s5"), "k > 1100 OR s = 's5'", False),
    (s == "s5", "s = 's5'", False),
    (k > 10.5, "k > 10.5", False),
]


def _lake(make_lake, spec):
    """``main.t``: 12 files of 100 rows (k clustered, i descending as INTEGER), deletes in
    some, a column added and a type promoted later, inlined rows and an inlined delete."""
    lake = make_lake(spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, i INTEGER, s VARCHAR)")
    for start in range(0, 1200, 100):
        lake.sql(
            "INSERT INTO lake.main.t SELECT r, 1000 - r, 's' || r "
            f"FROM range({start}, {start + 100}) t(r)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 0 AND k < 300")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")
    lake.sql("ALTER TABLE lake.main.t ALTER i TYPE BIGINT")
    for start in (1200, 1300):
        lake.sql(
            "INSERT INTO lake.main.t SELECT r, 1000 - r, 's' || r, r "
            f"FROM range({start}, {start + 100}) t(r)"
        )
    lake.sql("INSERT INTO lake.main.t VALUES (5, 995, 'inlined', 5), (2000, -1000, 'x', 2000)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 1250")
    return lake


def _plan(lake, expr, *, whole_list_first: bool):
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "t")
    if whole_list_first:
        table.scan_plan()  # memoises the whole file list: the cut is not taken
    return catalog, table, table.scan_plan(filter=expr)


@pytest.mark.parametrize("spec", CATALOGS, ids=lambda s: s.id)
def test_cut_plans_equal_full_plans_and_duckdb(make_lake, spec):
    lake = _lake(make_lake, spec)
    for expr, sql, bounds in FILTERS:
        catalog, table, cut = _plan(lake, expr, whole_list_first=False)
        _, _, full = _plan(lake, expr, whole_list_first=True)
        assert cut.tasks == full.tasks, sql
        assert cut.stats == full.stats, sql
        found = filter_of(expr, table.schema)
        assert (catalog_cut(found, table.columns) is not None) == bounds, sql
        # the catalog query kept exactly the files the plan scans: nothing more was read
        with catalog.backend.session() as session:
            files = metadata.read_table_files(
                session,
                table.entry,
                table.snapshot_id,
                stats_columns=stats_columns(found, table.columns),
                with_partitions=True,
                cut=catalog_cut(found, table.columns),
            )
        if bounds:
            assert files.file_table.num_rows == cut.stats.files_scanned, sql
            assert files.files_cut == cut.stats.files_total - cut.stats.files_scanned, sql
        expected = lake.reference(f"SELECT * FROM lake.main.t WHERE {sql}")
        assert_same_rows(execute_plan(cut).select(expected.column_names), expected)
        query = f"SELECT * FROM lake.main.t WHERE {sql}"
        assert_same_rows(ours(lake, query), expected)
    assert full.stats.files_total == 14


def _set_stat(lake, spec, column: str, value: str, file_index: int) -> None:
    """Overwrite one statistics text of ``k`` in our own test catalog (never a user's)."""
    sql = (
        f"UPDATE ducklake_file_column_stats SET {column} = ? WHERE column_id = 1 "
        "AND data_file_id = (SELECT data_file_id FROM ducklake_data_file "
        f"ORDER BY data_file_id LIMIT 1 OFFSET {file_index})"
    )
    lake.detach()
    if spec.catalog == "duckdb":
        with duckdb.connect(lake.metadata) as con:
            con.execute(sql, [value])
    elif spec.catalog == "sqlite":
        with sqlite3.connect(lake.metadata.removeprefix("sqlite:")) as con:
            con.execute(sql, [value])
    elif spec.catalog == "mysql":
        import pymysql
        from support.mysql_lakes import mysql_keys

        keys = mysql_keys(lake.metadata.removeprefix("mysql:"))
        con = pymysql.connect(
            host=keys["host"], port=int(keys["port"]), user=keys["user"], autocommit=True,
            database=keys["database"],
        )  # fmt: skip
        with con, con.cursor() as cursor:  # MySQL cannot update a table it reads in a subquery
            cursor.execute(
                sql.replace("?", "%s")
                .replace("(SELECT", "(SELECT * FROM (SELECT")
                .replace(f"OFFSET {file_index})", f"OFFSET {file_index}) AS d)"),
                [value],
            )
    else:
        import psycopg

        with psycopg.connect(lake.metadata.removeprefix("postgres:")) as con:
            con.execute(sql.replace("?", "%s"), [value])


@pytest.mark.parametrize("spec", CATALOGS, ids=lambda s: s.id)
def test_statistics_text_that_is_no_integer_keeps_its_file(make_lake, spec):
    lake = _lake(make_lake, spec)
    query = "SELECT * FROM lake.main.t WHERE k >= 1100"
    expected = lake.reference(query)  # the data, before its statistics are damaged
    _set_stat(lake, spec, "max_value", "abc", 0)
    _set_stat(lake, spec, "max_value", "99999999999999999999", 1)
    _set_stat(lake, spec, "min_value", "", 13)
    _, _, plan = _plan(lake, k >= 1100, whole_list_first=False)
    kept = {t.data_file_id for t in plan.tasks if hasattr(t, "data_file_id")}
    with DuckLakeCatalog(**lake.reader_args()).backend.session() as session:
        ids = sorted(r[0] for r in session.rows("SELECT data_file_id FROM ducklake_data_file"))
    assert set(ids[:2]) <= kept  # their maxima say nothing now
    assert_same_rows(execute_plan(plan).select(expected.column_names), expected)
    assert_same_rows(ours(lake, query), expected)


@pytest.mark.parametrize("spec", CATALOGS, ids=lambda s: s.id)
def test_count_of_a_fresh_catalog_reads_only_the_files_with_deletes(make_lake, spec):
    lake = _lake(make_lake, spec)
    expected = lake.reference("SELECT count(*) AS n FROM lake.main.t")
    assert_same_rows(ours(lake, "SELECT count(*) AS n FROM lake.main.t"), expected)
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "t")
    with catalog.backend.session() as session:
        files = metadata.read_table_files(session, table.entry, table.snapshot_id, cut=DeletedCut())
    # three files lost rows to the first delete (k < 300), one to the inlined delete
    assert files.file_table.num_rows == 4


@pytest.mark.parametrize("spec", CATALOGS[:2], ids=lambda s: s.id)
def test_an_in_list_with_null_keeps_the_files_with_nulls(make_lake, spec):
    """``is_in`` with a null in its value set matches null rows (pyarrow's default null
    matching): neither the cut nor the planner may leave out a file for its other values."""
    lake = make_lake(spec)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT CASE WHEN r % 10 = 0 THEN NULL ELSE r END FROM range(100) t(r)"
    )
    lake.sql("INSERT INTO lake.main.t SELECT r FROM range(1000, 1100) t(r)")
    expr = k.isin(pa.array([1000, None], pa.int64()))
    everything = lake.reference("SELECT * FROM lake.main.t")
    expected = everything.filter(expr)
    assert expected.num_rows == 11  # ten nulls and 1000
    for whole_list_first in (False, True):
        _, _, plan = _plan(lake, expr, whole_list_first=whole_list_first)
        assert_same_rows(execute_plan(plan).select(expected.column_names), expected)
