"""``merge_adjacent_files`` against a twin lake: DuckDB merges an identical lake.

DuckDB builds both lakes with the same statements (small appends, deletes, an ALTER,
partitions); we merge one with ``DuckLakeCatalog.merge_adjacent_files``, DuckDB the other
with ``ducklake_merge_adjacent_files``. Every snapshot then reads the same rows with the
same ``rowid`` on both and the same change feed (time travel across the merge), the catalog
rows are DuckDB's (the merged file's ``begin_snapshot``, ``row_id_start``, ``partial_max``,
statistics; the sources gone and scheduled for deletion; ``merge_adjacent:<id>``), our
readers agree, and DuckDB's own writes and maintenance after ours work. Local sources are
read by the Rust extension (``maintain/_whole_files``); the cases that matter for the reader
(every type, a damaged source) run with pyarrow reading them too.
"""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.twins import (
    assert_twins_agree,
    duckdb_writes_after,
    expired_twins_agree,
    twin_lakes,
    twin_rows,
)
from support.writes import META, duckdb_reads, every_type

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import (
    CommitConflictError,
    DataFileCorruptError,
    DataFileMissingError,
    InvalidOptionError,
)
from ducklake_datafusion.maintain import _whole_files, merge_adjacent_files, write_runs_here

COLUMNS = "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])"


def _appends(ranges) -> list[str]:
    return [
        f"INSERT INTO lake.main.t (id, grp, v, tags) SELECT i, 'g' || (i % 4), i / 2, "
        f"['x' || i] FROM range({low}, {high}) r(i)"
        for low, high in ranges
    ]


# (setup, our keyword arguments, DuckDB's named parameters)
CASES = {
    # contiguous row ids: the merged file keeps row_id_start and writes no row ids
    "contiguous": ([COLUMNS, *_appends([(0, 100), (100, 200), (200, 300)])], {}, ""),
    # a file with a delete stays; the others are not contiguous: row ids written
    "around_a_deleted_file": (
        [
            COLUMNS,
            *_appends([(0, 100), (100, 200)]),
            "DELETE FROM lake.main.t WHERE id = 150",
            *_appends([(200, 300), (300, 400)]),
        ],
        {},
        "",
    ),
    # files of two schema versions: one merged file each, with that version's columns
    "across_an_alter": (
        [
            COLUMNS,
            *_appends([(0, 50), (50, 100)]),
            "ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7",
            *_appends([(100, 150), (150, 200)]),
        ],
        {},
        "",
    ),
    # the first merged file only (DuckDB's limit counts merged files)
    "max_compacted_files": (
        [
            COLUMNS,
            "CALL lake.set_option('target_file_size', '3000B')",
            *_appends([(i * 40, i * 40 + 40) for i in range(8)]),
        ],
        {"max_compacted_files": 1},
        ", max_compacted_files => 1",
    ),
    # the lake's target size cuts the files into several runs
    "target_size": (
        [
            COLUMNS,
            "CALL lake.set_option('target_file_size', '3000B')",
            *_appends([(i * 40, i * 40 + 40) for i in range(8)]),
        ],
        {},
        "",
    ),
}


def _merge_both(ours, theirs, ours_kwargs: dict, their_params: str):
    theirs.sql(f"CALL ducklake_merge_adjacent_files('lake'{their_params})")
    theirs.detach()
    their_result = duckdb_reads(
        theirs, f"SELECT count(*) FROM {META}.ducklake_files_scheduled_for_deletion"
    )
    result = DuckLakeCatalog(**ours.reader_args()).merge_adjacent_files(**ours_kwargs)
    return result, their_result.column(0)[0].as_py()


@pytest.mark.parametrize("case", list(CASES))
def test_merge_matches_duckdb_on_a_twin_lake(make_lake, case):
    setup, ours_kwargs, their_params = CASES[case]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    before = twin_rows(ours, ours.snapshot_id())
    result, their_scheduled = _merge_both(ours, theirs, ours_kwargs, their_params)
    assert sum(r.files_processed for r in result) == their_scheduled > 0
    # (DuckDB writes a table's runs in no fixed order: its new files' ids follow it)
    file_ids = case not in ("across_an_alter", "target_size")
    assert_twins_agree(ours, theirs, file_ids=file_ids)
    assert_same_rows(twin_rows(ours, ours.snapshot_id()), before, ordered=True)
    for lake in (ours, theirs):
        duckdb_writes_after(lake)
    assert_twins_agree(ours, theirs, first=ours.snapshot_id() + 1, file_ids=file_ids)
    expired_twins_agree(ours, theirs)


@pytest.mark.parametrize(
    "spec",
    [LakeSpec("sqlite", "minio"), LakeSpec("postgres", "local"), LakeSpec("mysql", "local")],
    ids=lambda s: s.id,
)
def test_merge_matches_duckdb_on_every_catalog_database(make_lake, spec):
    setup = CASES["around_a_deleted_file"][0]
    ours, theirs = twin_lakes(make_lake, spec, setup)
    result, their_scheduled = _merge_both(ours, theirs, {}, "")
    assert sum(r.files_processed for r in result) == their_scheduled == 3
    assert_twins_agree(ours, theirs)


def test_a_partitioned_tables_files_merge_per_partition(make_lake):
    setup = [
        COLUMNS,
        "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)",
        *_appends([(0, 40), (40, 80), (80, 120)]),
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    result, their_scheduled = _merge_both(ours, theirs, {}, "")
    assert len(result) == 4 and sum(r.files_processed for r in result) == their_scheduled == 12
    # (DuckDB merges partitions in a hash map's order: its file ids follow it)
    assert_twins_agree(ours, theirs, file_ids=False)
    directories = duckdb_reads(
        ours, f"SELECT DISTINCT regexp_replace(path, '[^/]*$', '') FROM {META}.ducklake_data_file"
    )
    assert sorted(directories.column(0).to_pylist()) == [f"grp=g{i}/" for i in range(4)]


def test_an_updated_rows_id_survives_a_merge(make_lake):
    """An update's new file holds its rows' own ids; its ``row_id_start`` follows the file
    before it. DuckDB 1.5.5 takes the two for contiguous and renumbers the updated row;
    ours keeps its id: DuckDB reads the same ``rowid`` before and after our merge."""
    setup = [
        COLUMNS,
        *_appends([(0, 10)]),
        "UPDATE lake.main.t SET v = -1 WHERE id = 5",
        *_appends([(10, 12)]),
    ]
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)[:1]
    before = twin_rows(ours, ours.snapshot_id())
    (result,) = DuckLakeCatalog(**ours.reader_args()).merge_adjacent_files()
    assert result.files_processed == 2
    after = twin_rows(ours, ours.snapshot_id())
    assert_same_rows(after, before, ordered=True)
    row = duckdb_reads(ours, "SELECT rowid FROM lake.main.t WHERE id = 5")
    assert row.column(0).to_pylist() == [5]
    merged = duckdb_reads(
        ours,
        f"SELECT row_id_start, partial_max FROM {META}.ducklake_data_file "
        "WHERE partial_max IS NOT NULL",
    ).to_pylist()
    assert merged == [{"row_id_start": None, "partial_max": 4}]


def test_the_merged_file_is_written_as_duckdb_writes_one(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), CASES["contiguous"][0])[:1]
    DuckLakeCatalog(**ours.reader_args()).merge_adjacent_files()
    (path,) = (
        duckdb_reads(ours, "SELECT data_file FROM ducklake_list_files('lake', 't')")
        .column(0)
        .to_pylist()
    )
    schema = pq.ParquetFile(path).schema_arrow
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in schema]
    assert schema.names[-1] == "_ducklake_internal_snapshot_id" and ids[-1] == 2147483539
    assert "_ducklake_internal_row_id" not in schema.names  # (contiguous: row_id_start)
    snapshots = pq.read_table(path, columns=["_ducklake_internal_snapshot_id"]).column(0)
    assert sorted(set(snapshots.to_pylist())) == [2, 3, 4]


def test_nothing_to_merge_commits_nothing(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), [COLUMNS, *_appends([(0, 9)])])[:1]
    last = ours.snapshot_id()
    assert DuckLakeCatalog(**ours.reader_args()).merge_adjacent_files() == []
    assert ours.snapshot_id() == last


def test_bad_options_are_refused_by_name(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), [COLUMNS])[:1]
    lake = DuckLakeCatalog(**ours.reader_args())
    for kwargs, word in [
        ({"max_compacted_files": 0}, "max_compacted_files"),
        ({"max_file_size": 0}, "max_file_size"),
        ({"min_file_size": 10, "max_file_size": 5}, "min_file_size"),
        ({"schema": "main"}, "schema"),
    ]:
        with pytest.raises(InvalidOptionError, match=word):
            lake.merge_adjacent_files(**kwargs)


def test_a_merge_meeting_a_delete_of_its_sources_fails_and_leaves_no_file(make_lake):
    """DuckDB deletes from a file the merge read, after the merge planned: the commit
    finds the file changed (``CommitConflictError``), nothing is committed, and the merged
    file is deleted."""
    setup = CASES["contiguous"][0]
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)[:1]

    def write_then_delete(works, written):
        results = write_runs_here(works, written)
        ours.sql("DELETE FROM lake.main.t WHERE id = 150")
        ours.detach()
        return results

    last = ours.snapshot_id()
    lake = DuckLakeCatalog(**ours.reader_args()).lake
    with pytest.raises(CommitConflictError, match="data file"):
        merge_adjacent_files(lake, write_runs=write_then_delete)
    assert ours.snapshot_id() == last + 1  # DuckDB's delete, and nothing after it
    listed = duckdb_reads(
        ours,
        f"SELECT path FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_delete_file",
    )
    on_disk = {n for _, _, names in os.walk(ours.data_path) for n in names}
    assert on_disk == {os.path.basename(p) for p in listed.column(0).to_pylist()}


def test_a_merge_and_a_concurrent_append_both_land(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), CASES["contiguous"][0])[:1]
    before = duckdb_reads(ours, "SELECT * FROM lake.main.t")

    def write_then_append(works, written):
        results = write_runs_here(works, written)
        ours.sql(_appends([(1000, 1010)])[0])
        ours.detach()
        return results

    lake = DuckLakeCatalog(**ours.reader_args()).lake
    (result,) = merge_adjacent_files(lake, write_runs=write_then_append)
    assert result.files_processed == 3
    after = duckdb_reads(ours, "SELECT * FROM lake.main.t WHERE id < 1000")
    assert_same_rows(after, before)
    assert duckdb_reads(ours, "SELECT count(*) FROM lake.main.t").column(0)[0].as_py() == 310


@pytest.fixture(params=["extension", "pyarrow"])
def source_reads(request, monkeypatch) -> list:
    """Sources read by the Rust extension or by pyarrow; the chunks the extension read."""
    chunks = []
    read_whole = _whole_files.read_whole

    def counted(tasks, store, what, concurrency):
        chunks.append(len(tasks))
        return read_whole(tasks, store, what, concurrency)

    monkeypatch.setattr(_whole_files, "ENABLED", request.param == "extension")
    monkeypatch.setattr(_whole_files, "read_whole", counted)
    return chunks


def test_every_type_merges_as_duckdb_merges_it(make_lake, source_reads):
    """Sources of every type we write (DuckDB's files, three appends and a delete), read by
    either reader: every snapshot's rows and row ids, the change feed and every catalog row
    (the merged file's statistics included) as DuckDB's merge leaves them."""
    rows = every_type()
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), [])
    for lake in (ours, theirs):
        lake.attach().register("typed_rows", rows)
        lake.sql("CREATE TABLE lake.main.t AS SELECT * FROM typed_rows")
        lake.sql("INSERT INTO lake.main.t SELECT * FROM typed_rows")
        lake.sql("INSERT INTO lake.main.t SELECT * FROM typed_rows")
        lake.sql("INSERT INTO lake.main.t SELECT * FROM typed_rows")
        lake.sql("DELETE FROM lake.main.t WHERE rowid = 4")
        lake.detach()
    before = twin_rows(ours, ours.snapshot_id())
    result, their_scheduled = _merge_both(ours, theirs, {}, "")
    assert sum(r.files_processed for r in result) == their_scheduled == 3
    assert sum(source_reads) == (3 if _whole_files.ENABLED else 0)  # files the extension read
    assert_twins_agree(ours, theirs)
    assert_same_rows(twin_rows(ours, ours.snapshot_id()), before, ordered=True)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_source_missing_or_truncated_fails_typed_and_leaves_nothing(
    make_lake, damage, source_reads
):
    """A source the catalog lists but storage lacks, or cut short, read by either reader:
    the merge raises our error naming the file, commits nothing and leaves no merged file
    behind."""
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), CASES["contiguous"][0])[:1]
    paths = duckdb_reads(
        ours, f"SELECT path FROM {META}.ducklake_data_file ORDER BY data_file_id"
    ).column(0)
    damaged = os.path.join(ours.data_path, "main", "t", os.path.basename(paths[1].as_py()))
    if damage == "missing":
        os.remove(damaged)
    else:
        with open(damaged, "r+b") as handle:
            handle.truncate(os.path.getsize(damaged) // 2)
    on_disk = {n for _, _, names in os.walk(ours.data_path) for n in names}
    last = ours.snapshot_id()
    lake = DuckLakeCatalog(**ours.reader_args())
    kind = DataFileMissingError if damage == "missing" else DataFileCorruptError
    with pytest.raises(kind, match=os.path.basename(damaged)):
        lake.merge_adjacent_files()
    lake.close()
    assert ours.snapshot_id() == last
    assert {n for _, _, names in os.walk(ours.data_path) for n in names} == on_disk


def test_storage_options_the_extension_cannot_use_fail_typed(make_lake, monkeypatch):
    """Storage options the extension's store refuses (an Azure account key that is not
    base64): ``InvalidOptionError`` naming the table, no option's value in the message,
    nothing committed."""
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), CASES["contiguous"][0])[:1]
    secret = "not-base64-secret!!"
    refused = {"kind": "azure", "account": "acct", "container": "c", "access_key": secret}
    monkeypatch.setattr(_whole_files, "store_of", lambda tasks, storage: refused)
    last = ours.snapshot_id()
    lake = DuckLakeCatalog(**ours.reader_args())
    with pytest.raises(InvalidOptionError, match="main.t.*storage options") as caught:
        lake.merge_adjacent_files()
    lake.close()
    assert secret not in str(caught.value)
    assert ours.snapshot_id() == last
