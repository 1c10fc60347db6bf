"""Every catalog fault reaches the user through SQL as our typed error.

DataFusion drops errors raised while it resolves a schema and would answer "table not
found" (and list nothing in ``information_schema``); the provider defers them to the
table lookup instead (see ``provider/_catalog_provider.py``). Each fault is made on a
lake the reference writer built, then queried three ways.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from datafusion import SessionConfig, SessionContext
from support.lakes import LakeSpec

from ducklake_datafusion import DuckLakeCatalog, errors, register


def _duckdb_lake(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT i FROM range(10) r(i)")
    lake.reader_args()
    return lake, lake.metadata


def _sqlite_lake(make_lake):
    lake = make_lake(LakeSpec("sqlite", "local"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT i FROM range(10) r(i)")
    return lake, lake.reader_args()["metadata"]


def _damage_middle(path: str) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        for offset in range(4096, size, 4096):  # every block after the header
            handle.seek(offset + 100)
            handle.write(b"\xff" * 64)


def _version(lake, path):
    con = duckdb.connect(path)  # our own test lake, never a user's
    con.execute("UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'")
    con.close()


FAULTS = {
    # name: (lake builder, how to damage it (path -> None), expected error)
    "duckdb-missing": (_duckdb_lake, os.remove, errors.CatalogNotFoundError),
    "duckdb-truncated": (
        _duckdb_lake,
        lambda p: os.truncate(p, os.path.getsize(p) // 2),
        errors.CatalogError,
    ),
    "duckdb-corrupt-blocks": (_duckdb_lake, _damage_middle, errors.CatalogError),
    "duckdb-garbage": (
        _duckdb_lake,
        lambda p: Path(p).write_bytes(b"hello" * 1000),
        errors.CatalogError,
    ),
    "duckdb-directory": (
        _duckdb_lake,
        lambda p: (os.remove(p), os.mkdir(p)),
        errors.CatalogError,
    ),
    "sqlite-missing": (
        _sqlite_lake,
        lambda p: os.remove(p.removeprefix("sqlite:")),
        errors.CatalogNotFoundError,
    ),
    "sqlite-garbage": (
        _sqlite_lake,
        lambda p: Path(p.removeprefix("sqlite:")).write_bytes(b"hello" * 1000),
        errors.NotADuckLakeCatalogError,
    ),
    "sqlite-directory": (
        _sqlite_lake,
        lambda p: (os.remove(p.removeprefix("sqlite:")), os.mkdir(p.removeprefix("sqlite:"))),
        errors.CatalogError,
    ),
}


def _session(metadata: str) -> SessionContext:
    ctx = SessionContext(SessionConfig().with_information_schema(True))
    register(ctx, "lake", DuckLakeCatalog(metadata))
    return ctx


def _assert_typed_everywhere(metadata: str, error: type[errors.DuckLakeError], name: str):
    ctx = _session(metadata)
    with pytest.raises(error) as info:
        ctx.sql("SELECT * FROM lake.main.t").to_arrow_table()
    assert name in str(info.value), str(info.value)
    for sql in ("SHOW TABLES", "SELECT * FROM information_schema.tables"):
        with pytest.raises(Exception) as listed:
            ctx.sql(sql).to_arrow_table()
        text = str(listed.value)
        assert error.__name__ in text or isinstance(listed.value, error), text
        assert name in text, text


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_catalog_fault_through_sql(make_lake, fault):
    build, damage, error = FAULTS[fault]
    _, metadata = build(make_lake)
    path = metadata.removeprefix("sqlite:")
    damage(metadata)
    _assert_typed_everywhere(metadata, error, os.path.basename(path))


def test_wrong_version_through_sql(make_lake):
    lake, path = _duckdb_lake(make_lake)
    _version(lake, path)
    _assert_typed_everywhere(path, errors.UnsupportedVersionError, os.path.basename(path))


WRITER = textwrap.dedent(
    """
    import duckdb, duckdb_extensions, sys
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute("ATTACH 'ducklake:" + sys.argv[1] + "' AS w (DATA_INLINING_ROW_LIMIT 0)")
    con.execute("INSERT INTO w.main.t SELECT i FROM range(100, 105) r(i)")
    print("committed", flush=True)
    sys.stdin.readline()
    """
)


def test_reads_while_a_writer_keeps_the_lake_attached(make_lake):
    """A writer that holds the DuckDB file for good does not stop readers (nor they it).

    The reader copies the file and its write-ahead log, so it sees the writer's committed
    but not yet checkpointed insert; DuckDB's answer is taken once the writer is gone.
    """
    lake, path = _duckdb_lake(make_lake)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "committed"
        ctx = _session(path)
        during = ctx.sql("SELECT count(*) AS n, sum(i) AS s FROM lake.main.t").to_pydict()
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    expected = lake.reference("SELECT count(*) AS n, sum(i) AS s FROM lake.main.t").to_pydict()
    assert during == expected and expected["n"] == [15]


def test_replaced_catalog_is_read_anew(make_lake, tmp_path):
    """A catalog renamed over by another one (a restore) is never served from memos."""
    for spec in (LakeSpec("duckdb", "local"), LakeSpec("sqlite", "local")):
        older = make_lake(spec, name=f"older_{spec.catalog}")
        newer = make_lake(spec, name=f"newer_{spec.catalog}")
        for lake, count in ((older, 5), (newer, 7)):
            lake.sql("CREATE TABLE lake.main.t (i INTEGER)")  # same snapshot ids and count
            lake.sql(f"INSERT INTO lake.main.t SELECT i FROM range({count}) r(i)")
        older_path = older.reader_args()["metadata"].removeprefix("sqlite:")
        newer_args = newer.reader_args()
        newer_path = newer_args["metadata"].removeprefix("sqlite:")
        expected_newer = newer.reference("SELECT count(*) AS n FROM lake.main.t")
        expected_older = older.reference("SELECT count(*) AS n FROM lake.main.t")
        older.reader_args()
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(**newer_args))
        sql = "SELECT count(*) AS n FROM lake.main.t"
        assert ctx.sql(sql).to_pydict() == expected_newer.to_pydict()
        backup = tmp_path / f"backup_{spec.catalog}"
        shutil.copyfile(older_path, backup)
        os.replace(backup, newer_path)  # the older lake restored over the newer one's path
        if spec.catalog == "sqlite":
            with sqlite3.connect(newer_path) as con:  # its files are the older lake's
                (data_path,) = con.execute(
                    "SELECT value FROM ducklake_metadata WHERE key = 'data_path'"
                ).fetchone()
            assert data_path == older.data_path
        assert ctx.sql(sql).to_pydict() == expected_older.to_pydict()


def test_information_schema_lists_a_healthy_lake(make_lake, lake_spec):
    """SHOW TABLES and information_schema list the lake's tables and columns, as DuckDB."""
    lake = make_lake(lake_spec)
    lake.sql("CREATE SCHEMA lake.s2")
    lake.sql("CREATE TABLE lake.main.t (i INTEGER, s VARCHAR)")
    lake.sql("CREATE TABLE lake.s2.u (d DATE)")
    expected = lake.reference(
        "SELECT table_schema, table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = 'lake' ORDER BY ALL"
    )
    ctx = SessionContext(SessionConfig().with_information_schema(True))
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    actual = ctx.sql(
        "SELECT table_schema, table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = 'lake' AND table_schema <> 'information_schema' ORDER BY 1, 2, 3"
    ).to_arrow_table()
    assert actual.to_pylist() == expected.to_pylist()
    shown = ctx.sql("SHOW TABLES").to_pydict()
    listed = {
        (schema, name)
        for catalog, schema, name in zip(
            shown["table_catalog"], shown["table_schema"], shown["table_name"]
        )
        if catalog == "lake" and schema != "information_schema"
    }
    assert listed == {("main", "t"), ("s2", "u")}
