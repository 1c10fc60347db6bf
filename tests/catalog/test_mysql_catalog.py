"""MySQL/MariaDB catalogs: a lake DuckDB writes through its own MySQL attach, read every way.

The matrix's ``mysql-local`` cell builds its lakes through a DuckDB-file writer copied into
MySQL (``support/mysql_lakes.py``: DuckDB 1.5.5 fails a second INSERT into a table, UPDATE
and RENAME COLUMN on MySQL). Here the lake is written by DuckDB's own ``ducklake:mysql:``
attach, with only the writes that work there (CREATE, one INSERT per table, DELETE of rows
in files, ADD COLUMN), its snapshots a second apart (MySQL keeps snapshot times in whole seconds), and
read at every snapshot by id and by time through each spelling of the connection string,
the CLI, the change feed and the typed errors, always compared with what DuckDB reads back.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import time

import duckdb
import duckdb_extensions
import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.cli import run_cli
from support.lakes import assert_same_rows
from support.mysql_lakes import mysql_keys

from ducklake_datafusion import DuckLakeCatalog, errors, register
from ducklake_datafusion.catalog._mysql import mysql_sql
from ducklake_datafusion.catalog._mysql_dsn import parse_mysql

COLUMNS = (
    "id INTEGER, s VARCHAR, b BOOLEAN, ts TIMESTAMP, tz TIMESTAMPTZ, h HUGEINT, "
    "d DECIMAL(18, 3), u UUID, j JSON, f DOUBLE, dt DATE, bl BLOB"
)


class NativeLake:
    """A lake DuckDB wrote through its own MySQL attach; ``reference`` is DuckDB's reading."""

    def __init__(self, server, tmp_path) -> None:
        self.conninfo = server.create_database()
        self.server = server
        self.metadata = "mysql:" + self.conninfo
        self.data_path = str(tmp_path / "data") + "/"
        self.con = duckdb.connect()
        for name in ("ducklake", "mysql_scanner"):
            duckdb_extensions.import_extension(name, con=self.con)

    def write(self, *statements: str) -> None:
        """Run writer statements, each its own snapshot, a second after the last one."""
        self.con.execute(
            f"ATTACH 'ducklake:{self.metadata}' AS lake (DATA_PATH '{self.data_path}')"
        )
        try:
            for sql in statements:
                time.sleep(1.05)
                self.con.execute(sql)
        finally:
            self.con.execute("DETACH lake")

    def reference(self, sql: str) -> pa.Table:
        self.con.execute(f"ATTACH 'ducklake:{self.metadata}' AS lake (READ_ONLY)")
        try:
            return self.con.execute(sql).to_arrow_table()
        finally:
            self.con.execute("DETACH lake")

    def close(self) -> None:
        self.con.close()
        self.server.drop_database(self.conninfo)


@pytest.fixture(scope="module")  # read only by every test (its history takes ~7 s to write)
def native(mysql, tmp_path_factory):
    lake = NativeLake(mysql, tmp_path_factory.mktemp("mysql-native"))
    lake.write(
        f"CREATE TABLE lake.main.t ({COLUMNS})",
        # one INSERT per table (a second one fails on MySQL): 5 rows inlined, 100 in a file;
        # deleting inlined rows fails there too (an UPDATE with a join), file rows do not
        "INSERT INTO lake.main.t " + _values(5),
        f"CREATE TABLE lake.main.big ({COLUMNS})",
        "INSERT INTO lake.main.big " + _values(100),
        "DELETE FROM lake.main.big WHERE id % 7 = 0",
        "ALTER TABLE lake.main.big ADD COLUMN extra INTEGER DEFAULT 42",
    )
    yield lake
    lake.close()


def _values(n: int) -> str:
    return (
        "SELECT i, 'v' || i, i % 2 = 0, TIMESTAMP '2024-01-02 03:04:05' + INTERVAL (i * 1000123) MICROSECOND, "
        "TIMESTAMPTZ '2024-01-02 03:04:05+00' + INTERVAL (i) MINUTE, "
        "CAST(i AS HUGEINT) * 1000000, i / 8, "
        "CAST('00000000-0000-0000-0000-' || lpad(CAST(i AS VARCHAR), 12, '0') AS UUID), "
        "CAST('{\"k\": ' || i || '}' AS JSON), i / 3, DATE '2024-01-01' + CAST(i AS INTEGER), "
        f"CAST('b' || i AS BLOB) FROM range({n}) r(i)"
    )


def _ours(metadata: str, sql: str, **kwargs):
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(metadata, **kwargs))
    return ctx.sql(sql).to_arrow_table()


def _spellings(native) -> list[str]:
    keys = mysql_keys(native.conninfo)
    url = f"mysql://{keys['user']}@{keys['host']}:{keys['port']}/{keys['database']}"
    return [native.metadata, "ducklake:" + native.metadata, url]


def test_every_snapshot_by_id_and_time_reads_as_duckdb(native):
    snapshots = native.reference(
        "SELECT snapshot_id, snapshot_time FROM ducklake_snapshots('lake') ORDER BY 1"
    ).to_pylist()
    times = [r["snapshot_time"] for r in snapshots]
    assert len(set(times)) == len(times)  # a second apart: each time names one snapshot
    spellings = _spellings(native)
    for row in snapshots[1:]:
        snapshot, when = row["snapshot_id"], row["snapshot_time"]
        for table in ("t", "big"):
            sql = f"SELECT * FROM lake.main.{table}"
            try:
                expected = native.reference(f"{sql} AT (VERSION => {snapshot})")
            except duckdb.CatalogException:
                continue  # not created yet
            for metadata in spellings:
                assert_same_rows(_ours(metadata, sql, snapshot=snapshot), expected)
            assert_same_rows(_ours(native.metadata, sql, native=False, snapshot=snapshot), expected)
            by_time = native.reference(f"{sql} AT (TIMESTAMP => TIMESTAMPTZ '{when.isoformat()}')")
            assert_same_rows(by_time, expected)
            suffix = (
                f'SELECT * FROM lake.main."{table}@{when.astimezone(dt.timezone.utc).isoformat()}"'
            )
            assert_same_rows(_ours(native.metadata, suffix), expected)


def test_change_feed_and_metadata_functions_read_as_duckdb(native):
    latest = native.reference("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')")
    latest = latest.column(0)[0].as_py()
    for table in ("t", "big"):
        sql = f"SELECT * FROM ducklake_table_changes('lake', 'main', '{table}', 0, {latest})"
        expected = native.reference(sql)
        assert_same_rows(_ours(native.metadata, sql), expected)
    for sql in (
        "SELECT snapshot_id, schema_version, changes FROM ducklake_snapshots('lake')",
        "SELECT table_name, file_count, file_size_bytes FROM ducklake_table_info('lake')",
    ):
        assert_same_rows(_ours(native.metadata, sql), native.reference(sql))


def test_cli_reads_a_mysql_catalog(native):
    sql = "SELECT id, s, extra FROM lake.main.big WHERE id > 90"
    expected = native.reference(sql)
    done = run_cli("sql", native.metadata, sql, "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted((r["id"], r["s"], r["extra"]) for r in rows) == sorted(
        tuple(r.values()) for r in expected.to_pylist()
    )
    tables = run_cli("tables", native.metadata, "-f", "jsonl")
    assert tables.returncode == 0, tables.stderr
    listed = {json.loads(line)["table_name"] for line in tables.stdout.splitlines()}
    assert listed == set(
        native.reference("SELECT table_name FROM ducklake_table_info('lake')").column(0).to_pylist()
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SECRET = "s3cret-never-shown"


def test_errors_are_typed_name_the_catalog_and_hide_the_password(mysql, native):
    keys = mysql_keys(mysql.conninfo)
    host = f"host={keys['host']} port={keys['port']} user={keys['user']}"
    empty = mysql.create_database()
    try:
        cases = [
            # server down
            (
                f"mysql:host=127.0.0.1 port={_free_port()} user=root password={SECRET} database=x",
                errors.CatalogNotFoundError,
                "cannot be reached",
            ),
            (
                f"mysql:{host} password={SECRET} database={mysql_keys(native.conninfo)['database']}",
                errors.CatalogNotFoundError,
                "refused the login",
            ),
            (
                f"mysql:{host} database=no_such_database_here",
                errors.CatalogNotFoundError,
                "does not exist",
            ),
            ("mysql:" + empty, errors.NotADuckLakeCatalogError, "not a DuckLake catalog"),
        ]
        for metadata, error, phrase in cases:
            catalog = DuckLakeCatalog(metadata)
            with pytest.raises(error) as info:
                catalog.table("main", "t")
            text = str(info.value)
            assert phrase in text and "MySQL catalog host=" in text, text
            assert SECRET not in text and SECRET not in repr(catalog), text
            with pytest.raises(error):  # and through SQL
                _ours(metadata, "SELECT * FROM lake.main.t")
    finally:
        mysql.drop_database(empty)
    for bad in (f"mysql:{host}", f"mysql:{host} database=x colour=blue", f"mysql:{host} port=x"):
        with pytest.raises(errors.InvalidOptionError) as info:
            DuckLakeCatalog(bad + f" password={SECRET}")
        assert SECRET not in str(info.value)
    with pytest.raises(errors.InvalidOptionError) as info:
        DuckLakeCatalog(f"mysql://root:{SECRET}@127.0.0.1:x/db")
    assert SECRET not in str(info.value)


def test_connection_strings_parse_as_duckdb_spells_them():
    parsed = parse_mysql("host=db.example port=3307 user=me passwd='p w' db=lake ssl_mode=required")
    assert dict(parsed.keys)["password"] == "p w" and parsed.database == "lake"
    assert "p w" not in parsed.describe()
    kwargs = parsed.connect_kwargs()
    assert (kwargs["host"], kwargs["port"], kwargs["database"]) == ("db.example", 3307, "lake")
    assert "ssl" in kwargs
    url = parse_mysql("mysql://me:p%40ss@db.example:3307/lake?ssl_mode=disabled")
    assert url.connect_kwargs()["password"] == "p@ss" and url.connect_kwargs()["ssl_disabled"]


def test_the_sql_is_spelled_for_mysql_outside_literals_only():
    sql = (
        "SELECT key, value, v.sql, CAST(x AS VARCHAR), CAST(y AS BIGINT) FROM t "
        "WHERE a = ? AND b = ? AND c LIKE 'key % ?' AND partition_key_index = ?"
    )
    spelled = mysql_sql(sql, [1, "name", 2])
    assert spelled == (
        'SELECT "key", value, v."sql", CAST(x AS CHAR), CAST(y AS SIGNED) FROM t '
        "WHERE a = %s AND b = BINARY %s AND c LIKE 'key %% ?' AND partition_key_index = %s"
    )


def test_a_table_created_after_a_read_began_is_not_there_for_that_read(native):
    """MySQL's table list is not transactional: an inlined-rows table DuckDB creates after a
    read's consistent snapshot began is listed, yet reading it fails ("Table definition has
    changed", 1412). For that read it does not exist (its rows are of later snapshots);
    the next read sees it. (Found by the racing writers of ``test_write_concurrency``.)"""
    import pymysql

    from ducklake_datafusion.catalog._backend import open_backend

    backend = open_backend(native.metadata)
    name = "ducklake_inlined_delete_424242"
    admin = pymysql.connect(**parse_mysql(native.conninfo).connect_kwargs(), autocommit=True)
    try:
        with backend.session() as session:
            session.lake_version()  # the snapshot taken
            with admin.cursor() as cursor:
                cursor.execute(f"CREATE TABLE {name} (file_id BIGINT, row_id BIGINT)")
            assert not session.has_table(name)
        with backend.session() as session:
            assert session.has_table(name)
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {name}")
        admin.close()
        backend.close()
