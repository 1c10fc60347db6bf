"""The test infrastructure itself: the writer, the oracle and the servers, in every matrix cell."""

from __future__ import annotations

import math
import threading
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import assert_same_rows, assert_same_types


def test_write_delete_and_time_travel(lake):
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n' || i FROM range(100) r(i)")  # parquet
    after_first = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t VALUES (100, 'x'), (101, NULL)")  # inlined (<= 10 rows)
    lake.sql("DELETE FROM lake.main.t WHERE id % 7 = 0")
    assert lake.snapshot_id() == after_first + 2

    rows = [(i, f"n{i}") for i in range(100)] + [(100, "x"), (101, None)]
    expected = pa.table(
        {
            "id": pa.array([r[0] for r in rows if r[0] % 7], pa.int32()),
            "name": [r[1] for r in rows if r[0] % 7],
        }
    )
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), expected)

    old = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {after_first})")
    assert old.num_rows == 100
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t", snapshot=after_first), old)

    # The writer re-attaches on demand after the oracle detached it.
    lake.sql("INSERT INTO lake.main.t VALUES (200, 'y')")
    assert lake.reference("SELECT count(*) AS n FROM lake.main.t").column(0)[0].as_py() == 88


def test_reader_args_free_the_catalog(lake):
    lake.sql("CREATE TABLE lake.main.t AS SELECT 1 AS a")
    args = lake.reader_args()
    mirrored = lake.spec.storage in ("gcs", "azure")  # read through the data_path override
    assert set(args) == {"metadata", "storage_options"} | ({"data_path"} if mirrored else set())
    assert (args["storage_options"] is None) == (lake.spec.storage == "local")
    if lake.spec.catalog == "duckdb":
        # What our reader does: open the catalog file read-only in this process.
        with duckdb.connect(args["metadata"], read_only=True) as con:
            tables = {r[0] for r in con.sql("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "ducklake_snapshot" in tables
    else:
        assert args["metadata"].startswith(lake.spec.catalog + ":")
    lake.sql("INSERT INTO lake.main.t VALUES (2)")


def test_duckdb_catalog_is_exclusive_while_attached(make_lake):
    lake = make_lake()  # duckdb-local
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    with pytest.raises(duckdb.Error, match="Unique file handle conflict"):
        duckdb.connect(lake.metadata, read_only=True)
    lake.detach()
    reader = duckdb.connect(lake.metadata, read_only=True)
    # Our reader closes idle handles after a moment; the writer waits for that.
    threading.Timer(0.3, reader.close).start()
    lake.sql("INSERT INTO lake.main.t VALUES (1)")


def test_inline_limit_zero_writes_parquet(make_lake, tmp_path):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1)")
    lake.detach()  # DATA_INLINING_ROW_LIMIT must survive re-attaching
    lake.sql("INSERT INTO lake.main.t VALUES (2)")
    files = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    assert len(files) == 2, files


def test_s3_round_trip_with_pyarrow(s3, make_lake):
    from support.lakes import LakeSpec

    lake = make_lake(LakeSpec("duckdb", "s3"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'one'), (2, 'two')")
    lake.sql("DELETE FROM lake.main.t WHERE a = 1")
    files = lake.reference(
        "SELECT data_file, delete_file FROM ducklake_list_files('lake', 't')"
    ).to_pylist()
    assert len(files) == 1 and files[0]["data_file"].startswith(lake.data_path)

    fs = s3.pyarrow_fs()
    data = pq.read_table(files[0]["data_file"].removeprefix("s3://"), filesystem=fs)
    assert data.select(["a", "s"]).to_pylist() == [{"a": 1, "s": "one"}, {"a": 2, "s": "two"}]
    deletes = pq.read_table(files[0]["delete_file"].removeprefix("s3://"), filesystem=fs)
    assert deletes.column("pos").to_pylist() == [0]
    assert set(lake.storage_options) == {
        "endpoint",
        "access_key_id",
        "secret_access_key",
        "region",
        "allow_http",
    }


# -- the comparison helpers -----------------------------------------------------------------


def test_assert_same_rows_is_order_insensitive_and_nan_aware():
    a = pa.table(
        {
            "f": [float("nan"), 1.0, None],
            "d": pa.array([Decimal("1.5"), None, Decimal(2)], pa.decimal128(5, 2)),
            "l": [[1, None], None, []],
            "s": [{"x": 1}, None, {"x": None}],
            "b": [b"\x00", None, b""],
        }
    )
    b = a.take([2, 0, 1]).cast(
        pa.schema(
            [
                ("f", pa.float32()),
                ("d", pa.decimal128(9, 2)),
                ("l", pa.large_list(pa.int32())),
                ("s", pa.struct([("x", pa.int16())])),
                ("b", pa.large_binary()),
            ]
        )
    )
    assert_same_rows(a, b)
    with pytest.raises(AssertionError):
        assert_same_rows(a, b, ordered=True)


def test_assert_same_rows_compares_large_tables_in_arrow_as_it_would_row_by_row():
    """The fast pass (Arrow's equality after one sort) agrees with the row-by-row one: equal
    tables in another order pass, ties on the sortable columns with nested values in
    another order pass (row by row), and a single differing value fails."""
    n = 50_000
    a = pa.table({"k": [i % 1000 for i in range(n)], "v": [f"v{i}" for i in range(n)]})
    b = a.take(pa.array(range(n - 1, -1, -1)))
    assert_same_rows(a, b)
    nested = pa.table({"k": [1, 1], "l": [[1], [2]]})
    assert_same_rows(nested, nested.take([1, 0]))
    changed = b.set_column(1, "v", pa.array([f"v{i}" for i in range(n - 1)] + ["other"]))
    with pytest.raises(AssertionError, match="only in actual"):
        assert_same_rows(changed, a)
    with pytest.raises(AssertionError, match="first difference"):
        assert_same_rows(a, b, ordered=True)


def test_assert_same_rows_reports_differences():
    with pytest.raises(AssertionError, match=r"only in actual \(1\):\n  \(2,\)"):
        assert_same_rows(pa.table({"a": [1, 2]}), pa.table({"a": [1, 3]}))
    with pytest.raises(AssertionError, match="column types differ"):
        assert_same_rows(pa.table({"a": ["1"]}), pa.table({"a": [1]}))
    with pytest.raises(AssertionError, match="columns differ"):
        assert_same_rows(pa.table({"a": [1]}), pa.table({"b": [1]}))
    with pytest.raises(AssertionError):
        assert_same_rows(pa.table({"a": [0.1]}), pa.table({"a": [math.nextafter(0.1, 1)]}))


def test_assert_same_types_exact():
    assert_same_types(pa.schema([("a", pa.int32())]), pa.schema([("a", pa.int64())]))
    with pytest.raises(AssertionError):
        assert_same_types(
            pa.schema([("a", pa.int32())]), pa.schema([("a", pa.int64())]), exact=True
        )
    with pytest.raises(AssertionError):
        assert_same_types(
            pa.schema([("t", pa.timestamp("us"))]), pa.schema([("t", pa.timestamp("us", "UTC"))])
        )
