"""The catalog rows of our writes are DuckDB's for the same data.

DuckDB writes a table into one lake (``CREATE TABLE AS``, ``INSERT``, a ``DELETE`` +
``INSERT`` transaction with a commit message) and we write the same data the same way
into another; apart from ids that name files and uuids, paths, sizes and times, every row
of ``ducklake_column``, ``ducklake_data_file``, ``ducklake_file_column_stats``,
``ducklake_table_stats``, ``ducklake_table_column_stats``, ``ducklake_snapshot``,
``ducklake_snapshot_changes``, ``ducklake_table`` and ``ducklake_schema_versions`` must be
equal, for every type we write and for NULL, NaN, infinities, empty and over-long text and
extreme values. DuckDB's statistics are what every reader prunes with, so this is the test
that our files can be pruned like DuckDB's own.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.writes import META, assert_bounds_hold, catalog_rows

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError, UnsupportedFeatureError

CELLS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]

_UUIDS = [
    uuid.UUID(int=0),
    uuid.UUID(int=2**128 - 1),
    uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
]


def every_type() -> pa.Table:
    """Three rows of every type we write, at their edges."""
    utc = dt.timezone.utc
    return pa.table(
        {
            "i8": pa.array([-128, 127, None], pa.int8()),
            "i16": pa.array([-(2**15), 2**15 - 1, 0], pa.int16()),
            "i32": pa.array([None, -(2**31), 2**31 - 1], pa.int32()),
            "i64": pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
            "u8": pa.array([0, 255, 3], pa.uint8()),
            "u16": pa.array([0, 2**16 - 1, None], pa.uint16()),
            "u32": pa.array([0, 2**32 - 1, None], pa.uint32()),
            "u64": pa.array([0, 2**64 - 1, None], pa.uint64()),
            "f32": pa.array([0.1, -0.0, float("inf")], pa.float32()),
            "f64": pa.array([1e16, 123456789012.0, -1e-7], pa.float64()),
            "f64_nan": pa.array([float("nan"), 1e300, 5e-324]),
            "only_nan": pa.array([float("nan"), None, float("nan")]),
            "neg_inf": pa.array([float("-inf"), 1.0, None]),
            "dec": pa.array(
                [decimal.Decimal(0), decimal.Decimal("-99999999.99"), None], pa.decimal128(10, 2)
            ),
            "dec18": pa.array(
                [decimal.Decimal("1.000000001"), None, decimal.Decimal(-5)], pa.decimal128(18, 9)
            ),
            "dec38": pa.array(
                [decimal.Decimal("1.5"), decimal.Decimal("-0.0000000001"), None],
                pa.decimal128(38, 10),
            ),
            "text": pa.array(["", "é" * 200, "z" * 300]),
            "text_long_max": pa.array(["a", "z" * 300, None]),
            "text_nul": pa.array(["a\x00b", None, "Ω"]),
            "blob": pa.array([b"", b"\xff" * 300, b"\x00"]),
            "blob_long": pa.array([b"\x01" * 300, b"\x02", None]),
            "flag": pa.array([True, False, None]),
            "day": pa.array([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1)]),
            "clock": pa.array(
                [dt.time(0), dt.time(23, 59, 59, 999999), dt.time(12, 30, 0, 500000)]
            ),
            "ts": pa.array(
                [
                    dt.datetime(2020, 1, 1, 0, 0, 0, 500000),
                    dt.datetime(1, 1, 1),
                    dt.datetime(9999, 12, 31, 23, 59, 59),
                ],
                pa.timestamp("us"),
            ),
            "ts_s": pa.array(
                [dt.datetime(2020, 1, 1, 0, 0, 1), None, dt.datetime(1970, 1, 1)], pa.timestamp("s")
            ),
            "ts_ms": pa.array(
                [dt.datetime(2020, 1, 1, 0, 0, 0, 500000), None, dt.datetime(1970, 1, 1)],
                pa.timestamp("ms"),
            ),
            "ts_ns": pa.array([1577836800123456789, None, 0], pa.timestamp("ns")),
            "tstz": pa.array(
                [
                    dt.datetime(2024, 1, 1, 10, tzinfo=utc),
                    dt.datetime(2024, 6, 1, 23, 59, 59, 1, tzinfo=utc),
                    None,
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "id": pa.ExtensionArray.from_storage(
                pa.uuid(), pa.array([u.bytes for u in _UUIDS], pa.binary(16))
            ),
            "doc": pa.ExtensionArray.from_storage(
                pa.json_(pa.string()), pa.array(['{"a":1}', None, "[]"])
            ),
            "list": pa.array([[1, None, 3], None, []], pa.list_(pa.int32())),
            "nested": pa.array([[[1.5]], [[], None], None], pa.list_(pa.list_(pa.float64()))),
            "struct": pa.array(
                [{"x": 1, "y": "q"}, None, {"x": None, "y": None}],
                pa.struct([("x", pa.int32()), ("y", pa.string())]),
            ),
            "map": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int32())),
            "all_null": pa.array([None, None, None], pa.int32()),
        }
    )


def _duckdb_writes(lake, first: pa.Table, second: pa.Table) -> None:
    con = lake.attach()
    con.register("first_rows", first)
    con.register("second_rows", second)
    lake.sql("CREATE TABLE lake.main.t AS SELECT * FROM first_rows")
    lake.sql("INSERT INTO lake.main.t SELECT * FROM second_rows")
    lake.sql(
        "BEGIN; DELETE FROM lake.main.t; INSERT INTO lake.main.t SELECT * FROM first_rows; "
        "CALL lake.set_commit_message('someone', 'replaced', extra_info => '{\"k\": 1}'); COMMIT"
    )
    lake.detach()


def _our_writes(lake, first: pa.Table, second: pa.Table) -> None:
    catalog = DuckLakeCatalog(**lake.reader_args())
    catalog.create_table("main.t", first)
    catalog.table("main", "t").append(second)
    catalog.table("main", "t").overwrite(
        first, author="someone", commit_message="replaced", commit_extra_info='{"k": 1}'
    )


@pytest.mark.parametrize("spec", CELLS, ids=lambda s: s.id)
def test_catalog_rows_equal_duckdbs(make_lake, spec):
    first = every_type()
    second = pa.concat_tables([every_type().slice(1), every_type().slice(0, 1)])
    theirs = make_lake(spec, inline_limit=0, name="theirs")
    ours = make_lake(spec, inline_limit=0, name="ours")
    _duckdb_writes(theirs, first, second)
    _our_writes(ours, first, second)
    expected, actual = catalog_rows(theirs), catalog_rows(ours)
    for table in expected:
        assert actual[table] == expected[table], table
    assert_same_rows(
        ours.reference("SELECT * FROM lake.main.t"), theirs.reference("SELECT * FROM lake.main.t")
    )
    assert_bounds_hold(ours)


def test_create_table_columns_equal_duckdbs(make_lake):
    """``create_table`` with a schema numbers and types columns as DuckDB's CREATE TABLE."""
    theirs = make_lake(name="theirs")
    ours = make_lake(name="ours")
    theirs.sql(
        "CREATE TABLE lake.main.t (a INTEGER, s STRUCT(x INTEGER, y VARCHAR), "
        "l BIGINT[], m MAP(VARCHAR, DOUBLE), z TIMESTAMP WITH TIME ZONE)"
    )
    theirs.detach()
    schema = pa.schema(
        [
            ("a", pa.int32()),
            ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("l", pa.list_(pa.int64())),
            ("m", pa.map_(pa.string(), pa.float64())),
            ("z", pa.timestamp("us", tz="Europe/Paris")),
        ]
    )
    DuckLakeCatalog(**ours.reader_args()).create_table("t", schema)
    expected, actual = catalog_rows(theirs), catalog_rows(ours)
    for table in ("columns", "snapshots", "changes", "tables", "schema_versions"):
        assert actual[table] == expected[table], table


PARTITIONED = (
    (
        "CREATE TABLE lake.main.t (a INTEGER, s VARCHAR, ts TIMESTAMP, d DATE, b BOOLEAN, "
        "z TIMESTAMP WITH TIME ZONE)"
    ),
    "ALTER TABLE lake.main.t SET PARTITIONED BY (s, year(ts), month(d), day(ts), hour(ts), b)",
)


def partitioned_rows() -> pa.Table:
    utc = dt.timezone.utc
    return pa.table(
        {
            "a": pa.array(range(8), pa.int32()),
            "s": ["x", "y", None, "a/b c=d", "x", "é", "x", ""],
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 5, 10),
                    dt.datetime(2023, 1, 5),
                    None,
                    dt.datetime(2024, 2, 1),
                    dt.datetime(1969, 12, 31, 23),
                    dt.datetime(2024, 1, 5, 10, 30),
                    dt.datetime(2024, 1, 5, 10, 59),
                    dt.datetime(1, 1, 1),
                ],
                pa.timestamp("us"),
            ),
            "d": pa.array(
                [dt.date(2024, 3, 1)] * 4
                + [None, dt.date(1900, 12, 31), dt.date(2024, 3, 1), dt.date(2024, 3, 1)]
            ),
            "b": [True, False, None, True, True, False, True, True],
            "z": pa.array([dt.datetime(2024, 1, 1, tzinfo=utc)] * 8, pa.timestamp("us", tz="UTC")),
        }
    )


@pytest.mark.parametrize("spec", CELLS[:2], ids=lambda s: s.id)
def test_partitioned_writes_equal_duckdbs(make_lake, spec):
    """A partitioned table (identity and calendar keys, NULL keys, text that needs
    escaping): the same files per partition, directories, partition values and statistics
    as DuckDB's; DuckDB prunes by them and reads the same rows."""
    theirs = make_lake(spec, inline_limit=0, name="theirs")
    ours = make_lake(spec, inline_limit=0, name="ours")
    rows = partitioned_rows()
    for lake in (theirs, ours):
        for statement in PARTITIONED:
            lake.sql(statement)
    theirs.attach().register("rows", rows)
    theirs.sql("INSERT INTO lake.main.t SELECT * FROM rows")
    theirs.sql("INSERT INTO lake.main.t SELECT * FROM rows WHERE a < 3")
    theirs.detach()
    ours.detach()
    table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
    table.append(rows)
    table.append(rows.filter(pa.compute.less(rows["a"], 3)))
    expected, actual = catalog_rows(theirs), catalog_rows(ours)
    for name in expected:
        assert actual[name] == expected[name], name
    for where in ("year(ts) = 2024", "s = 'x'", "b", "month(d) = 12", "ts IS NULL"):
        sql = f"SELECT * FROM lake.main.t WHERE {where}"
        assert_same_rows(ours.reference(sql), theirs.reference(sql))
    assert_bounds_hold(ours)


def test_create_partitioned_table(make_lake):
    """``create_table(partitioned_by=...)``: the table and its spec in one snapshot; DuckDB
    reads it, writes after us into the same spec, and agrees with our reader."""
    lake = make_lake(inline_limit=0)
    catalog = DuckLakeCatalog(**lake.reader_args())
    rows = partitioned_rows()
    catalog.create_table("main.t", rows, partitioned_by=["s", "year(ts)", "month(d)"])
    spec = lake.reference(
        f"SELECT c.column_id, c.transform FROM {META}.ducklake_partition_column c ORDER BY "
        "partition_key_index"
    ).to_pylist()
    assert spec == [
        {"column_id": 2, "transform": "identity"},
        {"column_id": 3, "transform": "year"},
        {"column_id": 4, "transform": "month"},
    ]
    lake.sql("INSERT INTO lake.main.t SELECT * FROM lake.main.t WHERE a < 4")
    lake.detach()
    files = lake.reference(
        f"SELECT count(DISTINCT partition_id) AS specs, count(*) AS files FROM "
        f"{META}.ducklake_data_file"
    ).to_pylist()[0]
    assert files["specs"] == 1
    from support.writes import assert_same_answers

    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    assert_same_answers(lake, "SELECT count(*) AS n FROM lake.main.t WHERE s = 'x'")
    with pytest.raises(InvalidOptionError, match="names no column"):
        catalog.create_table("main.u", rows, partitioned_by=["nope"])
    with pytest.raises(InvalidOptionError, match="date or timestamp"):
        catalog.create_table("main.u", rows, partitioned_by=["year(s)"])
    with pytest.raises(UnsupportedFeatureError, match="writes identity"):
        catalog.create_table("main.u", rows, partitioned_by=["truncate(4, a)"])
