"""``bucket(N)`` partitions: every row in the bucket DuckDB's writer puts it in.

DuckDB prunes a bucketed table by the bucket of an equality filter's value, so a row we
put in another bucket than DuckDB would is a row its readers miss. The oracle is DuckDB
itself: the same rows written by DuckDB into one lake and by us into another give the
same catalog rows (files, partition values, statistics), and DuckDB's ``murmur3_32``
agrees with ours value by value.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.lakes import assert_same_rows
from support.writes import META, assert_bounds_hold, catalog_rows

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError, UnsupportedFeatureError

# column type -> a value of row i (NULL for the last row), each hashed in its own form
VALUES = {
    "TINYINT": "(i - 20)::TINYINT",
    "SMALLINT": "(i * 997 - 20000)::SMALLINT",
    "INTEGER": "(i * 1000003 - 7)::INTEGER",
    "BIGINT": "(i * 100000000003 - 7)::BIGINT",
    "UTINYINT": "i::UTINYINT",
    "UBIGINT": "(i * 1234567891011)::UBIGINT",
    "BOOLEAN": "i % 3 = 0",
    "FLOAT": "CASE WHEN i = 0 THEN -0.0 ELSE i / 3.0 - 5 END::FLOAT",
    "DOUBLE": "CASE WHEN i = 1 THEN -0.0 ELSE i / 7.0 - 2 END::DOUBLE",
    "VARCHAR": "'v' || i || CASE WHEN i % 2 = 0 THEN 'é' ELSE '' END",
    "BLOB": "('b' || i)::BLOB",
    "JSON": "('{\"a\": ' || i || '}')::JSON",
    "DATE": "DATE '1969-12-01' + (i * 37)::INTEGER",
    "TIME": "TIME '00:00:00' + INTERVAL (i * 1234) SECOND",
    "TIMESTAMP": "TIMESTAMP '1969-12-31 23:00:00' + INTERVAL (i * 98765) SECOND",
    "TIMESTAMP_S": "(TIMESTAMP '2020-01-01' + INTERVAL (i * 98765) SECOND)::TIMESTAMP_S",
    "TIMESTAMP_MS": "(TIMESTAMP '2020-01-01' + INTERVAL (i * 98765) MILLISECOND)::TIMESTAMP_MS",
    "TIMESTAMP_NS": "(TIMESTAMP '2020-01-01' + INTERVAL (i * 98765) MICROSECOND)::TIMESTAMP_NS",
    "TIMESTAMPTZ": "(TIMESTAMP '2020-01-01' + INTERVAL (i * 98765) SECOND)::TIMESTAMPTZ",
    "DECIMAL(4,1)": "(i * 1.5 - 20)::DECIMAL(4,1)",
    "DECIMAL(9,2)": "(i * 1.25 - 7)::DECIMAL(9,2)",
    "DECIMAL(18,4)": "(i * 123456.789 - 7)::DECIMAL(18,4)",
    "UUID": "md5(i::VARCHAR)::UUID",
}
ROWS = 40


def _name(column_type: str) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in column_type.lower())


def _rows_sql(column_type: str) -> str:
    value = VALUES[column_type]
    return (
        f"SELECT i::INTEGER AS k, CASE WHEN i < {ROWS - 1} THEN {value} END AS v "
        f"FROM range({ROWS}) r(i)"
    )


def test_bucket_partitions_equal_duckdbs(make_lake):
    """One bucketed table per type DuckDB hashes: the same files, partition values and
    statistics as DuckDB's, and DuckDB's own pruning finds the rows."""
    theirs = make_lake(inline_limit=0, name="theirs")
    ours = make_lake(inline_limit=0, name="ours")
    data = {}
    for lake in (theirs, ours):
        for column_type in VALUES:
            name = _name(column_type)
            lake.sql(f"CREATE TABLE lake.main.{name} (k INTEGER, v {column_type})")
            lake.sql(f"ALTER TABLE lake.main.{name} SET PARTITIONED BY (bucket(5, v))")
    for column_type in VALUES:
        name = _name(column_type)
        theirs.sql(f"INSERT INTO lake.main.{name} {_rows_sql(column_type)}")
        data[name] = theirs.attach().sql(_rows_sql(column_type)).to_arrow_table()
    theirs.detach()
    ours.detach()
    catalog = DuckLakeCatalog(**ours.reader_args())
    for name, rows in data.items():
        catalog.table("main", name).append(rows)
    expected, actual = catalog_rows(theirs), catalog_rows(ours)
    for part in expected:
        assert actual[part] == expected[part], part
    # an equality DuckDB prunes by bucket: each value found only in the bucket it computes
    found = " UNION ALL ".join(
        f"SELECT '{name}' AS t, k FROM lake.main.{name} WHERE v = (SELECT v FROM "
        f"lake.main.{name} WHERE k = 11)"
        for name in map(_name, VALUES)
    )
    got = ours.reference(found)
    assert_same_rows(got, theirs.reference(found))
    assert set(got.column("t").to_pylist()) == set(map(_name, VALUES))


def test_our_hash_is_duckdbs(make_lake):
    """Value by value, our bucket of each type against DuckDB's ``murmur3_32``."""
    from ducklake_datafusion.write._buckets import bucket_values
    from ducklake_datafusion.write._types import conform, file_schema

    lake = make_lake(inline_limit=0)
    for column_type in VALUES:
        name = _name(column_type)
        lake.sql(f"CREATE TABLE lake.main.{name} (k INTEGER, v {column_type})")
        lake.sql(f"INSERT INTO lake.main.{name} {_rows_sql(column_type)}")
    lake.detach()
    catalog = DuckLakeCatalog(**lake.reader_args())
    con = lake.attach()
    for column_type in VALUES:
        name = _name(column_type)
        expected = con.sql(
            f"SELECT (murmur3_32(v) & 2147483647) % 1009 AS b FROM ({_rows_sql(column_type)}) "
            "ORDER BY k"
        ).to_arrow_table()["b"]
        column = catalog.table("main", name)
        rows = conform(
            con.sql(f"{_rows_sql(column_type)} ORDER BY k").to_arrow_table(),
            file_schema(column.columns),
            name,
        )
        ours = bucket_values(rows["v"].combine_chunks(), column.columns[1].type_name, 1009)
        assert ours.to_pylist() == expected.to_pylist(), column_type
    lake.detach()


def test_buckets_we_do_not_compute_are_refused_by_name(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.w (v DECIMAL(30,2))")
    lake.sql("ALTER TABLE lake.main.w SET PARTITIONED BY (bucket(4, v))")
    lake.detach()
    catalog = DuckLakeCatalog(**lake.reader_args())
    rows = pa.table({"v": pa.array([1], pa.decimal128(30, 2))})
    with pytest.raises(UnsupportedFeatureError, match=r"bucket partitioning of a decimal\(30,2\)"):
        catalog.table("main", "w").append(rows)
    with pytest.raises(InvalidOptionError, match=r"bucket\(N, column\)"):
        catalog.create_table("main.u", pa.table({"a": [1]}), partitioned_by=["bucket(0, a)"])


def test_create_a_bucketed_table(make_lake):
    """``partitioned_by=["bucket(8, id)", "s"]``: the spec as DuckDB spells it, rows in
    DuckDB's buckets (DuckDB writes after us into the same spec and reads all back)."""
    lake = make_lake(inline_limit=0)
    catalog = DuckLakeCatalog(**lake.reader_args())
    rows = pa.table({"id": list(range(100)), "s": ["x", "y"] * 50})
    catalog.create_table("main.t", rows, partitioned_by=["bucket(8, id)", "s"])
    spec = (
        lake.reference(
            f"SELECT transform FROM {META}.ducklake_partition_column ORDER BY partition_key_index"
        )
        .column(0)
        .to_pylist()
    )
    assert spec == ["bucket(8)", "identity"]
    lake.sql("INSERT INTO lake.main.t SELECT id % 50, s FROM lake.main.t")
    lake.detach()
    # DuckDB prunes each equality by its bucket: the rows we wrote and the rows it wrote
    # after us are both found in it
    for key in (0, 7, 42, 49):
        got = lake.reference(f"SELECT count(*) AS n FROM lake.main.t WHERE id = {key}")
        assert got.to_pylist() == [{"n": 3}], key
    assert lake.reference("SELECT count(*) AS n FROM lake.main.t").to_pylist() == [{"n": 200}]
    assert_bounds_hold(lake)
