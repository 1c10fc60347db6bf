"""DataFusion writes to a lake: ``INSERT INTO``, ``INSERT OVERWRITE``, ``CREATE TABLE AS``,
``CREATE TABLE``, ``DataFrame.write_table``; each read back by DuckDB.

The rows DataFusion inserts stream through the Rust provider's sink into the
engine-neutral writer (``rust/src/sink.rs``, ``provider/_writable.py``); the source of an
insert may be a lake table itself (its scan runs while the insert writes).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.lakes import assert_same_rows
from support.writes import assert_bounds_hold, duckdb_reads

from ducklake_datafusion import DuckLakeCatalog, errors, register


@pytest.fixture
def sql_lake(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'duck')")
    lake.detach()
    return lake


def _ctx(lake, **kwargs) -> SessionContext:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return ctx


def _count(result) -> int:
    return result.to_pylist()[0]["count"]


def test_insert_into_values_and_select(sql_lake):
    ctx = _ctx(sql_lake)
    assert (
        _count(ctx.sql("INSERT INTO lake.main.t VALUES (2, 'two'), (3, NULL)").to_arrow_table())
        == 2
    )
    ctx.register_record_batches(
        "source", [pa.table({"k": list(range(10, 1010)), "v": ["x"] * 1000}).to_batches()]
    )
    inserted = ctx.sql("INSERT INTO lake.main.t SELECT k, v || k FROM source WHERE k % 2 = 0")
    assert _count(inserted.to_arrow_table()) == 500
    expected = ctx.sql("SELECT * FROM lake.main.t").to_arrow_table()
    assert expected.num_rows == 503
    assert_same_rows(duckdb_reads(sql_lake, "SELECT * FROM lake.main.t"), expected)
    assert_bounds_hold(sql_lake)
    # a new query sees the new snapshot; the changes feed lists our inserts
    changes = duckdb_reads(sql_lake, "SELECT count(*) AS n FROM lake.table_changes('t', 3, 4)")
    assert changes.to_pylist() == [{"n": 502}]


def test_insert_from_a_lake_table_and_overwrite(sql_lake):
    ctx = _ctx(sql_lake)
    ctx.sql("INSERT INTO lake.main.t SELECT id + 10, name FROM lake.main.t").collect()
    ctx.sql("INSERT INTO lake.main.t SELECT id + 100, name FROM lake.main.t").collect()
    got = duckdb_reads(sql_lake, "SELECT id FROM lake.main.t ORDER BY id").column(0).to_pylist()
    assert got == [1, 11, 101, 111]
    ctx.sql("INSERT OVERWRITE lake.main.t SELECT id * 2, 'over' FROM lake.main.t").collect()
    got = duckdb_reads(sql_lake, "SELECT id, name FROM lake.main.t ORDER BY id").to_pylist()
    assert got == [{"id": i * 2, "name": "over"} for i in (1, 11, 101, 111)]
    # time travel still sees the rows the overwrite replaced
    before = duckdb_reads(sql_lake, "SELECT count(*) AS n FROM lake.main.t AT (VERSION => 4)")
    assert before.to_pylist() == [{"n": 4}]


def test_create_table_as_and_create_table(make_lake):
    lake = make_lake()
    ctx = _ctx(lake)
    ctx.sql(
        "CREATE TABLE lake.main.c AS SELECT CAST(v AS BIGINT) AS id, 'n' || v AS name, "
        "[v, v + 1] AS pair FROM (VALUES (1), (2), (3)) AS s(v)"
    ).collect()
    ctx.sql("CREATE TABLE lake.main.e (a INT, b VARCHAR, d DATE)").collect()
    ctx.sql("INSERT INTO lake.main.e VALUES (1, 'x', DATE '2024-01-01')").collect()
    c = duckdb_reads(lake, "SELECT * FROM lake.main.c ORDER BY id")
    assert c.to_pylist() == [
        {"id": 1, "name": "n1", "pair": [1, 2]},
        {"id": 2, "name": "n2", "pair": [2, 3]},
        {"id": 3, "name": "n3", "pair": [3, 4]},
    ]
    assert_same_rows(
        duckdb_reads(lake, "SELECT * FROM lake.main.e"),
        ctx.sql("SELECT * FROM lake.main.e").to_arrow_table(),
    )
    types = duckdb_reads(
        lake,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'e' ORDER BY ordinal_position",
    ).to_pylist()
    assert [t["data_type"] for t in types] == ["INTEGER", "VARCHAR", "DATE"]
    with pytest.raises(Exception, match="already exists"):
        ctx.sql("CREATE TABLE lake.main.c AS SELECT 1 AS id").collect()


def test_dataframe_write_table(sql_lake):
    ctx = _ctx(sql_lake)
    frame = ctx.from_pydict({"id": [5, 6], "name": ["five", "six"]})
    frame.write_table("lake.main.t")
    got = duckdb_reads(sql_lake, "SELECT id FROM lake.main.t ORDER BY id").column(0).to_pylist()
    assert got == [1, 5, 6]


def test_old_snapshots_and_pinned_catalogs_take_no_inserts(sql_lake):
    ctx = _ctx(sql_lake)
    with pytest.raises(Exception, match="read-only"):
        ctx.sql("INSERT INTO lake.main.\"t@v2\" VALUES (9, 'x')").collect()
    pinned = _ctx(sql_lake, snapshot=2)
    with pytest.raises(Exception, match="read-only"):
        pinned.sql("INSERT INTO lake.main.t VALUES (9, 'x')").collect()
    assert duckdb_reads(sql_lake, "SELECT count(*) AS n FROM lake.main.t").to_pylist() == [{"n": 1}]


def test_insert_errors_are_ours(sql_lake):
    ctx = _ctx(sql_lake)
    lake = DuckLakeCatalog(**sql_lake.reader_args())
    table = lake.table("main", "t")
    sql_lake.sql("DROP TABLE lake.main.t")
    sql_lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    sql_lake.detach()
    # the provider resolved before the table was replaced: the insert must not land
    from ducklake_datafusion.provider._writable import InsertWriter

    writer = InsertWriter(table)
    with pytest.raises(errors.CommitConflictError, match="replaced"):
        writer(
            pa.RecordBatchReader.from_batches(
                pa.schema([("id", pa.int64()), ("name", pa.string())]),
                pa.table({"id": [1], "name": ["x"]}).to_batches(),
            ),
            False,
        )
    with pytest.raises(Exception) as raised:
        ctx.sql("INSERT INTO lake.main.t SELECT 'not a number', 'x'").collect()
    assert isinstance(errors.typed(raised.value), errors.UnsupportedTypeError) or (
        "Cast error" in str(raised.value)
    )


def test_the_command_line_runs_writes(sql_lake):
    from support.cli import run_cli

    args = sql_lake.reader_args()
    done = run_cli("sql", args["metadata"], "INSERT INTO lake.main.t VALUES (7, 'cli'), (8, 'x')")
    assert done.returncode == 0, done.stderr
    assert "2" in done.stdout  # the row count DataFusion returns
    done = run_cli("sql", args["metadata"], "CREATE TABLE lake.main.c AS SELECT 1 AS one")
    assert done.returncode == 0, done.stderr
    got = duckdb_reads(sql_lake, "SELECT id FROM lake.main.t ORDER BY id").column(0).to_pylist()
    assert got == [1, 7, 8]
    assert duckdb_reads(sql_lake, "SELECT * FROM lake.main.c").to_pylist() == [{"one": 1}]


def test_insert_of_an_aggregate_over_many_partitions(sql_lake):
    """The insert's input is optimized by DataFusion as any query (a grouped aggregate
    across repartitioned inputs), and every partition of it is written."""
    ctx = _ctx(sql_lake)
    ctx.register_record_batches(
        "source",
        [
            [b]
            for b in pa.table(
                {"k": list(range(20_000)), "g": [i % 37 for i in range(20_000)]}
            ).to_batches(max_chunksize=1000)
        ],
    )
    ctx.sql(
        "CREATE TABLE lake.main.agg AS SELECT g, count(*) AS n, sum(k) AS s FROM source GROUP BY g"
    ).collect()
    ctx.sql(
        "INSERT INTO lake.main.agg SELECT g + 100, count(*), sum(k) FROM source "
        "WHERE k % 3 = 0 GROUP BY g"
    ).collect()
    got = duckdb_reads(sql_lake, "SELECT count(*) AS groups, sum(n) AS n FROM lake.main.agg")
    assert got.to_pylist() == [{"groups": 74, "n": 20_000 + 6_667}]


def test_a_writer_error_reaches_the_user_as_ours(make_lake):
    """The Python writer refuses (a partitioning it does not write): the INSERT fails with
    our class and message, recovered by ``errors.raised_as_ours``, and nothing is written."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.h (id DECIMAL(30, 2))")
    lake.sql("ALTER TABLE lake.main.h SET PARTITIONED BY (bucket(4, id))")
    lake.detach()
    ctx = _ctx(lake)
    with pytest.raises(errors.UnsupportedFeatureError, match="bucket"), errors.raised_as_ours():
        ctx.sql("INSERT INTO lake.main.h VALUES (1)").collect()
    assert duckdb_reads(lake, "SELECT count(*) AS n FROM lake.main.h").to_pylist() == [{"n": 0}]


def test_tables_the_native_scan_does_not_read_take_sql_inserts(make_lake):
    """A table with columns the native scan does not read (nested, time, UUID) is read by
    the exact reader behind a Rust provider (``_exact_scan``), which takes inserts too: an
    insert of literals, one of its own rows, then DuckDB and both of our reads agree."""
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.l (id BIGINT, tags VARCHAR[], t TIME, u UUID, "
        "s STRUCT(a INT, b VARCHAR), m MAP(VARCHAR, INT))"
    )
    lake.sql(
        "INSERT INTO lake.main.l VALUES (1, ['a'], TIME '01:02:03', "
        "'00000000-0000-0000-0000-000000000001', {'a': 1, 'b': 'x'}, MAP {'k': 1})"
    )
    lake.detach()
    ctx = _ctx(lake)
    plan = ctx.sql("EXPLAIN SELECT * FROM lake.main.l").to_arrow_table().to_pylist()
    assert "DuckLakeExactScanExec" in str(plan)
    ctx.sql("INSERT INTO lake.main.l VALUES (2, ['b', NULL], NULL, NULL, NULL, NULL)").collect()
    inserted = ctx.sql(
        "INSERT INTO lake.main.l SELECT id + 10, tags, t, u, s, m FROM lake.main.l WHERE id = 1"
    )
    assert _count(inserted.to_arrow_table()) == 1
    query = "SELECT * FROM lake.main.l"
    ours = ctx.sql(query).to_arrow_table()
    assert ours.num_rows == 3
    assert_same_rows(duckdb_reads(lake, query), ours)
    read_only = _ctx(lake, snapshot=4)  # the pyarrow.dataset adapter, as before
    assert_same_rows(read_only.sql(query).to_arrow_table(), ours)
    assert _count(ctx.sql("SELECT count(*) AS count FROM lake.main.l").to_arrow_table()) == 3
    assert ctx.sql("SELECT id FROM lake.main.l WHERE id > 1 ORDER BY id").to_pydict() == {
        "id": [2, 11]
    }
    assert ctx.sql("SELECT id FROM lake.main.l LIMIT 1").to_arrow_table().num_rows == 1
    assert_bounds_hold(lake, "l")


def test_a_catalog_read_exactly_takes_sql_inserts(sql_lake):
    """``native=False``: every table is read by the exact reader, and still writable."""
    ctx = _ctx(sql_lake, native=False)
    ctx.sql("INSERT INTO lake.main.t VALUES (2, 'two')").collect()
    ctx.sql("INSERT INTO lake.main.t SELECT id + 10, name FROM lake.main.t").collect()
    query = "SELECT * FROM lake.main.t"
    ours = ctx.sql(query).to_arrow_table()
    assert sorted(ours.column("id").to_pylist()) == [1, 2, 11, 12]
    assert_same_rows(duckdb_reads(sql_lake, query), ours)
    assert_same_rows(_ctx(sql_lake).sql(query).to_arrow_table(), ours)


def test_the_exact_readers_errors_are_ours(sql_lake):
    """A data file gone under the exact reader: the query fails with our class."""
    import os

    ctx = _ctx(sql_lake, native=False)
    for path in DuckLakeCatalog(**sql_lake.reader_args()).table("main", "t").files()["data_file"]:
        os.remove(path.as_py())
    with pytest.raises(errors.DataFileMissingError), errors.raised_as_ours():
        ctx.sql("SELECT * FROM lake.main.t").collect()


def test_insert_of_a_parquet_files_uuids(make_lake, tmp_path):
    """A Parquet file DuckDB wrote with a UUID column holds 16 bytes per value, which
    DataFusion cannot cast to the text a lake's UUID column is in DataFusion: the INSERT
    fails in DataFusion's planning, typed as ours with the cast to use; with that cast the
    lake holds the file's UUIDs, as DuckDB reads them; ``append`` takes the bytes as they
    are."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (u UUID, i INTEGER)")
    source = str(tmp_path / "uuids.parquet")
    lake.sql(f"COPY (SELECT uuid() AS u, i::INTEGER AS i FROM range(5) r(i)) TO '{source}'")
    lake.detach()
    expected = lake.reference(f"SELECT * FROM read_parquet('{source}')")
    ctx = _ctx(lake)
    ctx.register_parquet("src", source)
    refused = pytest.raises(errors.UnsupportedTypeError, match=r"encode\(column, 'hex'\)")
    with refused, errors.raised_as_ours():
        ctx.sql("INSERT INTO lake.main.t SELECT * FROM src").collect()
    assert lake.reference("SELECT count(*) AS n FROM lake.main.t").to_pylist() == [{"n": 0}]

    ctx.sql("INSERT INTO lake.main.t SELECT encode(u, 'hex'), i FROM src").collect()
    assert_same_rows(duckdb_reads(lake, "SELECT * FROM lake.main.t"), expected)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    table.append(ctx.table("src").to_arrow_table())  # FixedSizeBinary(16), as read
    doubled = pa.concat_tables([expected, expected])
    assert_same_rows(duckdb_reads(lake, "SELECT * FROM lake.main.t"), doubled)
