"""String and binary columns of the Rust scan as view types (``rust/src/views.rs``).

A table the Rust scan reads has ``Utf8View`` / ``BinaryView`` columns where the lake has
``VARCHAR`` / ``BLOB``, as DataFusion's own ``register_parquet`` gives them; the exact path
(``native=False``) keeps ``Utf8`` / ``Binary``. Every answer still equals DuckDB's: files,
inlined rows, deletes, older layouts mapped by field id, defaults of columns added since,
pruning by string bounds, inserts.
"""

from __future__ import annotations

import pyarrow as pa
from datafusion import SessionContext
from support.lakes import assert_same_rows
from support.readcheck import check, ours

from ducklake_datafusion import DuckLakeCatalog, register


def _ctx(lake, **kwargs) -> SessionContext:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return ctx


def _types(lake, table="t", **kwargs) -> dict[str, pa.DataType]:
    schema = _ctx(lake, **kwargs).sql(f"SELECT * FROM lake.main.{table}").schema()
    return {f.name: f.type for f in schema}


def _explain(lake, sql: str) -> str:
    return "\n".join(r["plan"] for r in _ctx(lake).sql("EXPLAIN " + sql).to_pylist())


def _strings_lake(make_lake, inline_limit=0):
    lake = make_lake(inline_limit=inline_limit)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, b BLOB, d DECIMAL(9,2))")
    for start in range(0, 3000, 1000):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, CASE WHEN i % 11 = 0 THEN NULL "
            f"WHEN i % 3 = 0 THEN 'a somewhat longer string than twelve bytes ' || i "
            f"ELSE 's' || i END, CASE WHEN i % 7 = 0 THEN NULL ELSE ('\\xFF\\x00' || i)::BLOB "
            f"END, i / 4 FROM range({start}, {start + 1000}) r(i)"
        )
    return lake


def test_strings_and_blobs_are_views_natively_and_plain_on_the_exact_path(make_lake):
    lake = _strings_lake(make_lake)
    assert "DuckLakeScanExec" in _explain(lake, "SELECT * FROM lake.main.t")
    native = _types(lake)
    assert native["s"] == pa.string_view() and native["b"] == pa.binary_view()
    assert native["k"] == pa.int64() and native["d"] == pa.decimal128(9, 2)
    exact = _types(lake, native=False)
    assert exact["s"] == pa.string() and exact["b"] == pa.binary()


def test_a_table_of_nested_strings_keeps_its_types(make_lake):
    """Nested types take the exact reader; a list of strings stays one (as DataFusion's
    Parquet table keeps it) and joins a native table's view-typed strings."""
    lake = _strings_lake(make_lake)
    lake.sql("CREATE TABLE lake.main.n (s VARCHAR, tags VARCHAR[])")
    lake.sql("INSERT INTO lake.main.n SELECT 's' || i, ['x' || i, NULL] FROM range(0, 50) r(i)")
    types = _types(lake, "n")
    assert types["tags"] == pa.list_(pa.string())
    check(
        lake,
        "SELECT t.k, t.s, n.tags FROM lake.main.t t JOIN lake.main.n n ON t.s = n.s WHERE t.k < 40",
    )


STRING_QUERIES = [
    "SELECT * FROM lake.main.t",
    "SELECT k, s FROM lake.main.t WHERE s = 's1000' OR s LIKE 'a somewhat%99'",
    "SELECT k FROM lake.main.t WHERE s IN ('s1', 's2', 's2998') OR (b IS NULL AND k < 100)",
    "SELECT k, s FROM lake.main.t WHERE s > 's2990' AND s < 's2999'",
    "SELECT length(s) AS n, count(*) AS c FROM lake.main.t GROUP BY length(s)",
    "SELECT min(s) AS lo, max(s) AS hi, count(b) AS nb FROM lake.main.t",
    "SELECT upper(s) AS u, b FROM lake.main.t WHERE k % 97 = 0",
]


def test_strings_of_files_inlined_rows_and_deletes_match_duckdb(make_lake):
    lake = _strings_lake(make_lake, inline_limit=100)
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined', '\\x01'::BLOB, 1.5)")
    lake.sql("INSERT INTO lake.main.t VALUES (5001, NULL, NULL, NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 13 = 5 OR s = 's1001'")
    assert "DuckLakeScanExec" in _explain(lake, "SELECT * FROM lake.main.t")
    for sql in STRING_QUERIES:
        check(lake, sql)


def test_pruning_by_string_bounds_keeps_every_matching_file(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    for prefix in ("a", "m", "z"):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, '{prefix}' || lpad(i::VARCHAR, 5, '0') "
            "FROM range(500) r(i)"
        )
    plan = _explain(lake, "SELECT k FROM lake.main.t WHERE s = 'm00042'")
    assert "files 1 of 3" in plan, plan
    check(lake, "SELECT k, s FROM lake.main.t WHERE s = 'm00042'")
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE s >= 'm' AND s < 'n'")


def test_older_layouts_by_field_id_read_strings_exactly(make_lake):
    """A renamed string column, two string columns that swapped names, and a string column
    added since (with a default) in files of older layouts."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, a VARCHAR, b VARCHAR, raw BLOB)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'a' || i, 'b' || i, ('\\x00' || i)::BLOB "
        "FROM range(300) r(i)"
    )
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN a TO tmp")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN b TO a")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN tmp TO b")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN raw TO bytes")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN note VARCHAR DEFAULT 'none yet'")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'A' || i, 'B' || i, ('\\x01' || i)::BLOB, 'n' || i "
        "FROM range(300, 600) r(i)"
    )
    assert "DuckLakeScanExec" in _explain(lake, "SELECT * FROM lake.main.t")
    assert _types(lake)["note"] == pa.string_view()
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT k, a, note FROM lake.main.t WHERE a = 'b7' OR b = 'B450'")
    check(lake, "SELECT note, count(*) AS n FROM lake.main.t GROUP BY note")
    check(lake, "SELECT k, bytes FROM lake.main.t WHERE bytes IS NOT NULL AND k % 50 = 1")


def test_inserted_strings_from_a_native_table_read_back(make_lake):
    lake = _strings_lake(make_lake)
    lake.sql("CREATE TABLE lake.main.copy (k BIGINT, s VARCHAR, b BLOB, d DECIMAL(9,2))")
    ctx = _ctx(lake)
    ctx.sql("INSERT INTO lake.main.copy SELECT * FROM lake.main.t WHERE k < 500").collect()
    ctx.sql("INSERT INTO lake.main.copy VALUES (9000, 'typed here', NULL, 0.5)").collect()
    sql = "SELECT * FROM lake.main.copy"
    assert_same_rows(ours(lake, sql), lake.reference(sql))
    check(
        lake,
        "SELECT c.k, c.s = t.s AS same FROM lake.main.copy c LEFT JOIN lake.main.t t USING (k)",
    )


def test_a_table_created_from_a_native_table_has_the_lake_types(make_lake):
    """``CREATE TABLE ... AS`` of view-typed columns writes VARCHAR and BLOB columns."""
    lake = _strings_lake(make_lake)
    _ctx(lake).sql("CREATE TABLE lake.main.c2 AS SELECT * FROM lake.main.t WHERE k < 100").collect()
    types = lake.reference(
        "SELECT column_name AS c, data_type AS t FROM information_schema.columns "
        "WHERE table_catalog = 'lake' AND table_name = 'c2' ORDER BY ordinal_position"
    ).to_pylist()
    assert [(r["c"], r["t"]) for r in types][:3] == [
        ("k", "BIGINT"),
        ("s", "VARCHAR"),
        ("b", "BLOB"),
    ]
    check(lake, "SELECT * FROM lake.main.c2")
