"""Writes to DuckLake 1.1 catalogs, each kept in its own form (never migrated).

No 1.1 writer installs here and DuckDB 1.5 cannot read a 1.1 catalog, so the oracles are
the 1.1 reference writer's own lake (``../shared/lakes/ducklake-1.1-dev1``: its answers and
its partition values for the same rows) and, on 1.0 lakes migrated as DuckDB 2.0 migrates
them, DuckDB's answer on the 1.0 form before our writes; our reader, checked against both
elsewhere, reads the result.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import SessionContext
from support.lake_formats import migrated_copy
from support.lakes import LakeSpec, assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, register

REFERENCE_LAKE = Path(__file__).resolve().parents[3] / "shared" / "lakes" / "ducklake-1.1-dev1"


def _read(args: dict, sql: str) -> pa.Table:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**args))
    return ctx.sql(sql).to_arrow_table()


@pytest.mark.parametrize(
    "spec", [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")], ids=lambda s: s.id
)
def test_writes_to_a_migrated_1_1_catalog(make_lake, spec):
    lake = make_lake(spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'inlined'), (2, 'inlined')")  # inlined rows
    lake.sql("INSERT INTO lake.main.t SELECT i, 'file' FROM range(10, 20) r(i)")
    before = lake.reference("SELECT * FROM lake.main.t")
    metadata, schema = migrated_copy(lake.metadata, lake.metadata_schema)
    args = {**lake.reader_args(), "metadata": metadata}
    if schema is not None:
        args["metadata_schema"] = schema
    catalog = DuckLakeCatalog(**args)
    more = pa.table({"id": pa.array([100, 101], pa.int64()), "name": ["ours", None]})
    catalog.table("main", "t").append(more)
    assert_same_rows(_read(args, "SELECT * FROM lake.main.t"), pa.concat_tables([before, more]))
    catalog.table("main", "t").overwrite(more)  # ends the inlined rows in 1.1's columns too
    assert_same_rows(_read(args, "SELECT * FROM lake.main.t"), more)
    catalog.create_table("main.u", more)
    assert_same_rows(_read(args, "SELECT * FROM lake.main.u"), more)
    with DuckLakeCatalog(**args) as reader, reader.backend.session() as session:
        assert session.rows("SELECT value FROM ducklake_metadata WHERE key = 'version'") == [
            ("1.1",)
        ]
        ours = session.rows(
            "SELECT count(*) FROM ducklake_data_file WHERE begin_snapshot > 3 AND "
            "row_group_count = 1"
        )
        assert ours == [(3,)]
        exact = session.rows(
            "SELECT count(*) FROM ducklake_file_column_stats s JOIN ducklake_data_file f "
            "USING (data_file_id) WHERE f.begin_snapshot > 3 AND s.min_is_exact IS NULL "
            "AND s.min_value IS NOT NULL"
        )
        assert exact == [(0,)]


@pytest.fixture
def reference_copy(tmp_path):
    if not (REFERENCE_LAKE / "catalog.ducklake").exists():
        pytest.skip(f"the reference 1.1 lake is not beside the clone ({REFERENCE_LAKE})")
    target = tmp_path / "lake"
    shutil.copytree(REFERENCE_LAKE, target)
    return {"metadata": str(target / "catalog.ducklake"), "data_path": str(target / "data") + "/"}


def _partition_values(metadata: str, table: str) -> set[tuple]:
    con = duckdb.connect(metadata, read_only=True)
    try:
        rows = con.execute(
            "SELECT v.data_file_id, v.partition_key_index, v.partition_value FROM "
            "ducklake_file_partition_value v JOIN ducklake_table t USING (table_id) "
            "WHERE t.table_name = ? ORDER BY 1, 2",
            [table],
        ).fetchall()
    finally:
        con.close()
    files: dict[int, list] = {}
    for file_id, _, value in rows:
        files.setdefault(file_id, []).append(value)
    return {tuple(values) for values in files.values()}


@pytest.mark.parametrize(("table", "key"), [("events", "ts"), ("days", "d")])
def test_epoch_partitions_as_the_1_1_writer_wrote_them(reference_copy, table, key):
    """Rows written again into the 1.1 writer's epoch-partitioned tables land in the
    partitions it recorded for the same rows (epoch_month / epoch_hour, epoch_day, dates
    before 1970 included)."""
    theirs = _partition_values(reference_copy["metadata"], table)
    rows = _read(reference_copy, f"SELECT * FROM lake.main.{table}")
    catalog = DuckLakeCatalog(**reference_copy)
    catalog.table("main", table).append(rows)
    both = _partition_values(reference_copy["metadata"], table)
    assert both == theirs  # our files fall in exactly the partitions it made
    doubled = _read(reference_copy, f"SELECT * FROM lake.main.{table}")
    assert_same_rows(doubled, pa.concat_tables([rows, rows]))
    # a filter on the key, pruned by the partition values: still every row
    limit = dt.datetime(2024, 1, 1) if key == "ts" else dt.date(1970, 1, 1)
    literal = "TIMESTAMP '2024-01-01'" if key == "ts" else "DATE '1970-01-01'"
    got = _read(
        reference_copy, f"SELECT count(*) AS n FROM lake.main.{table} WHERE {key} < {literal}"
    )
    expected = pc.sum(pc.less(rows[key], pa.scalar(limit, rows[key].type))).as_py()
    assert got.to_pylist() == [{"n": 2 * expected}]


def test_appends_to_the_1_1_writer_s_table_with_deletion_vectors(reference_copy):
    rows = _read(reference_copy, "SELECT * FROM lake.main.orders")
    new = rows.slice(0, 10)
    next_row_id = _one(
        reference_copy,
        "SELECT next_row_id FROM ducklake_table_stats s JOIN ducklake_table t USING (table_id) "
        "WHERE t.table_name = 'orders' AND t.end_snapshot IS NULL",
    )
    DuckLakeCatalog(**reference_copy).table("main", "orders").append(new)
    assert_same_rows(
        _read(reference_copy, "SELECT * FROM lake.main.orders"), pa.concat_tables([rows, new])
    )
    started = _one(
        reference_copy,
        "SELECT row_id_start FROM ducklake_data_file WHERE data_file_id = "
        "(SELECT max(data_file_id) FROM ducklake_data_file)",
    )
    assert started == next_row_id  # our rows' ids follow the writer's


def _one(args: dict, sql: str):
    con = duckdb.connect(args["metadata"], read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


ROW_CHANGES = [
    "DELETE FROM lake.main.t WHERE id IN (1, 12, 13)",  # an inlined row and file rows
    "UPDATE lake.main.t SET name = upper(name) WHERE id IN (2, 15)",
    (
        "MERGE INTO lake.main.t USING (SELECT * FROM (VALUES (16, 'm'), (90, 'new')) AS "
        "s(id, name)) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)"
    ),
]


@pytest.mark.parametrize(
    "spec", [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")], ids=lambda s: s.id
)
def test_row_changes_of_a_migrated_1_1_catalog_as_duckdb_changed_the_1_0_form(make_lake, spec):
    """DELETE (of inlined rows, ended in 1.1's ``_ducklake_end_snapshot``, and of file rows
    with a delete file), UPDATE and MERGE on the 1.1 copy: every row with its rowid as
    DuckDB's own statements left the 1.0 twin."""
    import ducklake_datafusion

    lakes = []
    for _ in range(2):
        lake = make_lake(spec, inline_limit=5)
        lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
        lake.sql("INSERT INTO lake.main.t VALUES (1, 'inlined'), (2, 'inlined')")
        lake.sql("INSERT INTO lake.main.t SELECT i, 'file' FROM range(10, 20) r(i)")
        lake.sql("DELETE FROM lake.main.t WHERE id = 11")
        lake.detach()
        lakes.append(lake)
    ours, theirs = lakes
    for statement in ROW_CHANGES:
        theirs.sql(statement)
    theirs.detach()
    metadata, schema = migrated_copy(ours.metadata, ours.metadata_schema)
    args = {**ours.reader_args(), "metadata": metadata}
    if schema is not None:
        args["metadata_schema"] = schema
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**args))
    for statement in ROW_CHANGES:
        ducklake_datafusion.sql(ctx, statement).collect()
    # our rows with their row ids: the rows a change would target (``ChangeTarget``)
    from ducklake_datafusion.provider._change_target import ChangeTarget

    table = DuckLakeCatalog(**args).table("main", "t")
    got = ChangeTarget(table).scanner(columns=["rowid", "id", "name"]).to_table()
    expected = theirs.reference("SELECT rowid, * FROM lake.main.t")
    new = pc.greater_equal(expected["id"], 90)  # (a MERGE's inserts: ids in the join's order)
    mine = pc.greater_equal(got["id"], 90)
    assert_same_rows(got.filter(pc.invert(mine)), expected.filter(pc.invert(new)))
    assert_same_rows(
        got.filter(mine).drop_columns("rowid"), expected.filter(new).drop_columns("rowid")
    )
    query = "SELECT * FROM lake.main.t"
    assert_same_rows(_read(args, query), got.drop_columns("rowid"))
    assert_same_rows(_read({**args, "native": False}, query), got.drop_columns("rowid"))


def test_deletes_and_updates_over_the_1_1_writer_s_deletion_vectors(reference_copy):
    """Rows of files whose deletes the 1.1 writer keeps in Puffin deletion vectors: our
    cumulative delete file holds its positions and ours (each with its snapshot), the
    vector's file is replaced, and the earlier snapshot still reads as before."""
    before = DuckLakeCatalog(**reference_copy).snapshot_id()
    pinned = {**reference_copy, "snapshot": before}
    rows = _read(pinned, "SELECT * FROM lake.main.orders")
    names = ", ".join(
        "CAST(CASE WHEN id % 5 = 2 THEN priority + 100 ELSE priority END AS INT) AS priority"
        if name == "priority"
        else name
        for name in rows.column_names
    )
    expected = _read(pinned, f"SELECT {names} FROM lake.main.orders WHERE id % 5 <> 1")
    deleted = DuckLakeCatalog(**reference_copy).table("main", "orders").delete("id % 5 = 1")
    updated = (
        DuckLakeCatalog(**reference_copy)
        .table("main", "orders")
        .update({"priority": "priority + 100"}, "id % 5 = 2")
    )
    assert deleted.deleted == rows.num_rows - expected.num_rows > 0
    assert updated.updated > 0
    for native in (True, False):
        got = _read({**reference_copy, "native": native}, "SELECT * FROM lake.main.orders")
        assert_same_rows(got, expected)
    assert_same_rows(_read(pinned, "SELECT * FROM lake.main.orders"), rows)
    formats = _one(
        reference_copy,
        "SELECT string_agg(DISTINCT format, ',' ORDER BY format) FROM ducklake_delete_file "
        "WHERE end_snapshot IS NULL",
    )
    assert formats == "parquet"  # the vectors' rows replaced by our cumulative files
