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

import pyarrow as pa
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.writes import (
    META,
    PARTITIONED,
    assert_bounds_hold,
    catalog_rows,
    duckdb_writes,
    every_type,
    partitioned_rows,
)

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError, UnsupportedFeatureError

CELLS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]


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
    duckdb_writes(theirs, first, second)
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
