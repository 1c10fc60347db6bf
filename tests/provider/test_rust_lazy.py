"""The Rust scan's files chosen by the query's filters (``provider/_rust_lazy``,
``rust/src/lazy.rs``).

``table()`` hands the Rust provider only the table's schema; ``scan()`` sends the pushed
filters back to the Python planner as predicates and scans the files they cannot exclude.
Checked against DuckDB: predicates of every kind and type prune without changing an
answer, only the kept files are handed over, files the Rust scan cannot map are read by
the exact reader within the same scan, ``count(*)`` comes from the catalog, and errors
keep their class.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import SessionContext
from support.lakes import assert_same_rows
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog, register, scan
from ducklake_datafusion.provider import _rust, _rust_build, _rust_lazy
from ducklake_datafusion.read import _footers
from ducklake_datafusion.scan import to_expression


@pytest.fixture
def typed_lake(make_lake):
    """Ten files with disjoint key ranges and columns of many types, NULLs and NaN."""
    return _typed(make_lake(inline_limit=0))


@pytest.fixture(scope="module")
def read_only_typed_lake(tmp_path_factory, request):
    """``typed_lake`` built once per worker, for the tests that only read it (each of 25
    queries built it anew: ~2 s a query)."""
    from support.lakes import LakeSpec
    from support.lakes import make_lake as build

    lake = build(LakeSpec("duckdb", "local"), tmp_path_factory.mktemp("typed"), inline_limit=0)
    request.addfinalizer(lake.close)
    return _typed(lake)


def _typed(lake):
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, i INTEGER, s VARCHAR, d DATE, "
        "ts TIMESTAMP, x DOUBLE, b BOOLEAN, m DECIMAL(10,2))"
    )
    for f in range(10):
        lake.sql(
            f"""INSERT INTO lake.main.t SELECT
                r + {f * 100}, (r % 7)::INTEGER,
                CASE WHEN r % 11 = 0 THEN NULL ELSE 's' || lpad(({f * 100} + r)::VARCHAR, 4, '0') END,
                DATE '2024-01-01' + INTERVAL ({f * 10} + r % 10) DAY,
                TIMESTAMP '2024-01-01 00:00:00' + INTERVAL ({f * 100} + r) MINUTE,
                CASE WHEN r = 5 AND {f} = 3 THEN 'NaN'::DOUBLE ELSE (r + {f * 100}) / 4.0 END,
                r % 2 = 0, ((r + {f * 100}) / 8.0)::DECIMAL(10,2)
            FROM range(100) t(r)"""
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 13 = 0")
    return lake


def _session(lake, **kwargs) -> SessionContext:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return ctx


PREDICATE_QUERIES = [
    "SELECT * FROM lake.main.t WHERE k = 250",
    "SELECT k FROM lake.main.t WHERE k BETWEEN 290 AND 310",
    "SELECT k FROM lake.main.t WHERE 310 > k AND k >= 295",
    "SELECT k FROM lake.main.t WHERE k <> 5 AND k < 120",
    "SELECT k, s FROM lake.main.t WHERE k IN (3, 404, 999, 5000)",
    "SELECT k, s FROM lake.main.t WHERE k IN (3, NULL, 999)",
    "SELECT count(*) AS n FROM lake.main.t WHERE s IN ('s0405', NULL)",
    "SELECT k FROM lake.main.t WHERE s = 's0405'",
    "SELECT k FROM lake.main.t WHERE s > 's0890'",
    "SELECT count(*) AS n FROM lake.main.t WHERE s IS NULL",
    "SELECT count(*) AS n FROM lake.main.t WHERE s IS NOT NULL AND k < 200",
    "SELECT k FROM lake.main.t WHERE d = DATE '2024-02-05'",
    "SELECT k FROM lake.main.t WHERE d >= '2024-03-05'",
    "SELECT k FROM lake.main.t WHERE ts < TIMESTAMP '2024-01-01 01:30:00'",
    "SELECT k FROM lake.main.t WHERE x > 250",
    "SELECT k FROM lake.main.t WHERE x > 1000",  # NaN sorts above every number
    "SELECT count(*) AS n FROM lake.main.t WHERE x = 'NaN'::DOUBLE",
    "SELECT k FROM lake.main.t WHERE m <= 3.5",
    "SELECT k FROM lake.main.t WHERE i = 3 AND k > 900",
    "SELECT k FROM lake.main.t WHERE k < 50 OR k > 950",
    "SELECT k FROM lake.main.t WHERE k + 1 = 500",
    "SELECT k FROM lake.main.t WHERE CAST(k AS INTEGER) = 500",
    "SELECT k FROM lake.main.t WHERE i = 4000000000",
    "SELECT k FROM lake.main.t WHERE k = NULL",
    "SELECT count(*) AS n, max(k) AS s FROM lake.main.t",
]


@pytest.mark.parametrize("sql", PREDICATE_QUERIES)
def test_predicates_of_every_kind_prune_without_changing_an_answer(read_only_typed_lake, sql):
    check(read_only_typed_lake, sql)


def test_only_the_kept_files_are_handed_over(typed_lake, monkeypatch):
    handed = []
    original = _rust_build.build_provider

    def recording(rust, table, plan, files, **kwargs):
        handed.append(plan.stats)
        return original(rust, table, plan, files, **kwargs)

    monkeypatch.setattr(_rust_build, "build_provider", recording)
    ctx = _session(typed_lake)
    sql = "SELECT k, s FROM lake.main.t WHERE k BETWEEN 290 AND 310"
    assert_same_rows(ctx.sql(sql).to_arrow_table(), typed_lake.reference(sql))
    assert len(handed) == 1
    assert handed[0].files_total == 10 and handed[0].files_scanned == 2
    # the same query again: resolved once per snapshot and predicates
    ctx.sql(sql).to_arrow_table()
    assert len(handed) == 1
    # a new snapshot: the new file only adds itself to what is scanned
    typed_lake.sql("INSERT INTO lake.main.t (k) SELECT 5000 + r FROM range(10) t(r)")
    sql = "SELECT count(*) AS n FROM lake.main.t WHERE k >= 5000"
    assert_same_rows(_session(typed_lake).sql(sql).to_arrow_table(), typed_lake.reference(sql))
    assert handed[-1].files_total == 11 and handed[-1].files_scanned == 1


def test_files_the_rust_scan_cannot_map_are_read_exactly_in_the_same_scan(typed_lake, monkeypatch):
    """A kept file whose layout the Rust scan would not read exactly (here: every second
    file, as the layout check says so) goes to the exact reader, with the filter; the
    answer is DuckDB's."""
    refused = set()
    original = _rust_build.checked_layout

    def some_refused(task, *args, **kwargs):
        if task.data_file_id % 2 == 0:
            refused.add(task.file.url)
            return None
        return original(task, *args, **kwargs)

    monkeypatch.setattr(_rust_build, "checked_layout", some_refused)
    read = []
    exact = _rust_lazy._read_exactly

    def recording(plan, tasks):
        read.extend(t.file.url for t in tasks)
        return exact(plan, tasks)

    monkeypatch.setattr(_rust_lazy, "_read_exactly", recording)
    for sql in (
        "SELECT * FROM lake.main.t",
        "SELECT k, s, x FROM lake.main.t WHERE k BETWEEN 150 AND 450",
        "SELECT i, count(*) AS n, sum(x) AS sx FROM lake.main.t GROUP BY i",
        "SELECT k FROM lake.main.t WHERE x > 250",
    ):
        assert_same_rows(_session(typed_lake).sql(sql).to_arrow_table(), typed_lake.reference(sql))
    assert refused and set(read) == refused
    explain = _session(typed_lake).sql("EXPLAIN SELECT * FROM lake.main.t").to_pylist()
    assert f"{len(refused)} read by the exact reader" in "\n".join(r["plan"] for r in explain)


def test_count_star_comes_from_the_catalog_without_opening_a_file(typed_lake, monkeypatch):
    opened = []
    original = _footers.parsed_fragment

    def counting(ref, *args, **kwargs):
        opened.append(ref.url)
        return original(ref, *args, **kwargs)

    monkeypatch.setattr("ducklake_datafusion.read._checked.parsed_fragment", counting)
    monkeypatch.setattr("ducklake_datafusion.read._reader.parsed_fragment", counting)
    provider = _rust.rust_provider(DuckLakeCatalog(**typed_lake.reader_args()).table("main", "t"))
    assert type(provider).__name__ == "LazyProvider"
    from datafusion.catalog import Table

    ctx = SessionContext()
    ctx.register_table("t", Table(provider, ctx))
    sql = "SELECT count(*) AS n FROM t"
    expected = typed_lake.reference("SELECT count(*) AS n FROM lake.main.t")
    assert_same_rows(ctx.sql(sql).to_arrow_table(), expected)
    assert provider.last_scan()["from_catalog"]
    assert opened == []


def test_a_missing_kept_file_fails_with_our_error_naming_it(typed_lake):
    ctx = _session(typed_lake)
    files = DuckLakeCatalog(**typed_lake.reader_args()).table("main", "t").files()
    paths = files.column("data_file").to_pylist()
    victim = next(p for p in paths if os.path.exists(p))
    os.remove(victim)
    with pytest.raises(Exception) as raised:
        ctx.sql("SELECT * FROM lake.main.t").to_arrow_table()
    assert "DataFileMissingError" in str(raised.value)
    assert os.path.basename(victim) in str(raised.value)


def test_predicates_translate_to_pyarrow_filters():
    Predicate = _rust.extension().Predicate
    one = pa.array([5], pa.int64())
    not_utf8 = Predicate("in", "s", [pa.array(["a"]), pa.array([b"\xff"], pa.binary())])
    got = _rust_lazy.predicate_filter(
        [
            Predicate("cmp", "k", [one], op=">="),
            Predicate("between", "k", [one, pa.array([9], pa.int64())]),
            Predicate("in", "s", [pa.array(["a"]), pa.array(["b"])]),
            Predicate("null", "x", []),
            Predicate("not_null", "y", []),
            not_utf8,  # not UTF-8: left out
        ]
    )
    table = pa.table(
        {
            "k": pa.array([4, 5, 9, 10], pa.int64()),
            "s": ["a", "b", "a", "c"],
            "x": [None, None, None, 1.0],
            "y": [1, 1, None, 1],
        }
    )
    assert table.filter(to_expression(got)).column("k").to_pylist() == [5]
    assert _rust_lazy.predicate_filter([not_utf8]) is None
    with pytest.raises(ValueError, match="unknown comparison"):  # unknown: never made
        Predicate("cmp", "k", [one], op="??")
    assert isinstance(got, scan.And)


def test_plain_location_accepts_only_what_object_store_paths_spell_as_is():
    from ducklake_datafusion.provider._rust_stores import plain_location

    assert plain_location("file:///tmp/lake/main/t/y=2024/m=1/ducklake-2.parquet")
    assert plain_location("s3://bucket/lake/main/t/ducklake-1.parquet")
    assert not plain_location("file:///tmp/my lake/main/t/ducklake-1.parquet")
    assert not plain_location("s3://bucket/lake/50%.parquet")
    assert not plain_location("file:///tmp/lake/é.parquet")


@pytest.mark.parametrize(
    "ids",
    [
        [1, 2, 5, 9, 12],  # the file ids themselves
        [2, 9, 12],  # sorted, some files without a row
        [0, 2, 3, 9, 40],  # sorted, rows of files no longer live
        [9, 1, 12, 2],  # unsorted: hashed
    ],
)
def test_statistics_rows_align_to_the_files_as_by_hashing(ids):
    from ducklake_datafusion.catalog._models import TableFiles
    from ducklake_datafusion.scan._pruning import FilePruner

    files = TableFiles(
        file_table=pa.table(
            {"data_file_id": pa.array([1, 2, 5, 9, 12], pa.int64()), "record_count": [10] * 5}
        )
    )
    pruner = FilePruner(None, [], files)
    ids = pa.array(ids, pa.int64())
    values = pa.array([f"row of {i}" for i in ids.to_pylist()])
    expected = values.take(pc.index_in(pruner.file_ids, value_set=ids))
    got = pruner._align(ids, values)
    assert pa.chunked_array([got]).to_pylist() == pa.chunked_array([expected]).to_pylist()
