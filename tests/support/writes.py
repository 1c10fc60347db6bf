"""Checks of what our writer wrote, with DuckDB (the reference) as the oracle.

* :func:`duckdb_reads` / :func:`ours_reads`: a table at a snapshot, read by DuckDB's
  ``ducklake`` extension and by our DataFusion catalog;
* :func:`assert_reads_back`: both equal the rows we wrote;
* :func:`assert_bounds_hold`: every live file's catalog statistics are the true bounds
  of the file, as DuckDB computes them from the file itself (a too narrow bound would
  make every pruning reader drop rows);
* :func:`catalog_rows`: the catalog rows two lakes must share when DuckDB wrote the same
  data into one and we into the other (ids, paths, sizes and times aside);
* :func:`every_type`: three rows of every type we write, at their edges;
  :func:`duckdb_writes`: DuckDB's writes of them that ours repeat; ``PARTITIONED`` /
  :func:`partitioned_rows`: a partitioned table and rows for it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
from datafusion import SessionContext

from ducklake_datafusion import DuckLakeCatalog, register

from .lakes import assert_same_rows

META = "__ducklake_metadata_lake"


def pull(lake) -> None:
    """Files we wrote to a GCS or Azure store, copied to where DuckDB reads them."""
    if lake.mirror is not None:
        lake.mirror.pull()


def duckdb_reads(lake, sql: str, snapshot: int | None = None) -> pa.Table:
    pull(lake)
    return lake.reference(sql, snapshot=snapshot)


def ours_reads(lake, sql: str, snapshot: int | None = None, **kwargs) -> pa.Table:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), snapshot=snapshot, **kwargs))
    return ctx.sql(sql).to_arrow_table()


def assert_reads_back(lake, table: str, expected: pa.Table, snapshot: int | None = None):
    """DuckDB and our reader (both paths) read exactly ``expected`` from ``table``."""
    sql = f"SELECT * FROM lake.main.{table}"
    assert_same_rows(duckdb_reads(lake, sql, snapshot), expected)
    assert_same_rows(ours_reads(lake, sql, snapshot), expected)
    assert_same_rows(ours_reads(lake, sql, snapshot, native=False), expected)


def assert_same_answers(lake, sql: str) -> None:
    """DuckDB and our reader give the same rows for ``sql`` at the latest snapshot."""
    assert_same_rows(ours_reads(lake, sql), duckdb_reads(lake, sql))


def assert_bounds_hold(lake, table: str = "t") -> None:
    """Each live file's min/max/null counts in the catalog against DuckDB's own reading
    of the file: counts equal, min/max equal (or, for cut text, a valid bound)."""
    pull(lake)
    columns = lake.reference(
        f"SELECT c.column_id, c.column_name, c.column_type FROM {META}.ducklake_column c "
        f"JOIN {META}.ducklake_table t USING (table_id) WHERE t.table_name = ? "
        "AND c.end_snapshot IS NULL AND c.parent_column IS NULL "
        "AND t.end_snapshot IS NULL",
        params=[table],
    ).to_pylist()
    listed = (
        lake.reference("SELECT data_file FROM ducklake_list_files('lake', ?)", params=[table])
        .column(0)
        .to_pylist()
    )
    ids = {
        row["path"].rsplit("/", 1)[-1]: row["data_file_id"]
        for row in lake.reference(
            f"SELECT data_file_id, path FROM {META}.ducklake_data_file WHERE end_snapshot IS NULL"
        ).to_pylist()
    }
    files = [{"data_file": p, "data_file_id": ids[p.rsplit("/", 1)[-1]]} for p in listed]
    for file in files:
        stats = {
            r["column_id"]: r
            for r in lake.reference(
                f"SELECT * FROM {META}.ducklake_file_column_stats WHERE data_file_id = ?",
                params=[file["data_file_id"]],
            ).to_pylist()
        }
        for column in columns:
            if column["column_type"] in ("struct", "list", "map"):
                continue
            row = stats[column["column_id"]]
            name = '"' + column["column_name"] + '"'
            # NaN is no bound (the catalog flags it in contains_nan)
            keep = f" FILTER (WHERE NOT isnan({name}))" if "float" in column["column_type"] else ""
            truth = lake.reference(
                f"SELECT count({name}) AS v, count(*) - count({name}) AS n, "
                f"CAST(min({name}){keep} AS VARCHAR) AS lo, "
                f"CAST(max({name}){keep} AS VARCHAR) AS hi FROM read_parquet(?)",
                params=[file["data_file"]],
            ).to_pylist()[0]
            what = f"{table}.{column['column_name']} in {file['data_file']}"
            assert (row["value_count"], row["null_count"]) == (truth["v"], truth["n"]), what
            if row["min_value"] is None or truth["lo"] is None:
                assert truth["lo"] is None or row["min_value"] is None, what
                continue
            _assert_bound(lake, column["column_type"], row["min_value"], truth["lo"], "<=", what)
            _assert_bound(lake, column["column_type"], truth["hi"], row["max_value"], "<=", what)


_CAST = {
    "varchar": "VARCHAR",
    "json": "VARCHAR",
    "blob": None,
    "boolean": "TINYINT",
}


def _assert_bound(lake, column_type: str, low: str, high: str, op: str, what: str) -> None:
    """``low <= high`` compared as the column's values (by DuckDB's casts)."""
    if column_type == "blob":
        return  # hex in the catalog, bytes in DuckDB's text: compared by the test of rows
    sql_type = _CAST.get(
        column_type,
        column_type.replace("float32", "FLOAT")
        .replace("float64", "DOUBLE")
        .replace("int8", "TINYINT")
        .replace("int16", "SMALLINT")
        .replace("int32", "INTEGER")
        .replace("int64", "BIGINT"),
    )
    if column_type.startswith("uint"):
        sql_type = {
            "uint8": "UTINYINT",
            "uint16": "USMALLINT",
            "uint32": "UINTEGER",
            "uint64": "UBIGINT",
        }[column_type]
    if column_type == "boolean":
        low, high = (
            {"true": "1", "false": "0"}.get(low, low),
            {"true": "1", "false": "0"}.get(high, high),
        )
    ok = lake.reference(
        f"SELECT CAST(? AS {sql_type}) {op} CAST(? AS {sql_type}) AS ok", params=[low, high]
    ).to_pylist()[0]["ok"]
    assert ok, f"{what}: bound {low!r} {op} {high!r} broken"


def catalog_rows(lake) -> dict[str, list]:
    """The catalog rows our writer must write as DuckDB does (ids kept: the same data
    written the same way gets the same ids; paths, sizes, times and uuids left out)."""

    def rows(sql: str) -> list:
        return [tuple(r.values()) for r in lake.reference(sql).to_pylist()]

    return {
        "columns": rows(
            f"SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order, "
            f"column_name, column_type, initial_default, default_value, nulls_allowed, "
            f"parent_column FROM {META}.ducklake_column ORDER BY ALL"
        ),
        "file_column_stats": rows(
            f"SELECT data_file_id, table_id, column_id, value_count, null_count, min_value, "
            f"max_value, contains_nan, extra_stats FROM {META}.ducklake_file_column_stats "
            "ORDER BY ALL"
        ),
        "data_files": rows(
            f"SELECT data_file_id, table_id, begin_snapshot, end_snapshot, file_order, "
            f"path_is_relative, file_format, record_count, row_id_start, partition_id, "
            f"encryption_key, mapping_id, partial_max FROM {META}.ducklake_data_file "
            "ORDER BY ALL"
        ),
        "table_stats": rows(
            f"SELECT table_id, record_count, next_row_id FROM {META}.ducklake_table_stats "
            "ORDER BY ALL"
        ),
        "table_column_stats": rows(
            f"SELECT * FROM {META}.ducklake_table_column_stats ORDER BY ALL"
        ),
        "snapshots": rows(
            f"SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
            f"FROM {META}.ducklake_snapshot ORDER BY ALL"
        ),
        "changes": rows(
            f"SELECT snapshot_id, changes_made, author, commit_message, commit_extra_info "
            f"FROM {META}.ducklake_snapshot_changes ORDER BY ALL"
        ),
        "tables": rows(
            f"SELECT table_id, begin_snapshot, end_snapshot, schema_id, table_name, path, "
            f"path_is_relative FROM {META}.ducklake_table ORDER BY ALL"
        ),
        "schema_versions": rows(f"SELECT * FROM {META}.ducklake_schema_versions ORDER BY ALL"),
        "partition_values": rows(
            f"SELECT * FROM {META}.ducklake_file_partition_value ORDER BY ALL"
        ),
        "partition_specs": rows(
            f"SELECT i.partition_id, i.table_id, i.begin_snapshot, i.end_snapshot, "
            f"c.partition_key_index, c.column_id, c.transform FROM {META}.ducklake_partition_info i "
            f"LEFT JOIN {META}.ducklake_partition_column c USING (partition_id, table_id) "
            "ORDER BY ALL"
        ),
        # the file's directory under the table's (a partition's Hive path), not its name
        "file_directories": rows(
            f"SELECT data_file_id, regexp_replace(path, '[^/]*$', '') "
            f"FROM {META}.ducklake_data_file ORDER BY ALL"
        ),
    }


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


def duckdb_writes(lake, first: pa.Table, second: pa.Table) -> None:
    """DuckDB writes ``first`` (``CREATE TABLE AS``), appends ``second``, and replaces the
    rows with ``first`` in one transaction with a commit message: what the catalog-row
    tests repeat with our writers."""
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
