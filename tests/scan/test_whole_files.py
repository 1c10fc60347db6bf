"""A filter's whole-file match against each file's rows as DuckDB evaluates the filter.

``scan.whole_file_match`` decides, by catalog metadata alone, which files a filter matches
whole (a metadata-only delete ends them) and which in part. Checked here against every
file's physical rows read by DuckDB: a file matched whole has no row the filter does not
match (NULL counts as not matching: such a row would not be deleted), a file in neither
set has no row it matches.
"""

from __future__ import annotations

import pytest

from ducklake_datafusion.scan import (
    And,
    Column,
    Compare,
    In,
    IsNull,
    Lake,
    Literal,
    Not,
    Or,
    StringMatch,
    whole_file_match,
)

SETUP = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE)",
    "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)",
    "INSERT INTO lake.main.t SELECT i, 'g' || (i % 3), i / 2 FROM range(300) r(i)",
    "INSERT INTO lake.main.t SELECT i, NULL, NULL FROM range(300, 310) r(i)",
    "INSERT INTO lake.main.t SELECT i, 'g7', if(i = 400, 'nan'::DOUBLE, i) FROM range(400, 420) r(i)",
    "INSERT INTO lake.main.t SELECT i, 'g8', i FROM range(500, 520) r(i)",
    "DELETE FROM lake.main.t WHERE id % 11 = 0",
]

ID, GRP, V = Column("id"), Column("grp"), Column("v")


def _text(value: str) -> Literal:
    return Literal(value, "varchar")


# (the scan filter, the same condition in DuckDB's SQL)
FILTERS = {
    "partition": (Compare("=", GRP, _text("g1")), "grp = 'g1'"),
    "partitions": (In(GRP, ("g7", "g8"), "varchar", skip_nulls=True), "grp IN ('g7', 'g8')"),
    "range": (
        And((Compare(">=", ID, Literal(500, "int64")), Compare("<", ID, Literal(600, "int64")))),
        "id >= 500 AND id < 600",
    ),
    "negation": (Not(Compare("<", ID, Literal(400, "int64"))), "NOT (id < 400)"),
    "not_in": (Not(In(GRP, ("g0",), "varchar", skip_nulls=True)), "grp NOT IN ('g0')"),
    "or": (
        Or((Compare("=", GRP, _text("g0")), Compare(">", ID, Literal(450, "int64")))),
        "grp = 'g0' OR id > 450",
    ),
    "nulls": (IsNull(GRP), "grp IS NULL"),
    "not_null": (IsNull(V, negated=True), "v IS NOT NULL"),
    # NaN leaves a file's bounds unknown: g7's file is never matched whole by v
    "nan": (Compare(">=", V, Literal(0.0, "float64")), "v >= 0"),
    "string_match": (StringMatch("starts_with", GRP, "g"), "starts_with(grp, 'g')"),
    "null_literal": (Compare("=", GRP, Literal(None, "varchar")), "grp = NULL"),
}


@pytest.mark.parametrize("case", FILTERS)
def test_whole_and_partial_files_agree_with_duckdb_s_rows(make_lake, case):
    lake = make_lake(inline_limit=0)
    for statement in SETUP:
        lake.sql(statement)
    node, sql = FILTERS[case]
    opened = Lake.open(**lake.reader_args())
    try:
        match = whole_file_match(opened.table("main", "t"), node)
    finally:
        opened.close()
    whole = {t.file.url for t in match.whole}
    partial = {t.file.url for t in match.partial}
    assert not whole & partial
    files = lake.reference("SELECT data_file FROM ducklake_list_files('lake', 't')")
    for url in files.column(0).to_pylist():
        counts = lake.reference(
            f"SELECT count(*) FILTER (WHERE {sql}) AS matching, count(*) AS rows "
            f"FROM read_parquet('{url}')"
        ).to_pylist()[0]
        if url in whole:
            assert counts["matching"] == counts["rows"], url
        elif url not in partial:
            assert counts["matching"] == 0, url
    # what the metadata proves of this setup's files (one per partition and insert; v's
    # NaN leaves the g7 file's bounds of v unknown)
    proven = {"partition": 1, "partitions": 2, "range": 1, "negation": 2, "not_in": 4, "or": 2}
    proven |= {"nulls": 1, "not_null": 5, "nan": 4, "string_match": 0, "null_literal": 0}
    assert len(whole) == proven[case]
