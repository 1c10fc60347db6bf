"""Twin lakes: two lakes built by the same DuckDB statements, one changed by us and one by
DuckDB running the same statement, compared snapshot by snapshot (the rows with their
``rowid``, the change feed, the catalog rows the change wrote), then written by DuckDB after
both. Shared by the row-change tests of every engine (Python, DataFusion SQL, Spark)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from support.lakes import assert_same_rows
from support.writes import META, duckdb_reads, ours_reads

TWIN_SETUP = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
    "INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] FROM range(1000) r(i)",
    "INSERT INTO lake.main.t SELECT i, 'g9', -i, NULL FROM range(1000, 1040) r(i)",
    "DELETE FROM lake.main.t WHERE id % 7 = 0",  # DuckDB's own delete file on both files
    "INSERT INTO lake.main.t SELECT i, 'g5', i, [] FROM range(2000, 2100) r(i)",
]


def twin_lakes(make_lake, spec, setup=TWIN_SETUP, inline_limit=0):
    lakes = []
    for _ in range(2):
        lake = make_lake(spec, inline_limit=inline_limit)
        for statement in setup:
            lake.sql(statement)
        lake.reader_args()  # detached (and a GCS or Azure mirror synced to its store)
        lakes.append(lake)
    return lakes


def twin_rows(lake, snapshot: int) -> pa.Table:
    return duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid", snapshot)


def twin_feed(lake, snapshot: int) -> pa.Table:
    return duckdb_reads(
        lake,
        f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {snapshot}, {snapshot}) "
        "ORDER BY rowid, change_type",
    )


def twin_catalog(lake) -> dict:
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


def without_file_ids(catalog: dict) -> dict:
    """The catalog rows with the data files' ids and row id starts left out: DuckDB
    numbers the files of a write to several partitions in no fixed order."""
    catalog = dict(catalog)
    catalog["data_files"] = sorted((r[1:4] + r[5:] for r in catalog["data_files"]), key=str)
    catalog["delete_files"] = sorted((r[:3] + r[4:] for r in catalog["delete_files"]), key=str)
    catalog["file_column_stats"] = sorted((r[1:] for r in catalog["file_column_stats"]), key=str)
    return catalog


def assert_twins_agree(
    ours, theirs, first: int = 1, *, file_ids: bool = True, catalog: bool = True
) -> None:
    """Rows (with rowid) and the change feed at every snapshot, read by DuckDB, and our
    readers at the latest; the catalog rows (``file_ids``: with the data files' ids;
    ``catalog=False``: not compared, where DuckDB inlines a change into its catalog that
    we write as files)."""
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last
    for snapshot in range(first, last + 1):
        ours_rows, their_rows = twin_rows(ours, snapshot), twin_rows(theirs, snapshot)
        ours_feed, their_feed = twin_feed(ours, snapshot), twin_feed(theirs, snapshot)
        if (
            first > 1
        ):  # after DuckDB's own writes: the rows, not their ids (see duckdb_writes_after)
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
    ours_catalog, their_catalog = twin_catalog(ours), twin_catalog(theirs)
    if not catalog:
        ours_catalog, their_catalog = {}, {}
    if not file_ids:
        ours_catalog, their_catalog = (
            without_file_ids(ours_catalog),
            without_file_ids(their_catalog),
        )
    for key in their_catalog:
        assert ours_catalog[key] == their_catalog[key], (key, ours_catalog[key], their_catalog[key])
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    for lake in (ours, theirs):
        assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.t"), expected)
        assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.t", native=False), expected)


def duckdb_writes_after(lake) -> None:
    """DuckDB's own writes after a delete: a delete and an update of the same files, then
    compaction. (The row ids DuckDB gives the rows it rewrites follow the order its
    threads write them in, which differs from run to run: after these, rows are compared
    without their ids.)"""
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 4")
    lake.sql("UPDATE lake.main.t SET v = v + 1000 WHERE id % 10 = 5")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    lake.sql("CALL ducklake_rewrite_data_files('lake', delete_threshold => 0)")
    lake.detach()


def duckdb_expires(lake) -> None:
    """DuckDB expires every snapshot but the latest and deletes the files none needs."""
    lake.sql("CALL ducklake_expire_snapshots('lake', older_than => now())")
    lake.sql("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    lake.detach()


def expired_twins_agree(ours, theirs) -> None:
    """After DuckDB's expiry and cleanup on both: the same rows, read by DuckDB and both
    of our paths, every file a snapshot lists still there."""
    for lake in (ours, theirs):
        duckdb_expires(lake)
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(duckdb_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)


def rows_and_feed(lake, snapshot: int) -> tuple[pa.Table, pa.Table]:
    return twin_rows(lake, snapshot), twin_feed(lake, snapshot)


def split_new_ids(table: pa.Table, old_ids) -> tuple[pa.Table, pa.Table, list]:
    """The rows whose rowid the lake had before (with it), the others (without), and
    the others' ids."""
    old = pc.is_in(table.column("rowid"), value_set=old_ids)
    new = table.filter(pc.invert(old))
    return table.filter(old), new.drop_columns("rowid"), sorted(new.column("rowid").to_pylist())


def assert_merged_twins_agree(ours, theirs, before: int) -> None:
    """Snapshots after ``before``: rows and feed as DuckDB's, inserted rows' ids as a set;
    the catalog rows; our readers."""
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last
    old_ids = duckdb_reads(theirs, "SELECT rowid FROM lake.main.t", before).column(0)
    for snapshot in range(before + 1, last + 1):
        for mine, their in zip(rows_and_feed(ours, snapshot), rows_and_feed(theirs, snapshot)):
            kept, added, added_ids = split_new_ids(mine, old_ids)
            their_kept, their_added, their_ids = split_new_ids(their, old_ids)
            assert_same_rows(kept, their_kept, ordered=True)
            assert_same_rows(added, their_added)
            assert added_ids == their_ids or set(added_ids) == set(their_ids)
    ours_catalog, their_catalog = twin_catalog(ours), twin_catalog(theirs)
    for key in their_catalog:
        assert ours_catalog[key] == their_catalog[key], (key, ours_catalog[key], their_catalog[key])
    assert_twins_agree(ours, theirs, first=last + 1)  # our readers at the latest
