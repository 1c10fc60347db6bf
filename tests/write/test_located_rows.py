"""The rows a DELETE, UPDATE or MERGE plans over, located by the Rust scan and exactly.

A row change's target (``provider/_change_target.py``) gives each row with its ``rowid``,
data file id and physical position. Where the Rust scan reads the table, the files whose
row ids are ``row_id_start`` plus the position are located there
(``rust/src/locations.rs``) and the rest (files with embedded row ids, merged files with
per-row snapshots, inlined rows) by the exact reader. Both must give the same rows at the
same locations, and the same rows and row ids as DuckDB, on every layout a lake holds:
scattered deletes (decoded whole, dropped after decoding), deletes skipped by a row
selection across row groups, cumulative delete files, an updated file, inlined rows and
inlined deletes, older layouts mapped by field id, merged files; and with the query's
filters and projections in any order.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.lakes import (
    LakeSpec,
    assert_same_rows,
    deleting_history,
    evolve_table,
    merged_inserts,
    row_grouped_deletes,
)
from support.writes import META, duckdb_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.provider._change_target import LOCATION_COLUMNS, ChangeTarget
from ducklake_datafusion.provider._row_statements import without_views


def updated_files(lake) -> None:
    """``lake.main.t (k, s)``: a file of DuckDB's UPDATE (each row's original row id in
    it, some of its rows deleted since) beside a file with scattered deletes."""
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(2000) r(i)")
    lake.sql("UPDATE lake.main.t SET s = 'u' || k WHERE k % 4 = 0")
    lake.sql("DELETE FROM lake.main.t WHERE k % 8 = 0 OR k % 5 = 1")


LAYOUTS = {
    "deleting_history": (deleting_history, 3),
    "updated": (updated_files, 0),
    "evolved_with_deletes": (lambda lake: evolve_table(lake, deletes=True), 0),
    "row_groups": (row_grouped_deletes, 0),
    "merged": (merged_inserts, 0),
}


def _located(lake):
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    target = ChangeTarget(table)
    ctx = SessionContext()
    native = target.native_table(ctx)
    assert native is not None, "the Rust scan reads every column of these tables"
    ctx.register_table("t", native)
    return target, ctx


@pytest.mark.parametrize("spec", [LakeSpec("duckdb", "local"), LakeSpec("sqlite", "s3")], ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_rust_locations_are_the_exact_paths_and_duckdbs(make_lake, spec, layout):
    build, inline_limit = LAYOUTS[layout]
    lake = make_lake(spec, inline_limit=inline_limit)
    build(lake)
    target, ctx = _located(lake)
    plan = ctx.sql("EXPLAIN SELECT * FROM t").to_arrow_table().column(1)[-1].as_py()
    assert "DuckLakeScanExec" in plan  # the Rust scan (updated and merged files: exactly)
    assert ("read by the exact reader" in plan) == (layout in ("updated", "merged")), plan
    native = without_views(ctx.sql("SELECT * FROM t").to_arrow_table()).sort_by("rowid")
    exact = target.scanner().to_table().sort_by("rowid")
    assert native.schema.names == exact.schema.names == target.schema.names
    assert native.cast(exact.schema).equals(exact)
    # the same rows and row ids as DuckDB's
    columns = [n for n in native.schema.names if n not in LOCATION_COLUMNS]
    theirs = duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid")
    assert_same_rows(native.select(["rowid", *columns]), theirs)
    # each row's file and position are DuckDB's (its ``filename`` and ``file_row_number``;
    # an inlined row has neither file id nor position)
    paths = duckdb_reads(lake, f"SELECT data_file_id, path FROM {META}.ducklake_data_file")
    names = dict(zip(paths.column("data_file_id").to_pylist(), paths.column("path").to_pylist()))
    where = duckdb_reads(lake, "SELECT rowid, filename, file_row_number FROM lake.main.t")
    theirs = {
        r["rowid"]: (PurePosixPath(r["filename"]).name, r["file_row_number"])
        for r in where.to_pylist()
        if not r["filename"].startswith("ducklake_inlined_data")
    }
    ours = {
        r["rowid"]: (PurePosixPath(names[r["__ducklake_file_id"]]).name, r["__ducklake_position"])
        for r in native.to_pylist()
        if r["__ducklake_file_id"] is not None
    }
    assert ours == theirs and ours
    inlined = native.filter(pa.compute.is_null(native.column("__ducklake_file_id")))
    assert inlined.column("__ducklake_position").null_count == inlined.num_rows
    assert inlined.num_rows == where.num_rows - len(theirs)


def test_filters_and_projections_in_any_order(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=3)
    deleting_history(lake)
    target, ctx = _located(lake)
    exact = target.scanner().to_table()
    queries = {
        # a location column first, a table column between, a filter on both kinds
        "SELECT __ducklake_position, k, rowid FROM t WHERE k % 3 = 1 AND rowid > 100": (
            ["__ducklake_position", "k", "rowid"],
            lambda r: r["k"] % 3 == 1 and r["rowid"] > 100,
        ),
        "SELECT rowid FROM t WHERE __ducklake_position < 10": (
            ["rowid"],
            lambda r: r["__ducklake_position"] is not None and r["__ducklake_position"] < 10,
        ),
        "SELECT s, __ducklake_file_id FROM t WHERE k BETWEEN 990 AND 1010": (
            ["s", "__ducklake_file_id"],
            lambda r: 990 <= r["k"] <= 1010,
        ),
        "SELECT k FROM t WHERE rowid IN (SELECT rowid FROM t WHERE k > 2990)": (
            ["k"],
            lambda r: r["k"] > 2990,
        ),
    }
    for sql, (names, keep) in queries.items():
        got = without_views(ctx.sql(sql).to_arrow_table())
        assert got.schema.names == names, sql
        wanted = [{n: r[n] for n in names} for r in exact.to_pylist() if keep(r)]
        key = lambda r: tuple((v is None, v) for v in r.values())
        assert sorted(got.to_pylist(), key=key) == sorted(wanted, key=key), sql
    count = ctx.sql("SELECT count(*) AS n FROM t WHERE rowid >= 0").to_arrow_table()
    assert count.column("n")[0].as_py() == exact.num_rows
