"""DELETE against a twin lake: DuckDB runs the same statement on an identical lake.

Each case builds two lakes with the same DuckDB statements, runs a delete through our
``table.delete`` on one and DuckDB's ``DELETE`` on the other, then compares, snapshot by
snapshot: the rows with their ``rowid``, the change feed of every snapshot, and the catalog
rows the delete wrote (delete files and their snapshots, ended files, scheduled deletions,
changes, statistics; ids kept, paths and sizes aside). DuckDB then writes after us on both
(a delete and an update of the same file, compaction, then expiry and cleanup) and both
still agree, read by DuckDB, our Rust scan and our exact path.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec, assert_same_rows
from support.writes import META, duckdb_reads, ours_reads

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import CatalogReadOnlyError, InvalidOptionError

SPECS = [
    LakeSpec("duckdb", "local"),
    LakeSpec("sqlite", "s3"),
    LakeSpec("postgres", "local"),
    LakeSpec("sqlite", "minio"),
    LakeSpec("duckdb", "gcs"),
    LakeSpec("sqlite", "azure"),
]

SETUP = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
    "INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] FROM range(1000) r(i)",
    "INSERT INTO lake.main.t SELECT i, 'g9', -i, NULL FROM range(1000, 1040) r(i)",
    "DELETE FROM lake.main.t WHERE id % 7 = 0",  # DuckDB's own delete file on both files
    "INSERT INTO lake.main.t SELECT i, 'g5', i, [] FROM range(2000, 2100) r(i)",
]

# (our where, DuckDB's WHERE): scattered rows of a file that has a delete file already
# and of one that has none, a whole file, and nothing at all
CASES = {
    "scattered": "id % 10 = 3 OR id BETWEEN 2010 AND 2020",
    "whole_file": "grp = 'g9'",
    "everything": "true",
    "nothing": "id < 0",
    "subquery": "id IN (SELECT id * 3 FROM lake.main.t WHERE id < 50)",
}


def _twins(make_lake, spec, setup=SETUP, inline_limit=0):
    lakes = []
    for _ in range(2):
        lake = make_lake(spec, inline_limit=inline_limit)
        for statement in setup:
            lake.sql(statement)
        lake.reader_args()  # detached (and a GCS or Azure mirror synced to its store)
        lakes.append(lake)
    return lakes


def _state(lake, snapshot: int) -> pa.Table:
    return duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid", snapshot)


def _feed(lake, snapshot: int) -> pa.Table:
    return duckdb_reads(
        lake,
        f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {snapshot}, {snapshot}) "
        "ORDER BY rowid, change_type",
    )


def _catalog(lake) -> dict:
    """The catalog rows a delete writes; delete file ids aside (DuckDB numbers the delete
    files of one statement in no fixed order: they are compared as a set of rows)."""

    def rows(sql):
        return [tuple(r.values()) for r in duckdb_reads(lake, sql).to_pylist()]

    return {
        "delete_files": rows(
            f"SELECT table_id, begin_snapshot, end_snapshot, data_file_id, "
            f"path_is_relative, format, delete_count, encryption_key, partial_max "
            f"FROM {META}.ducklake_delete_file ORDER BY ALL"
        ),
        "data_files": rows(
            f"SELECT data_file_id, begin_snapshot, end_snapshot, record_count, row_id_start, "
            f"partial_max, partition_id FROM {META}.ducklake_data_file "
            "ORDER BY ALL"
        ),
        # the statistics of every file, the new files of an UPDATE or MERGE among them
        # (column sizes aside: they follow each writer's encoding)
        "file_column_stats": rows(
            f"SELECT data_file_id, column_id, value_count, null_count, min_value, max_value, "
            f"contains_nan FROM {META}.ducklake_file_column_stats ORDER BY ALL"
        ),
        "scheduled": rows(
            "SELECT path_is_relative, regexp_replace(path, '[^/]*$', '') "
            f"FROM {META}.ducklake_files_scheduled_for_deletion ORDER BY ALL"
        ),
        "changes": rows(
            f"SELECT snapshot_id, changes_made FROM {META}.ducklake_snapshot_changes ORDER BY ALL"
        ),
        "snapshots": rows(
            f"SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
            f"FROM {META}.ducklake_snapshot ORDER BY ALL"
        ),
        "table_stats": rows(
            f"SELECT table_id, record_count, next_row_id FROM {META}.ducklake_table_stats"
        ),
        "column_stats": rows(f"SELECT * FROM {META}.ducklake_table_column_stats ORDER BY ALL"),
    }


def _without_file_ids(catalog: dict) -> dict:
    """The catalog rows with the data files' ids and row id starts left out: DuckDB
    numbers the files of a write to several partitions in no fixed order."""
    catalog = dict(catalog)
    catalog["data_files"] = sorted((r[1:4] + r[5:] for r in catalog["data_files"]), key=str)
    catalog["delete_files"] = sorted((r[:3] + r[4:] for r in catalog["delete_files"]), key=str)
    catalog["file_column_stats"] = sorted((r[1:] for r in catalog["file_column_stats"]), key=str)
    return catalog


def assert_twins_agree(ours, theirs, first: int = 1, *, file_ids: bool = True) -> None:
    """Rows (with rowid) and the change feed at every snapshot, read by DuckDB, and our
    readers at the latest; the catalog rows (``file_ids``: with the data files' ids)."""
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last
    for snapshot in range(first, last + 1):
        ours_rows, their_rows = _state(ours, snapshot), _state(theirs, snapshot)
        ours_feed, their_feed = _feed(ours, snapshot), _feed(theirs, snapshot)
        if first > 1:  # after DuckDB's own writes: the rows, not their ids (see _duckdb_after)
            ours_rows, their_rows = (
                ours_rows.drop_columns("rowid"),
                their_rows.drop_columns("rowid"),
            )
            ours_feed, their_feed = (
                ours_feed.drop_columns("rowid"),
                their_feed.drop_columns("rowid"),
            )
        assert_same_rows(ours_rows, their_rows, ordered=first == 1)
        assert_same_rows(ours_feed, their_feed, ordered=first == 1)
    ours_catalog, their_catalog = _catalog(ours), _catalog(theirs)
    if not file_ids:
        ours_catalog, their_catalog = (
            _without_file_ids(ours_catalog),
            _without_file_ids(their_catalog),
        )
    for key in their_catalog:
        assert ours_catalog[key] == their_catalog[key], key
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    for lake in (ours, theirs):
        assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.t"), expected)
        assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.t", native=False), expected)


def _duckdb_after(lake) -> None:
    """DuckDB's own writes after a delete: a delete and an update of the same files, then
    compaction. (The row ids DuckDB gives the rows it rewrites follow the order its
    threads write them in, which differs from run to run: after these, rows are compared
    without their ids.)"""
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 4")
    lake.sql("UPDATE lake.main.t SET v = v + 1000 WHERE id % 10 = 5")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    lake.sql("CALL ducklake_rewrite_data_files('lake', delete_threshold => 0)")
    lake.detach()


def _duckdb_expires(lake) -> None:
    """DuckDB expires every snapshot but the latest and deletes the files none needs."""
    lake.sql("CALL ducklake_expire_snapshots('lake', older_than => now())")
    lake.sql("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    lake.detach()


# every case on the DuckDB-file catalog; on each other catalog database and store one case
# (the statement's plan is the same code on every cell; what differs is the catalog's SQL
# dialect and the store the delete files go to)
TWINS = (
    [(SPECS[0], case) for case in CASES]
    + list(zip(SPECS[1:], ["scattered", "subquery", "whole_file", "scattered", "everything"]))
    + [(LakeSpec("mysql", "local"), "scattered"), (LakeSpec("postgres", "s3"), "scattered")]
)


@pytest.mark.parametrize(("spec", "case"), TWINS, ids=[f"{spec.id}-{case}" for spec, case in TWINS])
def test_delete_matches_duckdb_on_a_twin_lake(make_lake, spec, case):
    ours, theirs = _twins(make_lake, spec)
    where = CASES[case]
    theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
    theirs.detach()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
    table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
    result = table.delete(where, ctx=ctx)
    deleted = duckdb_reads(theirs, "SELECT count(*) FROM lake.main.t", 5).column(0)[0].as_py()
    deleted -= duckdb_reads(theirs, "SELECT count(*) FROM lake.main.t").column(0)[0].as_py()
    assert result.deleted == deleted
    if case == "nothing":
        assert result.snapshot_id == 5  # no snapshot for a delete of no rows, as DuckDB
    assert_twins_agree(ours, theirs)
    # (a MySQL cell's DuckDB writes a file catalog copied into MySQL: it cannot write after us)
    if spec.storage != "local" or spec.catalog == "mysql" or case in ("nothing", "everything"):
        return
    for lake in (ours, theirs):
        _duckdb_after(lake)
    assert_twins_agree(ours, theirs, first=6)
    _expired_twins_agree(ours, theirs)


def _expired_twins_agree(ours, theirs) -> None:
    """After DuckDB's expiry and cleanup on both: the same rows, read by DuckDB and both
    of our paths, every file a snapshot lists still there."""
    for lake in (ours, theirs):
        _duckdb_expires(lake)
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(duckdb_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)


@pytest.mark.parametrize("spec", SPECS[:1], ids=lambda s: s.id)
def test_deletes_of_our_own_delete_files_are_cumulative(make_lake, spec):
    """Three deletes in a row on the same files (each replaces the last one's delete file),
    and a pyarrow expression and a delete of everything: every snapshot as DuckDB's."""
    ours, theirs = _twins(make_lake, spec)
    steps = [
        ("id < 300", pc.field("id") < 300),
        ("id % 5 = 2", None),
        ("grp = 'g1'", pc.field("grp") == "g1"),
        ("v > 900", None),
    ]
    for sql_where, expression in steps:
        theirs.sql(f"DELETE FROM lake.main.t WHERE {sql_where}")
        theirs.detach()
        table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
        table.delete(expression if expression is not None else sql_where)
    assert_twins_agree(ours, theirs)
    assert _delete_file_forms(ours) == _delete_file_forms(theirs)
    theirs.sql("DELETE FROM lake.main.t")
    theirs.detach()
    DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete()
    assert_twins_agree(ours, theirs)


def _delete_file_forms(lake) -> set[tuple]:
    """Each live delete file's Parquet form: its name's shape, and its columns with their
    types, field ids and repetition (DuckDB's: ``file_path`` 2147483646, ``pos``
    2147483645, and on a cumulative file ``_ducklake_internal_snapshot_id`` 2147483539)."""
    files = lake.reference(
        "SELECT delete_file FROM ducklake_list_files('lake', 't') WHERE delete_file IS NOT NULL"
    )
    forms = set()
    for path in files.column(0).to_pylist():
        schema = pq.read_schema(path)
        name = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", path.rsplit("/", 1)[-1])
        columns = tuple(
            (f.name, str(f.type), f.nullable, (f.metadata or {}).get(b"PARQUET:field_id"))
            for f in schema
        )
        forms.add((name, columns))
    assert forms, "no live delete file"
    return forms


def test_deleting_inlined_rows_ends_them_in_the_catalog(make_lake):
    """Rows DuckDB inlined in the catalog: ended there (``inlined_delete``), as DuckDB
    ends them; rows of a file whose other deletes DuckDB inlined get a delete file
    beside them (readers apply both)."""
    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
        "INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i, NULL FROM range(200) r(i)",
        (
            "INSERT INTO lake.main.t VALUES (5000, 'in', 1, NULL), (5001, 'in', 2, NULL), "
            "(5002, 'in', 3, ['a'])"
        ),
        # positions of the file deleted through the catalog (ducklake_inlined_delete_1)
        "DELETE FROM lake.main.t WHERE id % 50 = 7",
    ]
    ours, theirs = _twins(make_lake, LakeSpec("duckdb", "local"), setup, inline_limit=10)
    where = "id IN (5000, 5002) OR id % 50 = 1"
    theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
    theirs.detach()
    result = DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete(where)
    count = "SELECT count(*) FROM lake.main.t"
    before = duckdb_reads(theirs, count, 4).column(0)[0].as_py()
    assert result.deleted == before - duckdb_reads(theirs, count).column(0)[0].as_py()
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last
    for snapshot in range(1, last + 1):
        assert_same_rows(_state(ours, snapshot), _state(theirs, snapshot), ordered=True)
        assert_same_rows(_feed(ours, snapshot), _feed(theirs, snapshot), ordered=True)
    # DuckDB also inlines the file rows' deletes (``ducklake_inlined_delete_1``); we write
    # them as a delete file: the rows and the feed above are the same either way
    ours_catalog, their_catalog = _catalog(ours), _catalog(theirs)
    for key in ("data_files", "table_stats", "column_stats"):
        assert ours_catalog[key] == their_catalog[key], (key, ours_catalog[key], their_catalog[key])
    assert ours_catalog["changes"][-1] == (5, "deleted_from_table:1,inlined_delete:1")
    inlined = f"SELECT * FROM {META}.ducklake_inlined_data_1_1 ORDER BY ALL"
    assert duckdb_reads(ours, inlined).equals(duckdb_reads(theirs, inlined))
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)


def test_a_delete_is_refused_where_it_cannot_be_exact(make_lake):
    lake = make_lake(inline_limit=0)
    for statement in SETUP[:2]:
        lake.sql(statement)
    lake.detach()
    before = duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid")
    catalog = DuckLakeCatalog(**lake.reader_args())
    with pytest.raises(InvalidOptionError, match=r"main\.t .*No field named nope"):
        catalog.table("main", "t").delete("nope = 1")
    with pytest.raises(InvalidOptionError, match=r"main\.t .*non-boolean"):
        catalog.table("main", "t").delete("id")
    with pytest.raises(InvalidOptionError, match="SQL text or a pyarrow"):
        catalog.table("main", "t").delete(42)
    pinned = DuckLakeCatalog(**lake.reader_args(), snapshot=1)
    with pytest.raises(CatalogReadOnlyError, match="pinned"):
        pinned.table("main", "t").delete("id = 1")
    after = duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid")
    assert after.equals(before)


def test_deletes_of_whole_partitions_end_their_files_as_duckdb(make_lake):
    """A partitioned table: a delete of one whole partition ends its files (no delete
    file), one of a partition and scattered rows of the others mixes both, as DuckDB's."""
    setup = [SETUP[0], "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)", *SETUP[1:]]
    ours, theirs = _twins(make_lake, LakeSpec("duckdb", "local"), setup)
    for where in ["grp = 'g2'", "grp = 'g9' OR id % 10 = 1"]:
        theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
        theirs.detach()
        DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete(where)
    assert_twins_agree(ours, theirs, file_ids=False)
    ended = duckdb_reads(
        ours,
        f"SELECT count(*) FROM {META}.ducklake_data_file f JOIN "
        f"{META}.ducklake_file_partition_value p USING (data_file_id) "
        "WHERE p.partition_value IN ('g2', 'g9') AND f.end_snapshot IS NULL",
    )
    assert ended.column(0)[0].as_py() == 0
