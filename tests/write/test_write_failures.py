"""Writes that cannot or must not commit: typed errors, and the lake exactly as it was.

Every failure here is checked the same way: the error's class and the names in its
message, then the lake: no new snapshot, DuckDB reads the same rows, and no data file of
the failed write is left in the table's directory (or the error names it as an orphan).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.writes import duckdb_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import (
    CatalogReadOnlyError,
    CommitConflictError,
    InvalidOptionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UnsupportedTypeError,
)
from ducklake_datafusion.write import append

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})


@pytest.fixture
def table_lake(make_lake):
    """A local DuckDB-catalog lake with ``main.t (id BIGINT, name VARCHAR)`` of 3 rows."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    lake.detach()
    return lake


def _state(lake) -> tuple:
    """What must not change when a write fails: snapshots, rows, files on disk."""
    snapshots = duckdb_reads(lake, "SELECT snapshot_id FROM lake.snapshots()").num_rows
    rows = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY ALL")
    files = sorted(p.name for p in Path(lake.data_path).rglob("*.parquet"))
    return snapshots, rows, files


def _unchanged(lake, before: tuple) -> None:
    after = _state(lake)
    assert after[0] == before[0], "a snapshot was committed"
    assert_same_rows(after[1], before[1])
    assert after[2] == before[2], "the failed write left files behind"


def _stream(*batches, between=None):
    """A reader that yields ``batches`` and runs ``between()`` after the first one."""
    schema = batches[0].schema

    def generate():
        for index, batch in enumerate(batches):
            yield batch
            if index == 0 and between is not None:
                between()

    return pa.RecordBatchReader.from_batches(schema, generate())


@pytest.mark.parametrize(
    ("data", "error", "words"),
    [
        (pa.table({"id": [1], "nope": [2]}), InvalidOptionError, ["main.t", "'nope'"]),
        (pa.table({"id": ["x"]}), UnsupportedTypeError, ["main.t", "'id'"]),
        (pa.table({"id": pa.array([2**64 - 1], pa.uint64())}), UnsupportedTypeError, ["'id'"]),
        (pa.table({"name": pa.array([1.5])}), None, []),  # a double as text: DuckDB would too
    ],
)
def test_bad_data_is_refused_by_name(table_lake, data, error, words):
    before = _state(table_lake)
    table = DuckLakeCatalog(**table_lake.reader_args()).table("main", "t")
    if error is None:
        table.append(data)
        assert duckdb_reads(
            table_lake, "SELECT name FROM lake.main.t WHERE id IS NULL"
        ).to_pylist() == [{"name": "1.5"}]
        return
    with pytest.raises(error) as raised:
        table.append(data)
    for word in words:
        assert word in str(raised.value)
    _unchanged(table_lake, before)


def test_unsupported_types_and_names(make_lake):
    lake = make_lake()
    catalog = DuckLakeCatalog(**lake.reader_args())
    for arrow, hint in [
        (pa.time64("ns"), "time64('us')"),
        (pa.month_day_nano_interval(), "milliseconds"),
        (pa.null(), "give the column a type"),
        (pa.float16(), "float32"),
    ]:
        with pytest.raises(UnsupportedTypeError, match="'c'") as raised:
            catalog.create_table("main.bad", pa.schema([("ok", pa.int32()), ("c", arrow)]))
        assert hint in str(raised.value)
    with pytest.raises(InvalidOptionError, match="twice"):
        catalog.create_table("main.bad", pa.schema([("a", pa.int32()), ("A", pa.int32())]))
    with pytest.raises(InvalidOptionError, match="schema.table"):
        catalog.create_table("a.b.c", pa.schema([("a", pa.int32())]))
    with pytest.raises(TableNotFoundError, match="'nowhere'"):
        catalog.create_table("nowhere.t", pa.schema([("a", pa.int32())]))
    catalog.create_table("main.t", pa.schema([("a", pa.int32())]))
    with pytest.raises(TableExistsError, match="main.t"):
        catalog.create_table("main.t", pa.schema([("a", pa.int32())]))
    with pytest.raises(TableNotFoundError, match="main.missing"):
        append(catalog.lake, "main", "missing", ROWS)
    assert duckdb_reads(lake, "SELECT count(*) AS n FROM lake.snapshots()").to_pylist() == [
        {"n": 2}
    ]


def test_pinned_catalog_is_read_only(table_lake):
    pinned = DuckLakeCatalog(**table_lake.reader_args(), snapshot=1)
    with pytest.raises(CatalogReadOnlyError, match="pinned"):
        pinned.table("main", "t").append(ROWS)
    with pytest.raises(CatalogReadOnlyError, match="pinned"):
        pinned.create_table("main.u", ROWS)


def test_a_catalog_user_who_may_only_read(make_lake):
    """A PostgreSQL user with SELECT rights only: the write is refused typed, the lake is
    unchanged and the files written are deleted again."""
    import uuid

    import psycopg

    lake = make_lake(LakeSpec("postgres", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.detach()
    before = _state(lake)
    dsn = lake.metadata.removeprefix("postgres:")
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        reader = " ".join(
            f"user={role}" if part.startswith("user=") else part for part in dsn.split()
        )
        if f"user={role}" not in reader:
            reader += f" user={role}"
        args = {**lake.reader_args(), "metadata": "postgres:" + reader}
        table = DuckLakeCatalog(**args).table("main", "t")  # reading works
        with pytest.raises(CatalogReadOnlyError, match="may write"):
            table.append(ROWS)
        _unchanged(lake, before)
        # and row changes: refused typed at their commit, their files deleted again
        lake.sql("INSERT INTO lake.main.t VALUES (1, 'a'), (2, 'b')")
        lake.detach()
        before = _state(lake)
        table = DuckLakeCatalog(**args).table("main", "t")
        for change in (
            lambda: table.delete("id = 1"),
            lambda: table.update({"name": "'c'"}, "id = 2"),
            lambda: table.upsert(pa.table({"id": [2, 3], "name": ["x", "y"]}), on=["id"]),
        ):
            with pytest.raises(CatalogReadOnlyError, match="may write"):
                change()
            _unchanged(lake, before)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_encrypted_lakes_and_buckets_we_cannot_hash_are_refused(make_lake):
    lake = make_lake(encrypted=True)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT)")
    lake.detach()
    with pytest.raises(UnsupportedFeatureError, match="encrypted"):
        DuckLakeCatalog(**lake.reader_args()).table("main", "t").append(ROWS.select(["id"]))
    assert not list(Path(lake.data_path).rglob("*.parquet"))
    lake.sql("INSERT INTO lake.main.t SELECT range FROM range(3)")
    lake.detach()
    written = sorted(Path(lake.data_path).rglob("*.parquet"))
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    for change in (
        lambda: table.delete("id = 1"),
        lambda: table.update({"id": "id + 10"}, "id = 2"),
        lambda: table.upsert(pa.table({"id": [2, 5]}), on=["id"]),
    ):
        with pytest.raises(UnsupportedFeatureError, match="encrypted"):
            change()
        assert sorted(Path(lake.data_path).rglob("*.parquet")) == written
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.p (id DECIMAL(30, 0))")
    lake.sql("ALTER TABLE lake.main.p SET PARTITIONED BY (bucket(4, id))")
    lake.detach()
    with pytest.raises(UnsupportedFeatureError, match="bucket partitioning of a decimal"):
        DuckLakeCatalog(**lake.reader_args()).table("main", "p").append(ROWS.select(["id"]))
    assert not list(Path(lake.data_path).rglob("*.parquet"))


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ("DROP TABLE lake.main.t", "dropped"),
        ("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER", "altered"),
        ("ALTER TABLE lake.main.t RENAME TO t2", "dropped or renamed"),
        ("CREATE OR REPLACE TABLE lake.main.t (id BIGINT, name VARCHAR)", "replaced"),
    ],
)
def test_a_table_changed_while_writing_is_a_conflict(table_lake, change, what):
    """DuckDB changes the table after our write began: nothing of ours is committed."""
    table = DuckLakeCatalog(**table_lake.reader_args()).table("main", "t")
    seen = {}

    def meanwhile():
        table_lake.sql(change)
        table_lake.detach()
        seen["snapshots"], seen["files"] = _snapshots_and_files(table_lake)

    with pytest.raises(CommitConflictError) as raised:
        table.append(_stream(*ROWS.to_batches(max_chunksize=1), between=meanwhile))
    message = str(raised.value)
    assert "main.t" in message and what in message
    assert _snapshots_and_files(table_lake) == (seen["snapshots"], seen["files"])


def _snapshots_and_files(lake) -> tuple:
    snapshots = duckdb_reads(lake, "SELECT snapshot_id FROM lake.snapshots()").num_rows
    return snapshots, sorted(p.name for p in Path(lake.data_path).rglob("*.parquet"))


def test_a_concurrent_append_is_not_a_conflict_but_an_overwrite_is(table_lake):
    catalog = DuckLakeCatalog(**table_lake.reader_args())
    batches = ROWS.to_batches(max_chunksize=1)

    def insert():
        table_lake.sql("INSERT INTO lake.main.t VALUES (100, 'duck')")
        table_lake.detach()

    catalog.table("main", "t").append(_stream(*batches, between=insert))
    got = duckdb_reads(table_lake, "SELECT count(*) AS n, sum(id) AS s FROM lake.main.t")
    assert got.to_pylist() == [{"n": 7, "s": 112}]

    with pytest.raises(CommitConflictError, match="overwrite would lose"):
        catalog.table("main", "t").overwrite(_stream(*batches, between=insert))
    got = duckdb_reads(table_lake, "SELECT count(*) AS n FROM lake.main.t")
    assert got.to_pylist() == [{"n": 8}]


def test_a_failing_stream_commits_nothing(table_lake):
    before = _state(table_lake)

    def broken():
        yield ROWS.to_batches()[0]
        raise RuntimeError("the source broke")

    reader = pa.RecordBatchReader.from_batches(ROWS.schema, broken())
    with pytest.raises(RuntimeError, match="the source broke"):
        DuckLakeCatalog(**table_lake.reader_args()).table("main", "t").append(reader)
    _unchanged(table_lake, before)


def test_a_writer_killed_before_its_commit_leaves_no_row(table_lake, tmp_path):
    """Files written, then the process dies before the commit: DuckDB sees nothing new."""
    before = _state(table_lake)
    script = textwrap.dedent(
        f"""
        import os, pyarrow as pa
        from ducklake_datafusion import DuckLakeCatalog
        from ducklake_datafusion.write import _append

        def die(*args, **kwargs):
            os._exit(9)

        _append.commit = die
        catalog = DuckLakeCatalog({table_lake.metadata!r})
        catalog.table("main", "t").append(pa.table({{"id": [7], "name": ["x"]}}))
        """
    )
    table_lake.detach()
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 9, done.stderr
    after = _state(table_lake)
    assert after[0] == before[0]
    assert_same_rows(after[1], before[1])
    assert len(after[2]) == len(before[2]) + 1  # the orphan: no snapshot names it


@pytest.mark.parametrize(
    "statement", ['.delete("id = 2")', '.update({"name": "\'z\'"}, where="id >= 2")']
)
def test_a_row_change_killed_before_its_commit_changes_nothing(table_lake, statement):
    """Delete files (and an update's new data file) written, then the process dies before
    the commit: DuckDB sees no new snapshot and the same rows, and names every file the
    change wrote as an orphan (``ducklake_delete_orphaned_files``), which removes them."""
    before = _state(table_lake)
    script = textwrap.dedent(
        f"""
        import os
        from ducklake_datafusion import DuckLakeCatalog
        from ducklake_datafusion.write import _row_changes

        def die(*args, **kwargs):
            os._exit(9)

        _row_changes.commit = die
        DuckLakeCatalog({table_lake.metadata!r}).table("main", "t"){statement}
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 9, done.stderr
    after = _state(table_lake)
    assert after[0] == before[0], "a snapshot was committed"
    assert_same_rows(after[1], before[1])
    written = sorted(set(after[2]) - set(before[2]))
    assert any(name.endswith("-delete.parquet") for name in written), written
    orphans = table_lake.sql(
        "SELECT path FROM ducklake_delete_orphaned_files('lake', dry_run => true, "
        "older_than => now() + INTERVAL 1 HOUR)"
    ).fetchall()
    assert sorted(Path(p).name for (p,) in orphans) == written
    table_lake.sql(
        "CALL ducklake_delete_orphaned_files('lake', older_than => now() + INTERVAL 1 HOUR)"
    )
    table_lake.detach()
    _unchanged(table_lake, before)


def test_a_catalog_error_mid_commit_rolls_back(make_lake, monkeypatch):
    """The catalog fails after the snapshot row was inserted: the transaction is rolled
    back and the files deleted (SQLite: the same code as every backend's)."""
    lake = make_lake(LakeSpec("sqlite", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.detach()
    before = _state(lake)
    from ducklake_datafusion.catalog import _commit_rows

    def broken(*args, **kwargs):
        raise RuntimeError("the catalog went away")

    monkeypatch.setattr(_commit_rows, "_widen_column_stats", broken)
    with pytest.raises(RuntimeError, match="went away"):
        DuckLakeCatalog(**lake.reader_args()).table("main", "t").append(ROWS)
    _unchanged(lake, before)


def test_a_duckdb_catalog_attached_elsewhere_is_locked(table_lake, monkeypatch):
    """DuckDB (here in this very process) keeps the catalog file attached: the commit waits
    for it, then fails typed, and nothing is written."""
    from ducklake_datafusion.catalog import _writers
    from ducklake_datafusion.errors import CatalogLockedError

    monkeypatch.setattr(_writers, "LOCK_WAIT_SECONDS", 0.5)
    before = _state(table_lake)
    table = DuckLakeCatalog(**table_lake.reader_args()).table("main", "t")
    table_lake.attach()  # DuckDB's writer holds the file
    try:
        with pytest.raises(CatalogLockedError, match="attached elsewhere"):
            table.append(ROWS)
    finally:
        table_lake.detach()
    _unchanged(table_lake, before)
