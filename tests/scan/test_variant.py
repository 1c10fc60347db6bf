"""VARIANT columns read as the JSON text DuckDB gives for ``CAST(v AS JSON)``.

DuckDB cannot export VARIANT to Arrow, so the oracle is its JSON cast of the same rows.
Values cover every primitive of the Variant encoding, nested objects and arrays, rows
that shred (same shape in every row) and rows that do not (mixed shapes leave residual
binary values), NULLs, inlined rows (DuckDB catalogs inline VARIANT), deletes and time
travel.
"""

from __future__ import annotations

import pytest
from support.lakes import assert_same_rows
from support.readcheck import ours

VALUES = [
    "42", "'hello'", "{'a': 1, 'b': [1, 2, 3]}", "NULL", "[1.5, NULL, 2.5]",
    "3.25::DECIMAL(10, 2)", "(-1234567890123.45678)::DECIMAL(38, 5)", "DATE '2024-01-02'",
    "TIMESTAMP '2024-01-02 03:04:05.123456'", "TIMESTAMPTZ '2024-01-02 03:04:05.5+00'",
    "TIMESTAMP_NS '2024-01-02 03:04:05.123456789'", "'x\\xAAy'::BLOB", "1e300::DOUBLE",
    "1e-5::DOUBLE", "(-0.0)::DOUBLE", "'nan'::DOUBLE", "0.1::FLOAT", "123456789012::BIGINT",
    "true", "false", "(-7)::TINYINT", "300::SMALLINT",
    "UUID '12345678-1234-5678-1234-567812345678'", "TIME '01:02:03.5'",
    "{'nested': {'deep': [{'q': NULL}, {'q': 5}]}, 'z': 'last'}", "[]::INT[]",
    "{'a': 'text instead of int', 'c': [true]}", "'a\"b' || chr(10) || chr(1) || 'é'",
    "[[1, 2], [3]]", "{'b': 1, 'a': 2}",
]  # fmt: skip


def _fill(lake, table: str, values) -> None:
    rows = ", ".join(f"({i}, ({v})::VARIANT)" for i, v in enumerate(values))
    lake.sql(f"INSERT INTO lake.main.{table} VALUES {rows}")


def _expected(lake, sql_filter: str = "", snapshot: int | None = None):
    at = f" AT (VERSION => {snapshot})" if snapshot is not None else ""
    return lake.reference(
        f"SELECT id, CAST(v AS JSON)::VARCHAR AS v FROM lake.main.t{at} {sql_filter}"
    )


def test_variant_values(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=4)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, v VARIANT)")
    _fill(lake, "t", VALUES)  # one file, mixed shapes
    lake.sql(
        "INSERT INTO lake.main.t SELECT 100 + i, {'k': i, 's': 'v' || i}::VARIANT "
        "FROM range(50) r(i)"
    )  # a file whose rows all shred
    lake.sql("INSERT INTO lake.main.t VALUES (900, [1, 2]::VARIANT), (901, NULL)")  # inlined
    first = lake.snapshot_id()
    lake.sql("DELETE FROM lake.main.t WHERE id % 7 = 3")
    cases = [
        ("SELECT id, v FROM lake.main.t", _expected(lake)),
        ("SELECT id, v FROM lake.main.t WHERE id >= 100", _expected(lake, "WHERE id >= 100")),
        (f'SELECT id, v FROM lake.main."t@v{first}"', _expected(lake, snapshot=first)),
    ]
    for sql, expected in cases:
        assert_same_rows(ours(lake, sql), expected)


@pytest.mark.parametrize("value", VALUES[:6])
def test_variant_through_flush(make_lake, value):
    """Inlined VARIANT rows flushed to Parquet read the same before and after."""
    lake = make_lake(inline_limit=10)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, v VARIANT)")
    _fill(lake, "t", [value, value])
    before = _expected(lake)
    assert_same_rows(ours(lake, "SELECT id, v FROM lake.main.t"), before)
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    assert_same_rows(ours(lake, "SELECT id, v FROM lake.main.t"), _expected(lake))


def test_damaged_variant_names_the_file(make_lake):
    import glob
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, v VARIANT)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 42::VARIANT)")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER")  # the file goes to the per-file reader
    lake.reader_args()
    (path,) = glob.glob(os.path.join(lake.data_path, "**", "*.parquet"), recursive=True)
    table = pq.read_table(path)
    v = table.column("v").combine_chunks()
    broken = pa.StructArray.from_arrays(
        [pa.array([b"\x07"], pa.binary()), v.field("value")], names=["metadata", "value"]
    )  # metadata of an unknown version
    fields = [table.schema.field("id"), table.schema.field("v").with_type(broken.type)]
    pq.write_table(pa.table([table.column("id"), broken], schema=pa.schema(fields)), path)
    with pytest.raises(Exception) as info:
        ours(lake, "SELECT v FROM lake.main.t")
    text = str(info.value)
    assert "DataFileCorruptError" in text and os.path.basename(path) in text and "main.t" in text
