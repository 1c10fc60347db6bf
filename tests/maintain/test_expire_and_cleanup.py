"""Snapshot expiry, cleanup of old files and of orphans, against a twin lake.

DuckDB builds two identical lakes with a history that leaves every kind of row only old
snapshots read (an ended data file, a delete file replaced by a cumulative one, a dropped
table with its files, a merge's sources); we expire and clean one, DuckDB the other with
its own functions and the same arguments. The catalog rows are then DuckDB's, every
remaining snapshot reads the same rows on both (and through our readers), and the files
left on storage are exactly those the catalog still names.
"""

from __future__ import annotations

import datetime as _dt
import os
import time

import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.twins import twin_catalog, twin_lakes, twin_rows
from support.writes import META, duckdb_reads, ours_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError
from ducklake_datafusion.maintain import interval

HISTORY = [
    "CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)",
    "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(0, 100) r(i)",
    "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100, 200) r(i)",
    "DELETE FROM lake.main.t WHERE id = 150",
    "DELETE FROM lake.main.t WHERE id = 151",  # a cumulative delete file replaces the first
    "CREATE TABLE lake.main.u (a INTEGER)",
    "INSERT INTO lake.main.u VALUES (1), (2)",
    "DROP TABLE lake.main.u",
    "DELETE FROM lake.main.t WHERE id < 100",  # the first file ends
    "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(200, 210) r(i)",
    "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(210, 220) r(i)",
    "CALL ducklake_merge_adjacent_files('lake')",  # two sources scheduled
    "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(220, 230) r(i)",
]


def _catalog(lake) -> dict:
    catalog = twin_catalog(lake)

    def rows(sql):
        return [tuple(r.values()) for r in duckdb_reads(lake, sql).to_pylist()]

    catalog["tables"] = rows(
        f"SELECT table_id, begin_snapshot, end_snapshot, table_name FROM {META}.ducklake_table "
        "ORDER BY ALL"
    )
    catalog["columns"] = rows(
        f"SELECT column_id, table_id, begin_snapshot, column_name FROM {META}.ducklake_column "
        "ORDER BY ALL"
    )
    catalog["scheduled_ids"] = rows(
        f"SELECT data_file_id FROM {META}.ducklake_files_scheduled_for_deletion ORDER BY ALL"
    )
    return catalog


def _files_on_disk(lake) -> set[str]:
    return {
        os.path.relpath(os.path.join(root, name), lake.data_path)
        for root, _, names in os.walk(lake.data_path)
        for name in names
    }


def _named_files(lake) -> set[str]:
    """The files the catalog names, relative to the data path."""
    rows = duckdb_reads(
        lake,
        "SELECT data_file FROM ducklake_list_files('lake', 't') UNION ALL "
        "SELECT delete_file FROM ducklake_list_files('lake', 't') WHERE delete_file IS NOT NULL "
        f"UNION ALL SELECT 'main/' || t.path || d.path FROM {META}.ducklake_data_file d "
        f"JOIN {META}.ducklake_table t USING (table_id) "
        f"UNION ALL SELECT 'main/' || t.path || d.path FROM {META}.ducklake_delete_file d "
        f"JOIN {META}.ducklake_table t USING (table_id) "
        f"UNION ALL SELECT path FROM {META}.ducklake_files_scheduled_for_deletion",
    )
    return {
        os.path.relpath(p, lake.data_path) if os.path.isabs(p) else p
        for p in rows.column(0).to_pylist()
    }


@pytest.mark.parametrize("by", ["versions", "older_than"])
def test_expiry_and_cleanup_match_duckdb_on_a_twin_lake(make_lake, by):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)
    last = theirs.snapshot_id()
    kept = [last - 1, last]
    before = {s: twin_rows(theirs, s) for s in kept}
    if by == "versions":
        versions = list(range(1, last - 1))
        theirs.sql(f"CALL ducklake_expire_snapshots('lake', versions => {versions})")
        expired = DuckLakeCatalog(**ours.reader_args()).expire_snapshots(versions=versions)
    else:
        cut = (
            duckdb_reads(
                theirs,
                f"SELECT snapshot_time FROM {META}.ducklake_snapshot WHERE snapshot_id = {last - 1}",
            )
            .column(0)[0]
            .as_py()
        )
        theirs.sql(f"CALL ducklake_expire_snapshots('lake', older_than => '{cut.isoformat()}')")
        ours_cut = (
            duckdb_reads(
                ours,
                f"SELECT snapshot_time FROM {META}.ducklake_snapshot WHERE snapshot_id = {last - 1}",
            )
            .column(0)[0]
            .as_py()
        )
        expired = DuckLakeCatalog(**ours.reader_args()).expire_snapshots(older_than=ours_cut)
    theirs.detach()
    assert [r.snapshot_id for r in expired] == list(range(last - 1))[-len(expired) :]
    ours_catalog, their_catalog = _catalog(ours), _catalog(theirs)
    assert ours_catalog == their_catalog
    for snapshot in kept:
        for lake in (ours, theirs):
            assert_same_rows(twin_rows(lake, snapshot), before[snapshot], ordered=True)
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)

    # cleanup: the scheduled files leave storage and the catalog, nothing else does
    theirs.sql("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    theirs.detach()
    lake = DuckLakeCatalog(**ours.reader_args())
    would = lake.cleanup_old_files(cleanup_all=True, dry_run=True)
    deleted = lake.cleanup_old_files(cleanup_all=True)
    assert sorted(deleted) == sorted(would) and len(deleted) == len(their_catalog["scheduled_ids"])
    assert _catalog(ours) == _catalog(theirs)
    for twin in (ours, theirs):
        assert _files_on_disk(twin) == _named_files(twin)
        assert_same_rows(duckdb_reads(twin, "SELECT * FROM lake.main.t"), expected)


def test_nothing_expires_without_an_argument_or_a_setting(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)[:1]
    last = ours.snapshot_id()
    assert DuckLakeCatalog(**ours.reader_args()).expire_snapshots() == []
    ours.sql("CALL lake.set_option('expire_older_than', '1 second')")
    ours.detach()
    time.sleep(1.1)
    expired = DuckLakeCatalog(**ours.reader_args()).expire_snapshots()
    assert [r.snapshot_id for r in expired] == list(range(last))  # (all but the latest)
    assert (
        duckdb_reads(ours, f"SELECT count(*) FROM {META}.ducklake_snapshot").column(0)[0].as_py()
        == 1
    )


def test_a_dry_run_changes_nothing(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)[:1]
    catalog = _catalog(ours)
    lake = DuckLakeCatalog(**ours.reader_args())
    assert len(lake.expire_snapshots(versions=[1, 2, 3], dry_run=True)) == 3
    assert len(lake.cleanup_old_files(cleanup_all=True, dry_run=True)) == 3
    assert _catalog(ours) == catalog


def test_orphans_go_and_named_or_young_files_stay(make_lake):
    """A file no row names goes; one written after ``older_than`` stays (a commit may be
    writing it); DuckDB finds the same orphans."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)
    for twin in (ours, theirs):
        table_dir = os.path.join(twin.data_path, "main", "t")
        for name, age in (("old-orphan.parquet", 3 * 86400), ("young-orphan.parquet", 0)):
            path = os.path.join(table_dir, name)
            with open(path, "wb") as out:
                out.write(b"PAR1")
            os.utime(path, (time.time() - age, time.time() - age))
        with open(os.path.join(table_dir, "notes.txt"), "w") as out:
            out.write("not a data file")
    theirs.sql("CALL ducklake_delete_orphaned_files('lake')")
    theirs.detach()
    lake = DuckLakeCatalog(**ours.reader_args())
    assert [os.path.basename(u) for u in lake.delete_orphaned_files(dry_run=True)] == [
        "old-orphan.parquet"
    ]
    deleted = lake.delete_orphaned_files()
    assert [os.path.basename(u) for u in deleted] == ["old-orphan.parquet"]
    assert not os.path.exists(deleted[0])
    for twin in (ours, theirs):
        left = _files_on_disk(twin) - _named_files(twin)
        assert left == {"main/t/young-orphan.parquet", "main/t/notes.txt"}, twin
    everything = lake.delete_orphaned_files(cleanup_all=True)
    assert [os.path.basename(u) for u in everything] == ["young-orphan.parquet"]
    assert_same_rows(
        ours_reads(ours, "SELECT * FROM lake.main.t"),
        duckdb_reads(theirs, "SELECT * FROM lake.main.t"),
    )


def test_bad_arguments_are_refused_by_name(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY[:2])[:1]
    lake = DuckLakeCatalog(**ours.reader_args())
    now = _dt.datetime.now(_dt.timezone.utc)
    with pytest.raises(InvalidOptionError, match="not both"):
        lake.expire_snapshots(older_than=now, versions=[1])
    with pytest.raises(InvalidOptionError, match="cleanup_all"):
        lake.cleanup_old_files(cleanup_all=True, older_than=now)
    with pytest.raises(InvalidOptionError, match="cleanup_all"):
        lake.delete_orphaned_files(cleanup_all=True, older_than=now)
    # (DuckDB refuses such a value; another writer of the catalog may not)
    ours.sql(
        f"INSERT INTO {META}.ducklake_metadata VALUES ('delete_older_than', 'soon', NULL, NULL)"
    )
    ours.detach()
    with pytest.raises(InvalidOptionError, match="delete_older_than"):
        DuckLakeCatalog(**ours.reader_args()).cleanup_old_files()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2 days", 172800), ("1 week 3 hours", 615600), ("00:30:00", 1800), ("90 minutes", 5400)],
)
def test_intervals_read_as_duckdb_spells_them(text, seconds):
    assert interval(text, "delete_older_than").total_seconds() == seconds


@pytest.mark.parametrize(
    "spec",
    [LakeSpec("sqlite", "minio"), LakeSpec("postgres", "local"), LakeSpec("mysql", "local")],
    ids=lambda s: s.id,
)
def test_expiry_and_cleanup_on_every_catalog_database(make_lake, spec):
    """Ours on each catalog database, DuckDB's on a DuckDB-file twin: the same rows."""
    (ours,) = twin_lakes(make_lake, spec, HISTORY)[:1]
    (theirs,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)[:1]
    versions = list(range(1, theirs.snapshot_id() - 1))
    theirs.sql(f"CALL ducklake_expire_snapshots('lake', versions => {versions})")
    theirs.sql("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    theirs.detach()
    lake = DuckLakeCatalog(**ours.reader_args())
    assert len(lake.expire_snapshots(versions=versions)) == len(versions)
    assert len(lake.cleanup_old_files(cleanup_all=True)) == 5
    assert _catalog(ours) == _catalog(theirs)
    assert_same_rows(
        ours_reads(ours, "SELECT * FROM lake.main.t"),
        duckdb_reads(theirs, "SELECT * FROM lake.main.t"),
    )
