"""One long-lived catalog across commits and maintenance: the metadata memo never goes stale.

Metadata read for a query is memoised per lake version (latest snapshot id, snapshot
count). These tests keep one ``SessionContext`` and one ``DuckLakeCatalog`` alive while
DuckDB writes, compacts, flushes, rewrites and expires, and compare every answer with
DuckDB's, so a memo that outlived a change would show up as a wrong answer.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from datafusion import SessionContext
from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, errors, register


@pytest.fixture
def lake(make_lake, lake_spec):
    return make_lake(lake_spec, inline_limit=10)


def _long_lived(lake):
    catalog = DuckLakeCatalog(**lake.reader_args())
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    return catalog, ctx


def _same(lake, catalog, ctx, sql: str) -> None:
    lake.reader_args()  # the writer lets go of a DuckDB catalog file
    actual = ctx.sql(sql).to_arrow_table()
    assert_same_rows(actual, lake.reference(sql))


STEPS = [
    "INSERT INTO lake.main.t SELECT i, 'a' || i FROM range(0, 40) r(i)",
    "INSERT INTO lake.main.t SELECT i, 'b' || i FROM range(40, 80) r(i)",
    "INSERT INTO lake.main.t VALUES (1000, 'inlined'), (1001, 'inlined too')",
    "DELETE FROM lake.main.t WHERE i % 7 = 0",
    "UPDATE lake.main.t SET s = 'updated' WHERE i % 9 = 1",
    "CALL ducklake_flush_inlined_data('lake')",
    "CALL ducklake_merge_adjacent_files('lake')",
    "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.0)",
    "ALTER TABLE lake.main.t ADD COLUMN x INTEGER DEFAULT 5",
    "DELETE FROM lake.main.t WHERE i < 10",
    "CALL ducklake_expire_snapshots('lake', older_than => now())",
    "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)",
]


def test_every_commit_and_maintenance_step_is_seen(lake):
    lake.sql("CREATE TABLE lake.main.t (i INTEGER, s VARCHAR)")
    catalog, ctx = _long_lived(lake)
    queries = [
        "SELECT * FROM lake.main.t",
        "SELECT count(*) AS n FROM lake.main.t WHERE i BETWEEN 30 AND 50",
        "SELECT i, s FROM lake.main.t WHERE i = 41 OR i >= 1000",
    ]
    for step in STEPS:
        lake.sql(step)
        for sql in queries:
            _same(lake, catalog, ctx, sql)


def test_expired_snapshot_is_refused_after_it_was_read(lake):
    lake.sql("CREATE TABLE lake.main.t (i INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(30) r(i)")
    old = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(30, 60) r(i)")
    catalog, ctx = _long_lived(lake)
    assert ctx.sql(f'SELECT count(*) AS n FROM lake.main."t@v{old}"').to_pylist() == [{"n": 30}]
    lake.sql(f"CALL ducklake_expire_snapshots('lake', versions => [{old}])")
    lake.reader_args()
    with pytest.raises(Exception, match="expired|does not exist|not found"):
        ctx.sql(f'SELECT count(*) AS n FROM lake.main."t@v{old}"').to_arrow_table()
    with pytest.raises(errors.SnapshotNotFoundError):
        catalog.at(snapshot=old).table("main", "t")


def test_unchanged_lake_reads_only_the_version(lake):
    """A repeated query of an unchanged lake runs one tiny version query per lookup (none
    on a DuckDB file: its private copy is unchanged, and so is the version read from it)."""
    lake.sql("CREATE TABLE lake.main.t (i INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'a' FROM range(50) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE i = 3")
    catalog, ctx = _long_lived(lake)
    sql = "SELECT count(*) AS n FROM lake.main.t WHERE i > 10"
    first = ctx.sql(sql).to_pylist()
    assert first == lake.reference(sql).to_pylist()
    lake.reader_args()
    statements: list[str] = []
    backend = catalog.backend
    original = backend.session

    @contextmanager
    def counting_session():
        with original() as session:
            rows = session.rows

            def counted(text, params=()):
                statements.append(text)
                return rows(text, params)

            session.rows = counted
            session.arrow = lambda text, params=(): (_ for _ in ()).throw(
                AssertionError(f"unexpected re-read: {text}")
            )
            yield session

    backend.session = counting_session
    try:
        assert ctx.sql(sql).to_pylist() == first
    finally:
        backend.session = original
    assert all("max(snapshot_id), count(*)" in s for s in statements), statements
    if lake.spec.catalog == "duckdb":
        assert statements == []
    else:
        assert statements


def test_catalog_objects_share_one_attachment_of_a_duckdb_file(make_lake):
    """Every catalog object of one DuckDB file reads through one attachment of it."""
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (i INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")
    first = DuckLakeCatalog(**lake.reader_args())
    second = DuckLakeCatalog(**lake.reader_args())
    with first.backend.session() as outer, second.backend.session() as inner:
        assert outer.lake_version() == inner.lake_version()
    before = [first.table("main", "t").to_arrow(), second.table("main", "t").to_arrow()]
    first.close()  # the second keeps reading (each holds the shared copy)
    for table in before:
        assert_same_rows(table, lake.reference("SELECT * FROM lake.main.t"))
    lake.sql("INSERT INTO lake.main.t VALUES (10)")
    lake.reader_args()  # the writer detaches
    after = second.table("main", "t").to_arrow()
    second.backend.close()
    assert_same_rows(after, lake.reference("SELECT * FROM lake.main.t"))


EXIT_SCRIPT = """
import sys, time
from ducklake_datafusion import DuckLakeCatalog
DuckLakeCatalog(sys.argv[1]).table("main", "t")
time.sleep(max(0.0, float(sys.argv[2])))
"""


def test_exit_right_after_a_read_is_clean(make_lake, tmp_path):
    """A process that exits just after reading a DuckDB catalog must not abort.

    (A daemon idle timer calling into DuckDB during interpreter shutdown once killed the
    process with SIGABRT in about one run in six; the catalog is now read from a copy that
    needs no timer, and the shared instance is closed and its copies deleted at exit.)
    """
    import subprocess
    import sys

    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (i INTEGER)")
    lake.reader_args()
    script = tmp_path / "exit_race.py"
    script.write_text(EXIT_SCRIPT)
    for offset in ("-0.012", "-0.006", "-0.003", "0", "0.003", "-0.009", "-0.001", "0.001"):
        done = subprocess.run(
            [sys.executable, str(script), lake.metadata, offset],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (offset, done.returncode, done.stderr[-2000:])
