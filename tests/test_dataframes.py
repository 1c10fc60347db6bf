"""pandas and Polars output, eager and lazy, compared with DuckDB's answers."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest
from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, errors
from ducklake_datafusion.provider._dataframes import polars_predicate_to_arrow

pl = pytest.importorskip("polars")


@pytest.fixture
def lake(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, v DOUBLE, d DATE)")
    for part in range(4):  # four files with disjoint k: statistics can prune
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 's' || (i % 7), i / 4, DATE '2024-01-01' + "
            f"(i % 300)::INT FROM range({part * 1000}, {(part + 1) * 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 13 = 0")
    lake.sql("INSERT INTO lake.main.t VALUES (9000, NULL, 'nan'::DOUBLE, NULL)")  # inlined
    return lake


def _table(lake):
    return DuckLakeCatalog(**lake.reader_args()).table("main", "t")


def test_eager(lake):
    expected = lake.reference("SELECT k, s FROM lake.main.t WHERE k > 2500")
    table = _table(lake)
    frame = table.to_polars(columns=["k", "s"], filter=pc.field("k") > 2500)
    assert_same_rows(frame.to_arrow(), expected)
    pandas = table.to_pandas(columns=["k", "s"], filter=pc.field("k") > 2500)
    assert sorted(pandas["k"].tolist()) == sorted(expected.column("k").to_pylist())


LAZY = [
    # (Polars query on lf, DuckDB SQL)
    (lambda lf: lf.filter(pl.col("k") >= 2500).select("k", "s"),
     "SELECT k, s FROM lake.main.t WHERE k >= 2500"),
    (lambda lf: lf.filter((pl.col("k") < 1200) & (pl.col("s") == "s3")).select("k"),
     "SELECT k FROM lake.main.t WHERE k < 1200 AND s = 's3'"),
    (lambda lf: lf.filter(pl.col("k").is_between(100, 200) | pl.col("s").is_null()),
     "SELECT * FROM lake.main.t WHERE k BETWEEN 100 AND 200 OR s IS NULL"),
    (lambda lf: lf.filter(~(pl.col("k") > 10)).select("k", "d"),
     "SELECT k, d FROM lake.main.t WHERE NOT (k > 10)"),
    (lambda lf: lf.filter(pl.col("v") > 900).select("k", "v"),  # NaN is above all (Polars)
     "SELECT k, v FROM lake.main.t WHERE v > 900"),
    (lambda lf: lf.filter(pl.col("s").str.ends_with("5") & (pl.col("k") > 3900)),
     "SELECT * FROM lake.main.t WHERE s LIKE '%5' AND k > 3900"),
    (lambda lf: lf.group_by("s").agg(pl.len().alias("n")),
     "SELECT s, count(*) AS n FROM lake.main.t GROUP BY s"),
    (lambda lf: lf.select(pl.len().alias("n")), "SELECT count(*) AS n FROM lake.main.t"),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(LAZY)))
def test_lazy_matches_duckdb(lake, case):
    query, sql = LAZY[case]
    expected = lake.reference(sql)
    actual = query(_table(lake).scan_polars()).collect().to_arrow()
    assert_same_rows(actual, expected)


def test_lazy_pushdown_reaches_the_planner(lake, monkeypatch):
    table = _table(lake)
    plans = []
    original = type(table).scan_plan

    def spy(self, filter=None, columns=None):
        plan = original(self, filter=filter, columns=columns)
        plans.append(plan)
        return plan

    monkeypatch.setattr(type(table), "scan_plan", spy)
    frame = table.scan_polars().filter(pl.col("k") >= 3100).select("s").collect()
    assert frame.height > 0
    (plan,) = plans
    assert plan.stats.files_skipped_by_stats == 3  # three of four files pruned
    assert set(plan.projection) == {"s", "k"}  # the predicate's column is read too
    assert table.scan_polars().head(3).collect().height == 3


def test_predicate_translation_is_never_narrower(lake):
    schema = _table(lake).schema
    untranslatable = pl.col("s").str.contains("x")
    assert polars_predicate_to_arrow(untranslatable, schema) is None
    partial = polars_predicate_to_arrow((pl.col("k") > 5) & untranslatable, schema)
    assert str(partial) == str(pc.field("k") > 5)
    assert polars_predicate_to_arrow(~((pl.col("k") > 5) & untranslatable), schema) is None
    assert polars_predicate_to_arrow(pl.col("d") > "2024-01-01", schema) is None


def test_missing_polars_names_the_extra(lake, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_polars(name, *args, **kwargs):
        if name == "polars" or name.startswith("polars."):
            raise ImportError("no polars here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_polars)
    with pytest.raises(errors.MissingDependencyError, match=r"ducklake-datafusion\[polars\]"):
        _table(lake).to_polars()
