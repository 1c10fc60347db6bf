"""``rewrite_data_files`` against a twin lake: DuckDB rewrites an identical lake.

Files whose deleted share reaches the threshold are rewritten to their live rows with their
row ids; the sources and their delete files end (earlier snapshots still read them). Every
snapshot then reads the same rows with the same ``rowid`` on both lakes, the change feed is
the same, the catalog rows are DuckDB's (the table's statistics computed anew when no
deleted row is left), and DuckDB's own writes and maintenance after ours work.
"""

from __future__ import annotations

import pytest
from support.lakes import LakeSpec
from support.twins import (
    assert_twins_agree,
    duckdb_writes_after,
    expired_twins_agree,
    twin_lakes,
)
from support.writes import META, duckdb_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError

COLUMNS = "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])"


def _append(low: int, high: int) -> str:
    return (
        f"INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] "
        f"FROM range({low}, {high}) r(i)"
    )


HISTORY = [
    COLUMNS,
    _append(0, 100),
    _append(100, 200),
    _append(200, 300),
    "DELETE FROM lake.main.t WHERE id < 97",  # 97% of the first file
    "DELETE FROM lake.main.t WHERE id BETWEEN 100 AND 109",  # 10% of the second
    "DELETE FROM lake.main.t WHERE id = 98",  # the first file's cumulative delete file
]

# (setup, our keyword arguments, DuckDB's named parameters, inline limit)
CASES = {
    "default_threshold": (HISTORY, {}, "", 0),
    "every_deleted_file": (HISTORY, {"delete_threshold": 0}, ", delete_threshold => 0", 0),
    "partitioned": (
        [COLUMNS, "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)", *HISTORY[1:]],
        {"delete_threshold": 0.5},
        ", delete_threshold => 0.5",
        0,
    ),
    "inlined_deletes": (HISTORY, {"delete_threshold": 0}, ", delete_threshold => 0", 20),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rewrite_matches_duckdb_on_a_twin_lake(make_lake, case):
    setup, ours_kwargs, their_params, inline_limit = CASES[case]
    ours, theirs = twin_lakes(
        make_lake, LakeSpec("duckdb", "local"), setup, inline_limit=inline_limit
    )
    theirs.sql(f"CALL ducklake_rewrite_data_files('lake'{their_params})")
    theirs.detach()
    result = DuckLakeCatalog(**ours.reader_args()).rewrite_data_files(**ours_kwargs)
    their_files = duckdb_reads(
        theirs,
        f"SELECT count(*) FROM {META}.ducklake_data_file WHERE end_snapshot = "
        f"(SELECT max(snapshot_id) FROM {META}.ducklake_snapshot)",
    )
    assert sum(r.files_processed for r in result) == their_files.column(0)[0].as_py() > 0
    file_ids = case != "partitioned"  # (DuckDB's groups come in a hash map's order)
    assert_twins_agree(ours, theirs, file_ids=file_ids)
    for lake in (ours, theirs):
        duckdb_writes_after(lake)
    assert_twins_agree(ours, theirs, first=ours.snapshot_id() + 1, file_ids=file_ids)
    expired_twins_agree(ours, theirs)


def test_rewrite_on_every_catalog_database(make_lake):
    for spec in (LakeSpec("sqlite", "minio"), LakeSpec("postgres", "local")):
        ours, theirs = twin_lakes(make_lake, spec, HISTORY)
        theirs.sql("CALL ducklake_rewrite_data_files('lake', delete_threshold => 0)")
        theirs.detach()
        DuckLakeCatalog(**ours.reader_args()).rewrite_data_files(delete_threshold=0)
        assert_twins_agree(ours, theirs)


def test_nothing_to_rewrite_and_bad_thresholds(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY[:3])[:1]
    lake = DuckLakeCatalog(**ours.reader_args())
    last = ours.snapshot_id()
    assert lake.rewrite_data_files() == []
    assert ours.snapshot_id() == last
    with pytest.raises(InvalidOptionError, match="delete_threshold"):
        lake.rewrite_data_files(delete_threshold=1.5)


def test_a_rewrite_meeting_a_delete_of_its_sources_fails_and_leaves_the_lake_as_it_was(
    make_lake, monkeypatch
):
    """DuckDB deletes from a file the rewrite read, after it planned: the commit finds the
    file's delete files changed (``CommitConflictError``), nothing is committed, and the
    rewritten file is deleted; DuckDB reads what it read before its own delete."""
    import os

    from ducklake_datafusion.errors import CommitConflictError
    from ducklake_datafusion.maintain import _rewrite

    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), HISTORY)[:1]
    write = _rewrite._write_rewritten

    def write_then_delete(*args):
        action = write(*args)
        ours.sql("DELETE FROM lake.main.t WHERE id = 99")
        ours.detach()
        return action

    monkeypatch.setattr(_rewrite, "_write_rewritten", write_then_delete)
    last = ours.snapshot_id()
    catalog = duckdb_reads(ours, f"SELECT * FROM {META}.ducklake_data_file ORDER BY ALL")
    with pytest.raises(CommitConflictError, match="data file"):
        DuckLakeCatalog(**ours.reader_args()).rewrite_data_files()
    assert ours.snapshot_id() == last + 1  # DuckDB's delete, and nothing after it
    assert duckdb_reads(ours, f"SELECT * FROM {META}.ducklake_data_file ORDER BY ALL") == catalog
    named = duckdb_reads(
        ours,
        f"SELECT path FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_delete_file UNION ALL "  # (and DuckDB's replaced ones)
        f"SELECT path FROM {META}.ducklake_files_scheduled_for_deletion",
    )
    on_disk = {n for _, _, names in os.walk(ours.data_path) for n in names}
    assert on_disk == {os.path.basename(p) for p in named.column(0).to_pylist()}
