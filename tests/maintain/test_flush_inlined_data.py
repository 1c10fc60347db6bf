"""``flush_inlined_data`` against a twin lake: DuckDB flushes an identical lake.

DuckDB builds both lakes with the same statements, small enough to stay inlined in the
catalog (inserts, deletes, updates, an ALTER, partitions, positions of a file deleted
through the catalog); DuckDB runs ``CALL ducklake_flush_inlined_data`` on one, we flush the
other. Then both return the same rows, every snapshot of every table reads the same rows
with the same ``rowid`` on both (time travel across the flush), the change feed is the
same, the catalog rows are DuckDB's (the flushed files' snapshots, row ids, statistics and
delete files, the replaced delete files scheduled, ``inline_flush``, the inlined tables
emptied or dropped), our readers agree, and DuckDB's own writes, flush and compaction
after ours work.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.lakes import ORACLE_SETTINGS, LakeSpec, assert_same_rows
from support.twins import twin_lakes
from support.writes import META, duckdb_reads

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import CommitConflictError, UnsupportedFeatureError
from ducklake_datafusion.maintain._flush import FlushResult, flush_inlined_data
from ducklake_datafusion.scan import Lake

LIMIT = 50  # DATA_INLINING_ROW_LIMIT of every lake here
INTERNAL = ["_ducklake_internal_row_id", "_ducklake_internal_snapshot_id"]

PLAIN = [
    "CREATE TABLE lake.main.t (id INTEGER, v VARCHAR, d DOUBLE)",
    "INSERT INTO lake.main.t VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, 'c', 3.5)",
    "INSERT INTO lake.main.t VALUES (4, 'd', 4.5), (5, NULL, 5.5)",
    "DELETE FROM lake.main.t WHERE id = 2",
    "UPDATE lake.main.t SET v = 'x' WHERE id = 4",
    "INSERT INTO lake.main.t VALUES (6, 'f', 6.5)",
]
# f: a file with positions deleted through the catalog; g: the same after a delete file
FILE_DELETES = [
    "CREATE TABLE lake.main.f (id INTEGER)",
    "INSERT INTO lake.main.f SELECT range FROM range(200)",
    "DELETE FROM lake.main.f WHERE id < 3",
    "DELETE FROM lake.main.f WHERE id = 10",
    "CREATE TABLE lake.main.g (id INTEGER, s VARCHAR)",
    "INSERT INTO lake.main.g SELECT range, 's' || range FROM range(300)",
    "DELETE FROM lake.main.g WHERE id >= 150",
    "DELETE FROM lake.main.g WHERE id = 5",
]
ALTERED = [
    "CREATE TABLE lake.main.t (id INTEGER, v VARCHAR)",
    "INSERT INTO lake.main.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    "ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7",
    "INSERT INTO lake.main.t VALUES (4, 'd', 40), (5, 'e', 50)",
    "DELETE FROM lake.main.t WHERE id = 1",
    "UPDATE lake.main.t SET v = 'bb' WHERE id = 2",
    "UPDATE lake.main.t SET v = 'ee' WHERE id = 5",
]
PARTITIONED = [
    "CREATE TABLE lake.main.p (id INTEGER, cat VARCHAR, ts DATE)",
    "ALTER TABLE lake.main.p SET PARTITIONED BY (cat)",
    (
        "INSERT INTO lake.main.p VALUES (1, 'a', '2020-01-05'), (2, 'b', '2021-03-01'), "
        "(3, 'a', '2020-02-01')"
    ),
    "INSERT INTO lake.main.p VALUES (4, 'b', '2020-01-09'), (5, NULL, NULL)",
    "DELETE FROM lake.main.p WHERE id = 3",
    "CREATE TABLE lake.main.q (id INTEGER, ts DATE)",
    "ALTER TABLE lake.main.q SET PARTITIONED BY (year(ts), month(ts))",
    "INSERT INTO lake.main.q VALUES (1, '2020-01-05'), (2, '2020-02-01'), (3, '2021-01-01')",
    # rows inlined before the table is partitioned, then after
    "CREATE TABLE lake.main.r (id INTEGER, k INTEGER)",
    "INSERT INTO lake.main.r VALUES (1, 1), (2, 2)",
    "ALTER TABLE lake.main.r SET PARTITIONED BY (k)",
    "INSERT INTO lake.main.r VALUES (3, 1), (4, 2)",
]

CASES = {
    "deletes_updates_and_file_deletions": PLAIN + FILE_DELETES,
    "schema_versions_and_partitions": ALTERED + PARTITIONED,
}


@contextmanager
def _oracle(lake):
    """DuckDB's reads of ``lake``, as many as wanted on one READ_ONLY attach (each
    ``Lake.reference`` attaches anew)."""
    con = lake._attach("oracle", ["READ_ONLY"])
    con.execute(ORACLE_SETTINGS)
    try:
        yield lambda sql: con.execute(sql).to_arrow_table()
    finally:
        con.execute("RESET disabled_optimizers")
        lake.detach()


def _tables(read) -> list[tuple[str, str, int]]:
    rows = read(
        f"SELECT s.schema_name, t.table_name, t.begin_snapshot FROM {META}.ducklake_table t "
        f"JOIN {META}.ducklake_schema s USING (schema_id) WHERE t.end_snapshot IS NULL "
        "ORDER BY t.table_id"
    )
    return [tuple(r.values()) for r in rows.to_pylist()]


def _state(lake, first: int | None, file_ids: bool) -> dict:
    """What DuckDB reads of ``lake``: every table's rows (with ``rowid``) at every snapshot
    from ``first`` (``None``: the latest) and its change feed over them (the tables side by
    side), each table's rows now, and the catalog rows (``_catalog``)."""
    with _oracle(lake) as read:
        last = read("SELECT max(snapshot_id) FROM lake.snapshots()").column(0)[0].as_py()
        first = last if first is None else first
        tables = _tables(read)
        rows, feeds = [], []
        for schema, table, began in tables:
            since = max(began, first)
            rows += [
                f"SELECT '{table}' AS tbl, {s} AS at_snapshot, rowid, * "
                f"FROM lake.{schema}.{table} AT (VERSION => {s})"
                for s in range(since, last + 1)
            ]
            feeds.append(
                f"SELECT '{table}' AS tbl, * FROM ducklake_table_changes('lake', '{schema}', "
                f"'{table}', {since}, {last})"
            )
        union = " UNION ALL BY NAME "
        return {
            "last": last,
            "rows": read(f"SELECT * FROM ({union.join(rows)}) ORDER BY ALL"),
            "feed": read(f"SELECT * FROM ({union.join(feeds)}) ORDER BY ALL"),
            "now": {t: read(f"SELECT * FROM lake.{s}.{t}") for s, t, _ in tables},
            "catalog": _catalog(read, file_ids),
        }


def _catalog(read, file_ids: bool) -> dict:
    """The catalog rows a flush writes (paths by their directory; with ``file_ids``, the
    data and delete files' ids and their row id starts), and the inlined tables' counts."""
    ids = "data_file_id, " if file_ids else ""
    start = ", row_id_start" if file_ids else ""
    directory = "regexp_replace(path, '[^/]*$', '')"
    queries = {
        "data_files": f"SELECT {ids}table_id, begin_snapshot, end_snapshot, file_order, "
        f"{directory}, path_is_relative, file_format, record_count{start}, partition_id, "
        f"encryption_key, mapping_id, partial_max FROM {META}.ducklake_data_file",
        "delete_files": f"SELECT {'delete_file_id, data_file_id, ' if file_ids else ''}"
        f"table_id, begin_snapshot, end_snapshot, {directory}, path_is_relative, format, "
        f"delete_count, encryption_key, partial_max FROM {META}.ducklake_delete_file",
        "file_column_stats": f"SELECT {ids}table_id, column_id, value_count, null_count, "
        f"min_value, max_value, contains_nan FROM {META}.ducklake_file_column_stats",
        "partition_values": f"SELECT {ids}table_id, partition_key_index, partition_value "
        f"FROM {META}.ducklake_file_partition_value",
        "scheduled": f"SELECT {ids}{directory}, path_is_relative "
        f"FROM {META}.ducklake_files_scheduled_for_deletion",
        "changes": f"SELECT * FROM {META}.ducklake_snapshot_changes",
        "snapshots": "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
        f"FROM {META}.ducklake_snapshot",
        # (file sizes are each writer's own: the table's size is their sum on both)
        "table_stats": "SELECT table_id, record_count, next_row_id, file_size_bytes - "
        f"coalesce((SELECT sum(f.file_size_bytes) FROM {META}.ducklake_data_file f "
        f"WHERE f.table_id = s.table_id), 0) FROM {META}.ducklake_table_stats s",
        "column_stats": f"SELECT * FROM {META}.ducklake_table_column_stats",
        "inlined_tables": f"SELECT * FROM {META}.ducklake_inlined_data_tables",
    }
    names = read(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = "
        f"'{META}' AND table_name LIKE 'ducklake_inlined%'"
    )
    for name in names.column(0).to_pylist():
        queries[name] = f"SELECT count(*) FROM {META}.{name}"
    found = read(
        "SELECT "
        + ", ".join(f"(SELECT list(q) FROM ({sql}) q) AS {key}" for key, sql in queries.items())
    ).to_pylist()[0]
    return {
        key: sorted(
            (tuple(row.values()) for row in rows or ()),
            key=lambda r: tuple((v is None, str(v)) for v in r),
        )
        for key, rows in found.items()
    }


def _flush_both(ours, theirs, table: str | None = None, **ours_kwargs) -> list[FlushResult]:
    """DuckDB flushes ``theirs`` and we flush ``ours`` (both the same way); our result,
    checked to be DuckDB's."""
    named = f", table_name => '{table}'" if table else ""
    if "schema" in ours_kwargs:
        named += f", schema_name => '{ours_kwargs['schema']}'"
    theirs_result = theirs.sql(f"CALL ducklake_flush_inlined_data('lake'{named})").fetchall()
    theirs.detach()
    lake = Lake.open(**ours.reader_args())
    try:
        result = flush_inlined_data(lake, table, **ours_kwargs)
    finally:
        lake.close()
    got = sorted((r.schema_name, r.table_name, r.rows_flushed) for r in result)
    assert got == sorted(tuple(r) for r in theirs_result)
    return result


def _assert_twins_agree(ours, theirs, *, file_ids: bool = True, first: int | None = 1) -> None:
    """Both lakes read the same (DuckDB's reads, ``_state``), and so do our readers, both
    paths, on ours (when ``first`` is a snapshot: not after DuckDB's own writes)."""
    mine, expected = _state(ours, first, file_ids), _state(theirs, first, file_ids)
    assert mine["last"] == expected["last"]
    assert_same_rows(mine["rows"], expected["rows"], ordered=True)
    assert_same_rows(mine["feed"], expected["feed"], ordered=True)
    assert mine["catalog"].keys() == expected["catalog"].keys()
    for key, value in expected["catalog"].items():
        assert mine["catalog"][key] == value, (key, mine["catalog"][key], value)
    if first is None:
        return
    args = ours.reader_args()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**args))
    register(ctx, "exact", DuckLakeCatalog(**args, native=False))
    for table, rows in expected["now"].items():
        assert_same_rows(mine["now"][table], rows)
        for name in ("lake", "exact"):
            assert_same_rows(ctx.sql(f"SELECT * FROM {name}.main.{table}").to_arrow_table(), rows)


def _duckdb_writes_after(lake) -> None:
    """DuckDB writes after a flush: rows inlined again, a flushed row deleted and one
    updated, then its own flush and compaction."""
    with _oracle(lake) as read:
        tables = _tables(read)
    for _, table, _ in tables:
        lake.sql(f"INSERT INTO lake.main.{table} (id) VALUES (1000), (1001)")
        lake.sql(f"DELETE FROM lake.main.{table} WHERE id = 4 OR id = 1000")
        lake.sql(f"UPDATE lake.main.{table} SET id = id + 100 WHERE id = 6")
    for call in ("flush_inlined_data", "merge_adjacent_files", "rewrite_data_files"):
        lake.sql(f"CALL ducklake_{call}('lake')").fetchall()
    lake.detach()


@pytest.mark.parametrize("case", list(CASES))
def test_flush_matches_duckdb_on_a_twin_lake(make_lake, case):
    ours, theirs = twin_lakes(
        make_lake, LakeSpec("duckdb", "local"), CASES[case], inline_limit=LIMIT
    )
    _flush_both(ours, theirs)
    # (DuckDB writes partitions in a hash map's order, schema versions in its threads')
    file_ids = case != "schema_versions_and_partitions"
    _assert_twins_agree(ours, theirs, file_ids=file_ids)
    if case == "deletes_updates_and_file_deletions":
        _assert_written_as_duckdb_writes_it(ours)
    for lake in (ours, theirs):
        _duckdb_writes_after(lake)
    _assert_twins_agree(ours, theirs, file_ids=file_ids, first=None)


def _assert_written_as_duckdb_writes_it(lake) -> None:
    """Table t's flushed file: its columns, their field ids, and its rows in order (the
    deleted row and the updated row's old version too) with their ids and snapshots."""
    (path,) = (
        duckdb_reads(lake, "SELECT data_file FROM ducklake_list_files('lake', 't')")
        .column(0)
        .to_pylist()
    )
    schema = pq.ParquetFile(path).schema_arrow
    assert schema.names == ["id", "v", "d", *INTERNAL]
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in schema]
    assert ids == [1, 2, 3, 2147483540, 2147483539]
    written = pq.read_table(path, columns=["id", *INTERNAL]).to_pylist()
    assert [tuple(r.values()) for r in written] == [
        (1, 0, 2),
        (2, 1, 2),
        (3, 2, 2),
        (4, 3, 3),
        (4, 3, 5),
        (5, 4, 3),
        (6, 5, 6),
    ]


def test_a_table_by_name_a_schema_and_auto_compact_off(make_lake):
    """One table flushed by name (the others stay inlined); then every table of the schema
    but the one whose ``auto_compact`` option is off; then nothing is left to flush, and
    nothing is committed."""
    setup = [
        *PLAIN,
        "CREATE TABLE lake.main.n (id INTEGER)",
        "INSERT INTO lake.main.n VALUES (1), (2)",
        "CREATE TABLE lake.main.m (id INTEGER)",
        "INSERT INTO lake.main.m VALUES (3)",
        "CALL lake.set_option('auto_compact', false, table_name => 'n')",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup, inline_limit=LIMIT)
    _flush_both(ours, theirs, "m")
    assert [r.table_name for r in _flush_both(ours, theirs, schema="main")] == ["t"]
    _assert_twins_agree(ours, theirs)
    last = ours.snapshot_id()
    assert _flush_both(ours, theirs) == []
    assert ours.snapshot_id() == last


@pytest.mark.parametrize(
    "spec",
    [LakeSpec("sqlite", "local"), LakeSpec("postgres", "local"), LakeSpec("mysql", "local")],
    ids=lambda s: s.id,
)
def test_flush_matches_duckdb_on_every_catalog_database(make_lake, spec):
    """Inlined values of several types as each database keeps them (text in SQLite,
    PostgreSQL and MySQL), flushed as DuckDB reads them."""
    # (the DATETIME column DuckDB's MySQL extension makes for an inlined TIMESTAMP keeps
    # no fraction, so the copy to MySQL would lose it)
    fraction = "" if spec.catalog == "mysql" else ".5"
    setup = [
        (
            "CREATE TABLE lake.main.t (id INTEGER, v VARCHAR, d DOUBLE, day DATE, "
            "ts TIMESTAMP, n DECIMAL(9, 2), b BOOLEAN)"
        ),
        (
            f"INSERT INTO lake.main.t VALUES (1, 'a', 1.5, '2024-02-29', '2024-01-01 "
            f"10:00:00{fraction}', 12.25, true), (2, NULL, -0.0, NULL, NULL, NULL, NULL)"
        ),
        (
            "INSERT INTO lake.main.t VALUES (3, 'c''s', 3e10, '1970-01-01', "
            "'2000-12-31 23:59:59', -1.5, false)"
        ),
        "DELETE FROM lake.main.t WHERE id = 2",
        "UPDATE lake.main.t SET v = 'y' WHERE id = 3",
        *FILE_DELETES[4:],
    ]
    ours, theirs = twin_lakes(make_lake, spec, setup, inline_limit=LIMIT)
    _flush_both(ours, theirs)
    _assert_twins_agree(ours, theirs)


def _lake(make_lake, setup):
    """One lake (no twin) built by DuckDB."""
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=LIMIT)
    for statement in setup:
        lake.sql(statement)
    lake.detach()
    return lake


def _run(lake, statement: str) -> None:
    """DuckDB runs ``statement`` (a ``CALL`` is a query: fetched, so that it runs)."""
    result = lake.sql(statement)
    if result is not None:
        result.fetchall()


def _interrupted(monkeypatch, ours, statement: str) -> None:
    """DuckDB runs ``statement`` on ``ours`` once our flush wrote its first table's files,
    before it commits."""
    from ducklake_datafusion.maintain import _flush

    monkeypatch.undo()  # (the flush's own writer, not one patched before)
    write = _flush._write_table
    done = []

    def write_then_change(*args):
        action = write(*args)
        if not done:
            done.append(_run(ours, statement))
            ours.detach()
        return action

    monkeypatch.setattr(_flush, "_write_table", write_then_change)


def _files_on_disk_are_the_catalogs(lake) -> None:
    listed = duckdb_reads(
        lake,
        f"SELECT path FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_delete_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_files_scheduled_for_deletion",
    )
    on_disk = {n for _, _, names in os.walk(lake.data_path) for n in names}
    assert on_disk == {os.path.basename(p) for p in listed.column(0).to_pylist()}


def test_a_flush_meeting_a_change_of_its_rows_fails_and_leaves_the_lake_as_it_was(
    make_lake, monkeypatch
):
    """DuckDB changes what the flush read after it wrote its files (an inlined row
    updated, a flushed file's row deleted, everything flushed): each time the commit finds
    it (``CommitConflictError``), commits nothing and deletes the files, and the lake ends
    exactly as the twin that only DuckDB's changes were made to."""
    ours, theirs = twin_lakes(
        make_lake, LakeSpec("duckdb", "local"), PLAIN + FILE_DELETES[:4], inline_limit=LIMIT
    )
    for statement in (
        "UPDATE lake.main.t SET v = 'z' WHERE id = 1",
        "DELETE FROM lake.main.f WHERE id = 20",
        "CALL ducklake_flush_inlined_data('lake')",
    ):
        _interrupted(monkeypatch, ours, statement)
        _run(theirs, statement)
        theirs.detach()
        lake = Lake.open(**ours.reader_args())
        with pytest.raises(CommitConflictError, match="after snapshot"):
            flush_inlined_data(lake)
        lake.close()
        _files_on_disk_are_the_catalogs(ours)
    _assert_twins_agree(ours, theirs)


def test_a_flush_and_a_concurrent_insert_both_land(make_lake, monkeypatch):
    ours = _lake(make_lake, PLAIN)
    _interrupted(monkeypatch, ours, "INSERT INTO lake.main.t VALUES (7, 'g', 7.5)")
    before = duckdb_reads(ours, "SELECT rowid, * FROM lake.main.t")
    lake = Lake.open(**ours.reader_args())
    (result,) = flush_inlined_data(lake)
    lake.close()
    assert result == FlushResult("main", "t", 7)
    after = duckdb_reads(ours, "SELECT rowid, * FROM lake.main.t WHERE id < 7")
    assert_same_rows(after, before)
    rest = duckdb_reads(ours, "SELECT rowid, id FROM lake.main.t WHERE id = 7").to_pylist()
    assert rest == [{"rowid": 6, "id": 7}]
    inlined = duckdb_reads(ours, f"SELECT count(*) FROM {META}.ducklake_inlined_data_1_1")
    assert inlined.column(0).to_pylist() == [1]  # the new row stays inlined


def test_a_sorted_table_is_refused_by_name(make_lake):
    setup = [*PLAIN[:2], "ALTER TABLE lake.main.t SET SORTED BY (id DESC)", PLAIN[2]]
    ours = _lake(make_lake, setup)
    last = ours.snapshot_id()
    lake = Lake.open(**ours.reader_args())
    with pytest.raises(UnsupportedFeatureError, match="main.t is sorted"):
        flush_inlined_data(lake)
    lake.close()
    assert ours.snapshot_id() == last
