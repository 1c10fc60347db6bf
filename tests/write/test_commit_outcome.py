"""A commit whose outcome is unknown keeps its files; one known to have failed deletes them.

The catalog database's ``COMMIT`` can go unanswered (the connection breaks while the
database commits): the snapshot may exist, so the write's files must stay, named in the
typed error. Two faults: the answer of a commit that happened is lost (every catalog
kind), and the server ends the connection just before ``COMMIT`` (PostgreSQL and MySQL,
for real, through their own kill statements): DuckDB then reads either the whole write or
none of it, and every file a snapshot lists is on disk.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.lakes import LakeSpec
from support.writes import duckdb_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.catalog import _writers
from ducklake_datafusion.errors import CommitStateUnknownError, typed

ROWS = pa.table({"id": pa.array([4, 5], pa.int64()), "name": ["d", "e"]})


def _lake(make_lake, spec):
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    lake.detach()
    return lake


def _listed(lake) -> set[str]:
    files = duckdb_reads(lake, "SELECT data_file FROM ducklake_list_files('lake', 't')")
    return {Path(p).name for p in files.column(0).to_pylist()}


def _on_disk(lake) -> set[str]:
    return {p.name for p in Path(lake.data_path).rglob("*.parquet")}


@pytest.mark.parametrize(
    "spec",
    [LakeSpec("duckdb", "local"), LakeSpec("sqlite", "local"), LakeSpec("postgres", "local")],
    ids=lambda s: s.id,
)
def test_a_committed_snapshot_whose_answer_was_lost_keeps_its_files(make_lake, monkeypatch, spec):
    lake = _lake(make_lake, spec)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    before = _on_disk(lake)

    def answer_lost(commit, description, lost):
        commit()  # the database committed; its answer never arrives
        raise _writers.commit_unknown(description, ConnectionResetError("connection reset"))

    monkeypatch.setattr(_writers, "send_commit", answer_lost)
    with pytest.raises(CommitStateUnknownError) as raised:
        table.append(ROWS)
    written = _on_disk(lake) - before
    assert len(written) == 1
    notes = "\n".join(getattr(raised.value, "__notes__", ()))
    assert "kept" in notes and all(name in notes for name in written)
    got = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY id")
    assert got.column("id").to_pylist() == [1, 2, 3, 4, 5]
    assert _listed(lake) <= _on_disk(lake)
    # a row change (an UPDATE: a delete file and a data file) and DataFusion's INSERT: the
    # same rule, the files the committed snapshot lists kept and named
    from datafusion import SessionContext

    from ducklake_datafusion import register

    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    for write, count in [
        (lambda: table.update({"name": "upper(name)"}, "id = 5"), 2),
        (lambda: ctx.sql("INSERT INTO lake.main.t VALUES (6, 'f')").collect(), 1),
    ]:
        before = _on_disk(lake)
        with pytest.raises(Exception) as raised:  # DataFusion's, carrying ours
            write()
        error = typed(raised.value)  # (DataFusion's INSERT: the object its text quotes)
        assert isinstance(error, CommitStateUnknownError), raised.value
        written = _on_disk(lake) - before
        assert len(written) == count
        notes = "\n".join(getattr(error, "__notes__", ()))
        assert all(name in notes for name in written), notes
        assert _listed(lake) <= _on_disk(lake)
    got = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY id")
    assert got.to_pylist() == [{"id": i, "name": name} for i, name in enumerate("abcdEf", start=1)]


def _kill_before_commit(spec, admin_sql):
    """A ``send_commit`` that has the server end this connection just before COMMIT."""
    real = _writers.send_commit

    def killed(commit, description, lost):
        connection = commit.__self__
        if spec.catalog == "postgres":
            admin_sql(f"SELECT pg_terminate_backend({connection.info.backend_pid})")
        else:
            admin_sql(f"KILL CONNECTION {connection.thread_id()}")
        real(commit, description, lost)

    return killed


@pytest.mark.parametrize(
    "spec", [LakeSpec("postgres", "local"), LakeSpec("mysql", "local")], ids=lambda s: s.id
)
def test_a_connection_ended_at_commit_is_an_unknown_outcome(make_lake, monkeypatch, spec):
    lake = _lake(make_lake, spec)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    before_files = _on_disk(lake)
    before_rows = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY id")
    if spec.catalog == "postgres":
        import psycopg

        dsn = lake.metadata.removeprefix("postgres:")

        def admin_sql(sql):
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(sql)
    else:
        import pymysql

        from ducklake_datafusion.catalog._mysql_dsn import parse_mysql

        arguments = parse_mysql(lake.metadata.removeprefix("mysql:")).connect_kwargs()

        def admin_sql(sql):
            admin = pymysql.connect(**arguments, autocommit=True)
            try:
                with admin.cursor() as cursor:
                    cursor.execute(sql)
            finally:
                admin.close()

    monkeypatch.setattr(_writers, "send_commit", _kill_before_commit(spec, admin_sql))
    with pytest.raises(CommitStateUnknownError, match="may or may not exist"):
        table.append(ROWS)
    written = _on_disk(lake) - before_files
    assert len(written) == 1, "the files of a commit of unknown outcome are kept"
    # the server ended the transaction before COMMIT: nothing committed, and DuckDB agrees
    after_rows = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY id")
    assert after_rows.equals(before_rows)
    assert _listed(lake) <= _on_disk(lake)
