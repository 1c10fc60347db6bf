"""Lakes of DuckDB's own DuckLake tests (duckdb/ducklake, ``test/sql/``) read through Spark.

Replaying that suite through ``spark.read.format("ducklake")`` found tables the Spark path
read wrongly or not at all while DataFusion read them right. Each test here rebuilds the
lake of one such upstream test (small) and compares Spark's rows, and DataFusion's, with
DuckDB's for the same snapshot. DuckDB's answer is brought to the Spark types the README
documents (UBIGINT as decimal(20,0), UUID as text, TIMESTAMP_NS floored to microseconds,
INTERVAL as its months/days/nanoseconds); no expected value is typed by hand.
"""

from __future__ import annotations

import base64
import os
import pickle

import pytest

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import has_data_source

if not has_data_source():  # test_spark_versions.py covers what older releases do
    pytest.skip("the ducklake data source needs pyspark 4.1+", allow_module_level=True)

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType
from support.lakes import assert_same_rows
from support.readcheck import ours

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.spark import DuckLakeDataSource
from ducklake_datafusion.spark._core._arrow import to_spark_batch
from ducklake_datafusion.spark._core._types import spark_arrow_type, spark_type

pytestmark = pytest.mark.spark

# duckdb/ducklake data/parquet/old_list_structure.parquet (parquet-mr, Avro's legacy
# two-level list: `repeated group array (LIST) { repeated int32 array }`), 539 bytes.
OLD_LIST_PARQUET = (
    "UEFSMRUAFTwVPBXeoI6GAxwVCBUAFQYVBgAAAwAAAAOYAAMAAAADqgABAAAAAgAAAAMAAAAEAAAAGRECGRgEAQAA"
    "ABkYBAQAAAAVAhkWABk2AgIEGTYAAAgAGRwWCBVqFgAAABUCGUxICW15X3JlY29yZBUCADUAGAFhFQIVBkw8AAAA"
    "NQQYBWFycmF5FQIVBkw8AAAAFQIlBBgFYXJyYXkAFgIZHBkcJggcFQIZJQYAGTgBYQVhcnJheQVhcnJheRUAFggW"
    "ahZqJgg8GAQEAAAAGAQBAAAAFgAoBAQAAAAYBAEAAAAAGRwVABUAFQIAPCk2AgIEGTYAAAgAABa0ARUUFnIVQgAW"
    "ahYCJggWahQAABksGBNwYXJxdWV0LmF2cm8uc2NoZW1hGHt7InR5cGUiOiJyZWNvcmQiLCJuYW1lIjoibXlfcmVj"
    "b3JkIiwiZmllbGRzIjpbeyJuYW1lIjoiYSIsInR5cGUiOnsidHlwZSI6ImFycmF5IiwiaXRlbXMiOnsidHlwZSI6"
    "ImFycmF5IiwiaXRlbXMiOiJpbnQifX19XX0AGBF3cml0ZXIubW9kZWwubmFtZRgEYXZybwAYSnBhcnF1ZXQtbXIg"
    "dmVyc2lvbiAxLjE0LjMgKGJ1aWxkIGI1ZTM3NmEyY2FlZTc2N2ExMWU3NWI3ODM1MTJiMTRjZjhjYTkwZWMpGRwc"
    "AAAArwEAAFBBUjE="
)
# INTERVAL in Spark: its exact parts, with pyarrow's MonthDayNano field names.
INTERVAL_PARTS = pa.struct(
    [("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())]
)


def _read(spark, lake, table: str, *, snapshot: int | None = None, schema=None):
    """Our Spark answer: ``spark.read.format("ducklake")`` (optionally pinned / projected)."""
    reader = spark.read.format("ducklake").option("metadata", lake.reader_args()["metadata"])
    if snapshot is not None:
        reader = reader.option("snapshot", str(snapshot))
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load(table)


def _floored_ns(column: str) -> str:
    """DuckDB SQL for a TIMESTAMP_NS column floored to microseconds, as Spark reads it."""
    nanos = f"epoch_ns({column})"
    return f"make_timestamp({nanos} // 1000 - ({nanos} % 1000 < 0)::BIGINT) AS {column}"


def _as_spark_value(value):
    """A DuckDB value (``to_pylist``) in the Spark form: intervals as their parts,
    nanosecond timestamps floored to the microsecond, at any nesting depth."""
    if isinstance(value, pa.MonthDayNano):
        return {"months": value.months, "days": value.days, "nanoseconds": value.nanoseconds}
    if hasattr(value, "nanosecond") and hasattr(value, "floor"):  # pandas.Timestamp
        return value.floor("us").to_pydatetime()
    if isinstance(value, dict):
        return {k: _as_spark_value(v) for k, v in value.items()}
    if isinstance(value, tuple):  # a map entry
        return tuple(_as_spark_value(v) for v in value)
    if isinstance(value, list):
        return [_as_spark_value(v) for v in value]
    return value


def _spark_form(expected: pa.Table, schema: pa.Schema) -> pa.Table:
    """DuckDB's rows converted value by value (``_as_spark_value``) into ``schema``."""
    rows = [{k: _as_spark_value(v) for k, v in row.items()} for row in expected.to_pylist()]
    return pa.Table.from_pylist(rows, schema=schema)


# --------------------------------------------------------------------------------------------
# add_old_list, add_file_with_three_level_list


def _nested_lists() -> pa.Table:
    """Lists of structs, lists of lists and a map of lists, written with pyarrow's
    non-compliant list naming (``item``), as other writers than DuckDB produce."""
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "trailers": [[{"plate": "a", "open": True}, {"plate": None, "open": False}], [], None],
            "matrix": [[[1, 2], [3]], [[]], None],
            "params": pa.array(
                [[("k", [1.5, None])], [], None], pa.map_(pa.string(), pa.list_(pa.float64()))
            ),
        }
    )


def _jvm_working_directory(spark) -> str:
    return spark.sparkContext._jvm.System.getProperty("user.dir")


def test_added_files_with_relative_paths(spark, make_lake, tmp_path, monkeypatch):
    """``ducklake_add_data_files('lake', 't', 'data/x.parquet')`` stores the path as given,
    marked absolute, and DuckDB opens it against its working directory. Spark executors
    run elsewhere, so the planner resolves it (against the working directory Spark
    resolves relative paths with, as ``spark.read.parquet`` does) and ships the absolute
    path: executors in another directory read the file the writer meant."""
    monkeypatch.chdir(_jvm_working_directory(spark))  # DuckDB and Spark agree on "here"
    added = tmp_path / "added"
    added.mkdir()
    (added / "old_list.parquet").write_bytes(base64.b64decode(OLD_LIST_PARQUET))
    pq.write_table(_nested_lists(), added / "nested.parquet", use_compliant_nested_type=False)
    lake = make_lake()
    for name in ("old_list", "nested"):
        relative = os.path.relpath(added / f"{name}.parquet")
        assert not os.path.isabs(relative)
        lake.sql(
            f"CREATE TABLE lake.main.{name} AS SELECT * FROM read_parquet('{relative}') "
            "WITH NO DATA"
        )
        lake.sql(f"CALL ducklake_add_data_files('lake', '{name}', '{relative}')")
        expected = lake.reference(f"SELECT * FROM lake.main.{name}")
        assert expected.num_rows > 0
        assert_same_rows(_read(spark, lake, f"main.{name}").toArrow(), expected)
        assert_same_rows(ours(lake, f"SELECT * FROM lake.main.{name}"), expected)

    # An executor in another working directory needs only the plan.
    expected = lake.reference("SELECT * FROM lake.main.nested")
    source = DuckLakeDataSource({"metadata": lake.reader_args()["metadata"], "path": "main.nested"})
    reader = source.reader(source.schema())
    shipped, partitions = pickle.dumps(reader), reader.partitions()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    executor = pickle.loads(shipped)
    batches = [batch for partition in partitions for batch in executor.read(partition)]
    rows = pa.Table.from_batches(batches, schema=executor.target)
    assert_same_rows(rows, expected)


# --------------------------------------------------------------------------------------------
# add_files_type_check_integer

INTEGER_FILES = {
    "bool": "true", "tinyint": "-1", "smallint": "-1", "int": "-1", "bigint": "-1",
    "utinyint": "42", "usmallint": "42", "uinteger": "42", "ubigint": "42",
}  # fmt: skip
# column type -> (the file of its own type, the files DuckDB accepts into it)
INTEGER_TABLES = {
    "BOOLEAN": ("bool", ["bool"]),
    "TINYINT": ("tinyint", ["tinyint"]),
    "SMALLINT": ("smallint", ["tinyint", "smallint", "utinyint"]),
    "INTEGER": ("int", ["tinyint", "smallint", "int", "utinyint", "usmallint"]),
    "BIGINT": (
        "bigint",
        ["tinyint", "smallint", "int", "bigint", "utinyint", "usmallint", "uinteger"],
    ),
    "UTINYINT": ("utinyint", ["utinyint"]),
    "USMALLINT": ("usmallint", ["utinyint", "usmallint"]),
    "UINTEGER": ("uinteger", ["utinyint", "usmallint", "uinteger"]),
    "UBIGINT": ("ubigint", ["utinyint", "usmallint", "uinteger", "ubigint"]),
}


def test_added_integer_files(spark, make_lake, tmp_path):
    """Narrower and unsigned integer files added to integer columns read as DuckDB reads
    them, each table state at its snapshot. The Spark type of every column is the type
    Spark's own Parquet reader gives a file of that column's type (UBIGINT: decimal(20,0),
    which holds every value exactly), so DuckDB's 42 is Spark's Decimal('42')."""
    lake = make_lake()
    for kind, value in INTEGER_FILES.items():
        lake.sql(f"COPY (SELECT {value}::{kind} AS col1) TO '{tmp_path / kind}.parquet'")
    every = ", ".join(f"{value}::{kind} AS {kind}" for kind, value in INTEGER_FILES.items())
    lake.sql(f"COPY (SELECT {every}) TO '{tmp_path}/every.parquet'")
    spark_own = spark.read.parquet(str(tmp_path / "every.parquet")).schema
    states = []
    for column_type, (own, accepted) in INTEGER_TABLES.items():
        lake.sql(f"CREATE OR REPLACE TABLE lake.main.test (col1 {column_type})")
        for kind in accepted:
            lake.sql(f"CALL ducklake_add_data_files('lake', 'test', '{tmp_path / kind}.parquet')")
        states.append((column_type, own, lake.snapshot_id()))

    for column_type, own, snapshot in states:
        table = f"lake.main.test AT (VERSION => {snapshot})"
        expected = lake.reference(f"SELECT * FROM {table}")
        assert_same_rows(ours(lake, "SELECT * FROM lake.main.test", snapshot=snapshot), expected)
        cast = "col1::DECIMAL(20,0) AS col1" if column_type == "UBIGINT" else "col1"
        df = _read(spark, lake, "main.test", snapshot=snapshot)
        assert_same_rows(df.toArrow(), lake.reference(f"SELECT {cast} FROM {table}"))
        assert df.schema["col1"].dataType == spark_own[own].dataType, column_type


# --------------------------------------------------------------------------------------------
# add_files_type_check_timestamp

TIMESTAMP_FILES = {
    "date": "DATE '2000-01-01'",
    "time": "TIME '20:12:24'",
    "timestamp": "TIMESTAMP '2020-02-03 12:23:34.123456'",
    "timestamptz": "TIMESTAMPTZ '2020-02-03 12:23:34.123456'",
    "timestamp_s": "TIMESTAMP_S '2020-02-03 12:23:34'",
    "timestamp_ms": "TIMESTAMP_MS '2020-02-03 12:23:34.123'",
    "timestamp_ns": "TIMESTAMP_NS '2020-02-03 12:23:34.123456789'",
}
TIMESTAMP_TABLES = {
    "DATE": ["date"],
    "TIME": ["time"],
    "TIMESTAMP_S": ["timestamp_s", "timestamp_ms", "timestamp"],
    "TIMESTAMP_MS": ["timestamp_s", "timestamp_ms", "timestamp"],
    "TIMESTAMP": ["timestamp_s", "timestamp_ms", "timestamp", "timestamp_ns"],
    "TIMESTAMP_NS": ["timestamp_s", "timestamp_ms", "timestamp", "timestamp_ns"],
    "TIMESTAMPTZ": ["timestamptz"],
}


def test_added_timestamp_files(spark, make_lake, tmp_path):
    """Date, time and timestamp files of every unit added to the column types DuckDB
    accepts them into, each table state read at its snapshot."""
    lake = make_lake()
    lake.sql("SET TimeZone = 'UTC'")
    for kind, value in TIMESTAMP_FILES.items():
        lake.sql(f"COPY (SELECT {value} AS col1) TO '{tmp_path / kind}.parquet'")
    states = []
    for column_type, accepted in TIMESTAMP_TABLES.items():
        lake.sql(f"CREATE OR REPLACE TABLE lake.main.test (col1 {column_type})")
        for kind in accepted:
            lake.sql(f"CALL ducklake_add_data_files('lake', 'test', '{tmp_path / kind}.parquet')")
        states.append((column_type, lake.snapshot_id()))

    for column_type, snapshot in states:
        table = f"lake.main.test AT (VERSION => {snapshot})"
        expected = lake.reference(f"SELECT * FROM {table}")
        assert_same_rows(ours(lake, "SELECT * FROM lake.main.test", snapshot=snapshot), expected)
        column = _floored_ns("col1") if column_type == "TIMESTAMP_NS" else "col1"
        df = _read(spark, lake, "main.test", snapshot=snapshot)
        assert_same_rows(df.toArrow(), lake.reference(f"SELECT {column} FROM {table}"))


# --------------------------------------------------------------------------------------------
# all_types_column_default_stats

ALL_TYPES = (
    "c_bool BOOLEAN, c_tinyint TINYINT, c_smallint SMALLINT, c_int INTEGER, c_bigint BIGINT, "
    "c_hugeint HUGEINT, c_utinyint UTINYINT, c_usmallint USMALLINT, c_uint UINTEGER, "
    "c_ubigint UBIGINT, c_uhugeint UHUGEINT, c_float FLOAT, c_double DOUBLE, "
    "c_dec41 DECIMAL(4,1), c_dec94 DECIMAL(9,4), c_dec186 DECIMAL(18,6), "
    "c_dec3810 DECIMAL(38,10), c_date DATE, c_time TIME, c_time_tz TIMETZ, c_ts TIMESTAMP, "
    "c_ts_s TIMESTAMP_S, c_ts_ms TIMESTAMP_MS, c_ts_ns TIMESTAMP_NS, c_ts_tz TIMESTAMPTZ, "
    "c_interval INTERVAL, c_varchar VARCHAR, c_blob BLOB, c_uuid UUID"
)
ALL_TYPES_ROWS = [
    (
        "(false, 1, 10, 100, 1000, 10000, 1, 10, 100, 1000, 10000, 1.5, 1.5, 1.1, 1.11, 1.111, "
        "1.1111, '2020-01-01', '01:00:00', '01:00:00+00', '2020-01-01 01:00:00', "
        "'2020-01-01 01:00:00', '2020-01-01 01:00:00.123', '2020-01-01 01:00:00.123456789', "
        "'2020-01-01 01:00:00+00', '1 day', 'a', 'a', '11111111-1111-1111-1111-111111111111')"
    ),
    (
        "(true, 3, 30, 300, 3000, 30000, 3, 30, 300, 3000, 30000, 3.5, 3.5, 3.3, 3.33, 3.333, "
        "3.3333, '2022-03-03', '03:00:00', '03:00:00+00', '2022-03-03 03:00:00', "
        "'2022-03-03 03:00:00', '2022-03-03 03:00:00.789', '1969-12-31 23:59:59.999999999', "
        "'2022-03-03 03:00:00+00', '-3 days 00:00:00.000001', 'c', 'c', "
        "'33333333-3333-3333-3333-333333333333')"
    ),
]
ADDED_COLUMNS = (
    "n_bool BOOLEAN DEFAULT 1", "n_tinyint TINYINT DEFAULT 7",
    "n_smallint SMALLINT DEFAULT 700", "n_int INTEGER DEFAULT -5",
    "n_bigint BIGINT DEFAULT 1234567890123",
    "n_hugeint HUGEINT DEFAULT 123456789012345678901234",
    "n_utinyint UTINYINT DEFAULT 250", "n_usmallint USMALLINT DEFAULT 60000",
    "n_uint UINTEGER DEFAULT 4000000000", "n_ubigint UBIGINT DEFAULT 18000000000000000000",
    "n_uhugeint UHUGEINT DEFAULT 340000000000000000000000000000000000000",
    "n_float FLOAT DEFAULT 3.14", "n_double DOUBLE DEFAULT 2.71828",
    "n_dec41 DECIMAL(4,1) DEFAULT 99.9", "n_dec94 DECIMAL(9,4) DEFAULT 100.5",
    "n_dec186 DECIMAL(18,6) DEFAULT 12.345678",
    "n_dec3810 DECIMAL(38,10) DEFAULT 12345678.90123456789",
    "n_date DATE DEFAULT '2024-06-15'", "n_time TIME DEFAULT '12:34:56'",
    "n_time_tz TIMETZ DEFAULT '12:34:56+02'", "n_ts TIMESTAMP DEFAULT '2024-06-15 12:34:56'",
    "n_ts_s TIMESTAMP_S DEFAULT '2024-06-15 12:34:56'",
    "n_ts_ms TIMESTAMP_MS DEFAULT '2024-06-15 12:34:56.789'",
    "n_ts_ns TIMESTAMP_NS DEFAULT '2024-06-15 12:34:56.123456789'",
    "n_ts_tz TIMESTAMPTZ DEFAULT '2024-06-15 12:34:56+00'",
    "n_interval INTERVAL DEFAULT '1 year 2 months'", "n_varchar VARCHAR DEFAULT 'hello'",
    "n_blob BLOB DEFAULT 'abc'", "n_uuid UUID DEFAULT '12345678-1234-1234-1234-123456789012'",
)  # fmt: skip


def _spark_select(described: pa.Table, skip: str) -> tuple[str, list[str]]:
    """DuckDB's select list in the Spark types (SQL casts; intervals converted later)."""
    columns, intervals = [], []
    for name, kind in zip(*(described.column(i).to_pylist() for i in range(2)), strict=True):
        if name == skip:
            continue
        if kind == "UBIGINT":
            columns.append(f"{name}::DECIMAL(20,0) AS {name}")
        elif kind == "UUID":
            columns.append(f"{name}::VARCHAR AS {name}")
        elif kind == "TIMESTAMP_NS":
            columns.append(_floored_ns(name))
        else:
            columns.append(name)
        if kind == "INTERVAL":
            intervals.append(name)
    return ", ".join(columns), intervals


def _with_interval_parts(table: pa.Table, names: list[str]) -> pa.Table:
    for name in names:
        index = table.schema.get_field_index(name)
        values = [_as_spark_value(v) for v in table.column(name).to_pylist()]
        table = table.set_column(index, name, pa.array(values, type=INTERVAL_PARTS))
    return table


def test_every_type_with_added_defaults(spark, make_lake):
    """A table of every type, then every type added as a column with a DEFAULT, rows
    inlined. INTERVAL reads as its exact parts; the UHUGEINT default (3.4e38, 39 digits)
    reads exactly in DataFusion and is refused in Spark (38 digits at most) with a typed
    error naming the column."""
    lake = make_lake(inline_limit=100)
    lake.sql(f"CREATE TABLE lake.main.t_all ({ALL_TYPES})")
    lake.sql("BEGIN")
    lake.sql(f"INSERT INTO lake.main.t_all VALUES {', '.join(ALL_TYPES_ROWS)}")
    for column in ADDED_COLUMNS:
        lake.sql(f"ALTER TABLE lake.main.t_all ADD COLUMN {column}")
    lake.sql("COMMIT")

    with pytest.raises(Exception, match=r"UnsupportedTypeError.*'n_uhugeint'.*UHUGEINT"):
        _read(spark, lake, "main.t_all").collect()

    described = lake.reference("DESCRIBE lake.main.t_all")
    select, intervals = _spark_select(described, skip="n_uhugeint")
    derived = _read(spark, lake, "main.t_all").schema  # load() itself succeeds
    assert derived["c_interval"].dataType.simpleString() == (
        "struct<months:int,days:int,nanoseconds:bigint>"
    )
    projected = [f for f in derived.fields if f.name != "n_uhugeint"]
    df = _read(spark, lake, "main.t_all", schema=StructType(projected))
    expected = lake.reference(f"SELECT {select} FROM lake.main.t_all")
    assert_same_rows(df.toArrow(), _with_interval_parts(expected, intervals))

    names = described.column(0).to_pylist()
    every = ", ".join(
        "CAST(n_uhugeint AS VARCHAR) AS n_uhugeint" if n == "n_uhugeint" else n for n in names
    )
    sql = f"SELECT {every} FROM lake.main.t_all"  # DuckDB's Arrow export wraps the UHUGEINT
    assert_same_rows(ours(lake, sql), lake.reference(sql))


# --------------------------------------------------------------------------------------------
# partitioning/epoch_transforms (its TIMESTAMP_NS table; the epoch_* transforms are newer
# than the writer used here, so a calendar transform partitions it)


def test_nanosecond_timestamps_floor_to_the_microsecond(spark, make_lake):
    """``1969-12-31 23:59:59.999999999`` reads in Spark as ``1969-12-31 23:59:59.999999``,
    not as ``1970-01-01 00:00:00``: the second DuckDB writes the value in, and every
    comparison with a microsecond literal, stay DuckDB's. (DuckDB 1.5.5's own cast to
    TIMESTAMP, year() and year partition truncate toward zero there; newer DuckLake
    floors, see the upstream test.) Nested values too."""
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.ns_tbl (id INTEGER, ts TIMESTAMP_NS)")
    lake.sql("ALTER TABLE lake.main.ns_tbl SET PARTITIONED BY (year(ts))")
    lake.sql(
        "INSERT INTO lake.main.ns_tbl VALUES (1, '1969-12-31 23:59:59.999999999'), "
        "(2, '1970-01-01 00:59:59.999999999'), (3, '1970-01-01 00:00:00.000000001'), "
        "(4, '1969-06-30 12:00:00.0000005'), (5, NULL)"
    )
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    lake.sql(
        "CREATE TABLE lake.main.nested (id INTEGER, "
        "l STRUCT(t TIMESTAMP_NS, i INTERVAL)[], m MAP(VARCHAR, INTERVAL))"
    )
    lake.sql(
        "INSERT INTO lake.main.nested VALUES (1, [{'t': '1969-12-31 23:59:59.999999999', "
        "'i': INTERVAL '1 year 2 months 3 days 04:05:06.000007'}, NULL, {'t': NULL, 'i': NULL}], "
        "MAP {'a': INTERVAL '-1 month', 'b': NULL}), (2, NULL, NULL), (3, [], MAP {})"
    )

    expected = lake.reference(f"SELECT id, {_floored_ns('ts')} FROM lake.main.ns_tbl")
    df = _read(spark, lake, "main.ns_tbl")
    assert df.schema["ts"].dataType.simpleString() == "timestamp_ntz"
    assert_same_rows(df.toArrow(), expected)
    seconds = lake.reference("SELECT id, left(ts::VARCHAR, 19) AS s FROM lake.main.ns_tbl")
    shown = df.selectExpr("id", "date_format(ts, 'yyyy-MM-dd HH:mm:ss') AS s").toArrow()
    assert_same_rows(shown, seconds)
    for where in ("ts < TIMESTAMP '1970-01-01'", "ts >= TIMESTAMP '1969-12-31 23:59:59.999999'"):
        sql = f"SELECT id FROM lake.main.ns_tbl WHERE {where}"
        want = lake.reference(sql)
        assert_same_rows(
            df.where(where.replace("TIMESTAMP", "TIMESTAMP_NTZ")).select("id").toArrow(), want
        )
        # DataFusion prunes by partition: the 1969 value sits in DuckDB 1.5.5's year=1970
        assert_same_rows(ours(lake, sql), want)
    exact = "SELECT * FROM lake.main.ns_tbl"
    assert_same_rows(ours(lake, exact), lake.reference(exact))

    nested = _read(spark, lake, "main.nested")
    got = nested.toArrow()
    assert_same_rows(got, _spark_form(lake.reference("SELECT * FROM lake.main.nested"), got.schema))
    exact = "SELECT * FROM lake.main.nested"
    assert_same_rows(ours(lake, exact), lake.reference(exact))


def test_spark_batches_of_sliced_nested_columns():
    """The conversion handles array offsets (batches are slices of larger reads)."""
    kind = pa.struct([("t", pa.timestamp("ns")), ("i", pa.month_day_nano_interval())])
    source = pa.array(
        [
            [{"t": -1, "i": pa.MonthDayNano([1, 2, 3])}],
            None,
            [{"t": 1_999, "i": None}, None],
            [{"t": -1_001, "i": pa.MonthDayNano([-1, 0, -5])}],
        ],
        pa.list_(kind),
    )
    batch = pa.record_batch({"l": source}).slice(1)
    target = pa.schema([pa.field("l", spark_arrow_type(spark_type(source.type, "l"), "l"))])
    got = to_spark_batch(batch, target).column(0).to_pylist()
    assert got == [
        None,
        [{"t": pa.scalar(1, pa.timestamp("us")).as_py(), "i": None}, None],
        [
            {
                "t": pa.scalar(-2, pa.timestamp("us")).as_py(),
                "i": {"months": -1, "days": 0, "nanoseconds": -5},
            }
        ],
    ]


def test_wide_integers_of_39_digits_read_exactly(spark, make_lake):
    """Inlined and default HUGEINT/UHUGEINT values of 39 digits (beyond decimal128, and
    a UHUGEINT beyond 2**127 that DuckDB's own Arrow export wraps negative) read exactly
    as ``decimal256(39, 0)`` in DataFusion and the pyarrow API, compared with DuckDB's
    text of each value; Spark, whose largest decimal has 38 digits, refuses them with a
    typed error naming the column, and reads the others."""
    lake = make_lake(inline_limit=10)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, u UHUGEINT, s STRUCT(h HUGEINT))")
    lake.sql(
        "INSERT INTO lake.main.t VALUES (1, 5, {'h': -170141183460469231731687303715884105728}), "
        "(2, 340282366920938463463374607431768211455, {'h': 1})"  # 2**128 - 1
    )
    lake.sql(
        "ALTER TABLE lake.main.t ADD COLUMN d UHUGEINT DEFAULT 10000000000000000000000000000000000000"
    )
    lake.sql(
        "ALTER TABLE lake.main.t ADD COLUMN e UHUGEINT DEFAULT 300000000000000000000000000000000000000"
    )
    lake.sql("INSERT INTO lake.main.t VALUES (3, NULL, NULL, 7, NULL)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, i * 100000000000000000000000000000000000::UHUGEINT, "
        "{'h': -i}, i, i FROM range(4, 30) r(i)"
    )  # a file: DuckDB's writer stores both types as doubles
    text = (
        "SELECT id, CAST(u AS VARCHAR) AS u, CAST(s.h AS VARCHAR) AS h, CAST(d AS VARCHAR) AS d, "
    )
    text += "CAST(e AS VARCHAR) AS e FROM lake.main.t"
    assert_same_rows(ours(lake, text), lake.reference(text))
    assert_same_rows(ours(lake, text, native=False), lake.reference(text))
    for sql in (
        "SELECT id FROM lake.main.t WHERE u > 170141183460469231731687303715884105727",
        "SELECT id FROM lake.main.t WHERE s.h < 0 AND e >= 5",
        "SELECT CAST(min(s.h) AS VARCHAR) AS h, CAST(max(u) AS VARCHAR) AS u FROM lake.main.t",
    ):
        assert_same_rows(ours(lake, sql), lake.reference(sql))
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    assert table.schema.field("u").type == pa.decimal256(39, 0)
    values = table.to_arrow(columns=["id", "u", "e"]).sort_by("id").to_pylist()
    assert values[1]["u"] == 2**128 - 1 and values[0]["e"] == 3 * 10**38

    with pytest.raises(Exception, match=r"UnsupportedTypeError.*'u'.*UHUGEINT"):
        _read(spark, lake, "main.t").collect()
    df = _read(spark, lake, "main.t", schema="id INT, s STRUCT<h: DECIMAL(38,0)>, d DECIMAL(38,0)")
    with pytest.raises(Exception, match=r"UnsupportedTypeError.*'s'"):
        df.collect()  # -2**127 has 39 digits too
    df = _read(spark, lake, "main.t", schema="id INT, d DECIMAL(38,0)")
    assert_same_rows(df.toArrow(), lake.reference("SELECT id, d FROM lake.main.t"))


@pytest.mark.parametrize(
    ("child", "relative", "expected"),
    [
        ("data/f.parquet", False, "{cwd}/data/f.parquet"),  # add_data_files('data/f.parquet')
        ("./f.parquet", False, "{cwd}/f.parquet"),
        ("/abs/f.parquet", False, "/abs/f.parquet"),
        ("s3://b/f.parquet", False, "s3://b/f.parquet"),
        ("f.parquet", True, "/lake/t/f.parquet"),
    ],
)
def test_paths_stored_as_absolute_but_relative_resolve_while_planning(
    child, relative, expected, tmp_path, monkeypatch
):
    from ducklake_datafusion.pathres import join_path

    monkeypatch.chdir(tmp_path)
    assert join_path("/lake/t/", child, relative) == expected.format(cwd=os.getcwd())


def test_a_user_schema_can_still_read_exact_nanoseconds():
    """Flooring serves the timestamp Spark type only: declared BIGINT, a TIMESTAMP_NS
    column gives its exact nanoseconds since the epoch."""
    batch = pa.record_batch({"ts": pa.array([-1, 1_999, None], pa.timestamp("ns"))})
    got = to_spark_batch(batch, pa.schema([("ts", pa.int64())])).column(0)
    assert got.to_pylist() == [-1, 1_999, None]
