"""Core read path: every answer compared with DuckDB's own reader of the same lake."""

from __future__ import annotations

import pytest
from support.lakes import evolve_structs
from support.readcheck import check, ours


@pytest.fixture
def lake(make_lake, lake_spec):
    return make_lake(lake_spec, inline_limit=10)


def test_multi_file_deletes_updates(lake):
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, g INTEGER, v DOUBLE, s VARCHAR)")
    for part in range(4):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i % 7, i * 0.5, 'row ' || i "
            f"FROM range({part * 1000}, {(part + 1) * 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 4")  # second delete on the same files
    lake.sql("UPDATE lake.main.t SET v = -v WHERE id % 100 = 5")
    lake.sql("UPDATE lake.main.t SET s = 'again' WHERE id % 100 = 5")
    lake.sql("DELETE FROM lake.main.t WHERE id >= 3000")  # every row of the last file
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n FROM lake.main.t")
    check(lake, "SELECT g, count(*) AS n, sum(v) AS sv FROM lake.main.t GROUP BY g")
    check(lake, "SELECT id FROM lake.main.t WHERE id % 10 = 3")  # only deleted rows: empty
    check(lake, "SELECT s FROM lake.main.t WHERE id BETWEEN 1000 AND 1100")
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE v < 0")


def test_time_travel_every_snapshot(lake):
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' || i FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 10")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'x'), (1001, 'y')")  # inlined
    lake.sql("DELETE FROM lake.main.t WHERE id IN (50, 1000)")  # inlined deletes
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE id = 60")
    last = lake.snapshot_id()
    for snapshot in range(2, last + 1):
        check(lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def test_inlined_rows_and_deletes(lake):
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, l INTEGER[])")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'p' || i, [i, i + 1] FROM range(50) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (100, 'small', [1]), (101, NULL, NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE id IN (3, 4, 101)")  # inlined deletes of parquet rows
    lake.sql("UPDATE lake.main.t SET s = 'changed' WHERE id = 100")
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n FROM lake.main.t")
    check(lake, "SELECT id FROM lake.main.t WHERE s = 'changed' OR id < 6")


def test_schema_evolution(lake):
    lake.sql(
        "CREATE TABLE lake.main.t (a INTEGER, b VARCHAR, c TINYINT, s STRUCT(x INTEGER, y VARCHAR), f FLOAT)"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'b' || i, i % 100, {'x': i, 'y': 'y' || i}, i / 2 FROM range(30) r(i)"
    )
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN b TO b2")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN a TYPE BIGINT")
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN c")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN s.z INTEGER")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s.x TO x2")
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN s.y")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN f TYPE DOUBLE")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN d VARCHAR DEFAULT 'dflt'")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'new', {'x2': i, 'z': 7}, 1.5, i, 'nd' FROM range(100, 130) r(i)"
    )
    lake.sql("INSERT INTO lake.main.t VALUES (7, 'inl', {'x2': 1, 'z': 2}, 2.5, 3, 'i')")
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT b2, c FROM lake.main.t WHERE a < 10 OR a > 120")
    check(lake, "SELECT * FROM lake.main.t", snapshot=2)  # before every change


def test_struct_field_added_with_a_default(make_lake, lake_spec):
    """Rows written before ``ADD COLUMN s.b ... DEFAULT 7`` read 7, in files and inlined."""
    lake = make_lake(lake_spec, inline_limit=5)
    evolve_structs(lake)
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT id, s, s.b AS b, s.n.k AS k FROM lake.main.t WHERE id > 10")


def test_every_type(lake):
    lake.sql(
        "CREATE TABLE lake.main.t (bo BOOLEAN, i1 TINYINT, i2 SMALLINT, i4 INTEGER, i8 BIGINT, "
        "u1 UTINYINT, u2 USMALLINT, u4 UINTEGER, u8 UBIGINT, h HUGEINT, f4 FLOAT, f8 DOUBLE, "
        "d1 DECIMAL(4,1), d2 DECIMAL(18,3), d3 DECIMAL(38,10), s VARCHAR, bl BLOB, da DATE, "
        "ti TIME, ts TIMESTAMP, tss TIMESTAMP_S, tsm TIMESTAMP_MS, tsn TIMESTAMP_NS, "
        "tz TIMESTAMPTZ, iv INTERVAL, u UUID, j JSON, "
        "st STRUCT(a INTEGER, b STRUCT(c VARCHAR, d INTEGER[])), li VARCHAR[], "
        "ll INTEGER[][], m MAP(VARCHAR, INTEGER), lm MAP(INTEGER, STRUCT(q DOUBLE))[])"
    )
    row = (
        "true, -5, -300, 70000, 9000000000, 200, 60000, 4000000000, 18446744073709551615, 123456789, "
        "1.5, -2.25, 123.4, 12345.678, -1.5, 'héllo', '\\xAA\\x00'::BLOB, DATE '2024-02-29', "
        "TIME '12:30:00.123456', TIMESTAMP '2024-01-01 10:00:00.5', TIMESTAMP_S '2020-01-01 00:00:01', "
        "TIMESTAMP_MS '2020-01-01 00:00:01.5', TIMESTAMP_NS '2020-01-01 00:00:01.123456789', "
        "TIMESTAMPTZ '2024-01-15 10:30:00+00', INTERVAL '1 year 2 days 3 seconds', "
        "'c74cf600-d666-4407-bd0a-dadb960b8cd4'::UUID, '{\"a\": 1}', "
        "{'a': 1, 'b': {'c': 'x', 'd': [1, NULL]}}, ['a', NULL], [[1], [], NULL], MAP {'k': 1}, "
        "[MAP {1: {'q': 0.5}}]"
    )
    nulls = ", ".join(["NULL"] * 32)
    big = f"SELECT {row} FROM range(20)"
    lake.sql(f"INSERT INTO lake.main.t {big}")  # parquet
    lake.sql(f"INSERT INTO lake.main.t VALUES ({nulls})")  # parquet? no: inlined (1 row)
    lake.sql(f"INSERT INTO lake.main.t VALUES ({row})")  # inlined
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n, count(u) AS nu, count(st) AS ns FROM lake.main.t")


def test_names_that_need_quoting(lake):
    lake.sql('CREATE SCHEMA lake."my schema"')
    lake.sql('CREATE TABLE lake."my schema"."Tbl Ünï" ("we ird" INTEGER, "Mixed" VARCHAR)')
    lake.sql('INSERT INTO lake."my schema"."Tbl Ünï" SELECT i, \'m\' || i FROM range(40) r(i)')
    lake.sql('INSERT INTO lake."my schema"."Tbl Ünï" VALUES (1000, \'inl\')')
    lake.sql('DELETE FROM lake."my schema"."Tbl Ünï" WHERE "we ird" = 5')
    check(lake, 'SELECT "we ird", "Mixed" FROM lake."my schema"."Tbl Ünï"')


def test_empty_tables(lake):
    lake.sql("CREATE TABLE lake.main.e (a INTEGER, b VARCHAR)")
    check(lake, "SELECT * FROM lake.main.e")
    check(lake, "SELECT count(*) AS n FROM lake.main.e")
    lake.sql("INSERT INTO lake.main.e SELECT i, 'x' FROM range(20) r(i)")
    lake.sql("DELETE FROM lake.main.e")
    check(lake, "SELECT * FROM lake.main.e")
    check(lake, "SELECT count(*) AS n FROM lake.main.e")


def test_projection_and_filters(lake):
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, k INTEGER, s VARCHAR)")
    for part in range(3):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i % 13, 's' || (i % 5) "
            f"FROM range({part * 500}, {(part + 1) * 500}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k = 3")
    check(lake, "SELECT s FROM lake.main.t")
    check(lake, "SELECT id FROM lake.main.t WHERE k = 3")
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE k IN (1, 3, 5) AND s <> 's1'")
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE s IS NULL OR id > 1400")
    check(lake, "SELECT max(id) AS m FROM lake.main.t WHERE NOT (k < 5)")


def test_catalog_is_dynamic(lake):
    from datafusion import SessionContext

    from ducklake_datafusion import DuckLakeCatalog, register

    lake.sql("CREATE TABLE lake.main.t1 (a INTEGER)")
    lake.sql("INSERT INTO lake.main.t1 VALUES (1)")
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    assert ctx.sql("SELECT a FROM lake.main.t1").to_pylist() == [{"a": 1}]
    lake.sql("CREATE TABLE lake.main.t2 (b VARCHAR)")
    lake.sql("INSERT INTO lake.main.t2 VALUES ('new')")
    lake.sql("DROP TABLE lake.main.t1")
    lake.reader_args()  # let the reader open the catalog again
    assert ctx.sql("SELECT b FROM lake.main.t2").to_pylist() == [{"b": "new"}]
    with pytest.raises(Exception, match="t1"):
        ctx.sql("SELECT a FROM lake.main.t1").to_arrow_table()
    lake.sql("ALTER TABLE lake.main.t2 RENAME TO t3")
    lake.reader_args()
    assert ctx.sql("SELECT b FROM lake.main.t3").to_pylist() == [{"b": "new"}]
    assert {"t3"} == DuckLakeCatalog(**lake.reader_args()).schema("main").table_names()


def test_merge_and_flush_keep_history(lake):
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' FROM range(30) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'b' FROM range(30, 60) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (100, 'inl'), (101, 'inl2')")
    lake.sql("DELETE FROM lake.main.t WHERE id = 100")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    lake.sql("DELETE FROM lake.main.t WHERE id % 7 = 0")
    last = lake.snapshot_id()
    for snapshot in range(2, last + 1):
        check(lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def test_add_data_files_finer_timestamps(lake, tmp_path):
    """A timestamp_ms file in a timestamp_s column rounds, a ns file in a timestamp column
    truncates, as DuckDB reads them (``add_files_type_check_timestamp``)."""
    if lake.spec.storage != "local":
        pytest.skip("external files are written locally")
    values = {
        "TIMESTAMP_MS": (
            "1969-12-31 23:59:59.5",
            "2020-01-01 10:00:00.7",
            "1960-06-01 00:00:00.001",
        ),
        "TIMESTAMP_NS": ("1969-12-31 23:59:59.9999995", "2020-01-01 10:00:00.7000009"),
    }
    for kind, column_type, name in (
        ("TIMESTAMP_MS", "TIMESTAMP_S", "ms"),
        ("TIMESTAMP_NS", "TIMESTAMP", "ns"),
    ):
        path = tmp_path / f"{name}.parquet"
        rows = " UNION ALL ".join(f"SELECT '{v}'::{kind} AS ts" for v in values[kind])
        lake.sql(f"COPY ({rows} UNION ALL SELECT NULL) TO '{path}'")
        lake.sql(f"CREATE TABLE lake.main.{name} (ts {column_type})")
        lake.sql(f"CALL ducklake_add_data_files('lake', '{name}', '{path}')")
        check(lake, f"SELECT ts FROM lake.main.{name}")


def test_add_data_files_name_mapping(lake, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if lake.spec.storage != "local":
        pytest.skip("external files are written locally")
    path = tmp_path / "external.parquet"
    pq.write_table(
        pa.table({"ID": [1, 2, 3], "Name": ["a", "b", None], "extra": [0.1, 0.2, 0.3]}), path
    )
    lake.sql("CREATE TABLE lake.main.ext (id BIGINT, name VARCHAR, later INTEGER)")
    lake.sql(
        f"CALL ducklake_add_data_files('lake', 'ext', '{path}', allow_missing => true, "
        "ignore_extra_columns => true)"
    )
    check(lake, "SELECT * FROM lake.main.ext")


def test_scan_plan_is_picklable(lake):
    import pickle

    import pyarrow.compute as pc

    from ducklake_datafusion import DuckLakeCatalog
    from ducklake_datafusion.read import execute_plan

    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' FROM range(100) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'inl')")
    lake.sql("DELETE FROM lake.main.t WHERE id < 50")
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    plan = table.scan_plan(filter=pc.field("id") > 90, columns=["id"])
    kinds = {type(t).__name__ for t in plan.tasks}
    assert kinds == {"DataFileTask", "InlinedRowsTask"}
    clone = pickle.loads(pickle.dumps(plan))
    assert clone.tasks == plan.tasks and clone.filter == plan.filter
    expected = lake.reference("SELECT id FROM lake.main.t WHERE id > 90")
    from support.lakes import assert_same_rows

    assert_same_rows(execute_plan(clone), expected)
    assert ours  # shared helper module is importable


def test_deletion_vectors(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CALL lake.set_option('write_deletion_vectors', 'true')")
    lake.sql("CREATE TABLE lake.main.dv (id BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.dv SELECT i, 'x' || i FROM range(100000) r(i)")
    lake.sql("DELETE FROM lake.main.dv WHERE id % 3 = 0 OR id BETWEEN 70000 AND 75000")
    formats = lake.reference(
        "SELECT DISTINCT format FROM __ducklake_metadata_lake.ducklake_delete_file"
    )
    assert formats.column(0).to_pylist() == ["puffin"]
    check(lake, "SELECT * FROM lake.main.dv")
    check(lake, "SELECT count(*) AS n FROM lake.main.dv WHERE id > 50000")
