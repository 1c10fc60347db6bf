"""Typed metadata fetches (SQLite printf/CSV, PostgreSQL COPY, MySQL GROUP_CONCAT) equal
the row-by-row path.

Statistics of string columns carry every value the CSV text must keep apart: NULL, the
empty string, the text 'NULL', quotes of both kinds, commas and line breaks. The bulk
result is compared with the row path of the same session, and pruning with those bounds
is checked against DuckDB.
"""

from __future__ import annotations

import pytest
from support.lakes import LakeSpec
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.catalog import _sql

CATALOGS = [LakeSpec(kind, "local") for kind in ("duckdb", "sqlite", "postgres", "mysql")]
_ALL_STATS_SQL = (
    "SELECT data_file_id, column_id, value_count, null_count, min_value, max_value, "
    "contains_nan FROM ducklake_file_column_stats WHERE table_id = ?"
)
AWKWARD = ["", "NULL", "it's", 'say "hi"', "a,b", "line\nbreak", "\\N", "''", "x" * 300]


@pytest.fixture(params=CATALOGS, ids=lambda spec: spec.catalog)
def lake(request, make_lake):
    lake = make_lake(request.param, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER, s VARCHAR)")
    for i, text in enumerate(AWKWARD):  # one file per value: min = max = text
        lake.sql("INSERT INTO lake.main.t VALUES (?, ?)", [i, text])
    lake.sql("INSERT INTO lake.main.t VALUES (100, NULL)")  # a file with NULL bounds
    lake.sql("INSERT INTO lake.main.t SELECT i, 'r' || i FROM range(200, 210) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 2 OR k = 205")  # a file dropped, a delete file
    return lake


def test_bulk_results_equal_the_row_path(lake, monkeypatch):
    from ducklake_datafusion.catalog import _mysql, _postgres, _sqlite

    def no_fallback(*_args):
        raise AssertionError("the typed fetch fell back to the row path")

    for module in (_sqlite, _postgres, _mysql):  # these must take the bulk path
        monkeypatch.setattr(module, "rows_to_arrow", no_fallback)
    catalog = DuckLakeCatalog(**lake.reader_args())
    backend = catalog.backend
    table = catalog.table("main", "t")
    with backend.session() as session:
        tid, snap = table.entry.table_id, table.snapshot_id
        queries = [
            (_sql.DATA_FILES_SQL, [tid, snap, snap], _sql.DATA_FILES_SCHEMA),
            (_sql.DELETE_FILES_SQL, [tid, snap, snap], _sql.DELETE_FILES_SCHEMA),
            (_ALL_STATS_SQL, [tid], _sql.STATS_SCHEMA),
        ]
        for sql, params, schema in queries:
            bulk = session.arrow(sql, params, schema)
            assert bulk.schema.equals(schema)
            expected = [
                tuple(None if v is None else _typed(v, f.type) for v, f in zip(row, schema))
                for row in session.rows(sql, params)
            ]
            actual = [tuple(r.values()) for r in bulk.to_pylist()]
            assert sorted(actual, key=repr) == sorted(expected, key=repr)
            assert bulk.num_rows > 0
    with backend.session() as session:
        stats = session.arrow(queries[2][0], queries[2][1], queries[2][2])
        strings = set(stats.column("min_value").to_pylist())
    assert {"", "NULL", "it's", 'say "hi"', "a,b", "line\nbreak", None} <= strings


def _typed(value, arrow_type):
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return value in (True, 1, "1", "t", "true")
    if pa.types.is_integer(arrow_type):
        return int(value)
    return str(value)


@pytest.mark.parametrize(
    "predicate",
    ["s = ''", "s = 'NULL'", "s = 'it''s'", "s > 'a'", "s < 'b'", "s IS NULL", "s = 'line\nbreak'"],
)
def test_pruning_on_awkward_string_bounds(lake, predicate):
    check(lake, f"SELECT k, s FROM lake.main.t WHERE {predicate}")
