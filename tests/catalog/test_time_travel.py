"""Time travel: ``"t@vN"``, ``"t@<ISO time>"``, pinned catalogs, compared with DuckDB's AT (...).

One history written by the reference writer covers inserts (parquet and inlined), deletes
(delete files and inlined deletes), updates, schema changes, compaction (merge, flush) and
expiry; every snapshot that still exists is read both ways and compared.
"""

from __future__ import annotations

import datetime as dt

import pytest
from datafusion import SessionContext
from support.histories import EXPIRED, session, snapshot_times, write_history
from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, errors, register


def duckdb_ts(when: dt.datetime) -> str:
    return f"TIMESTAMPTZ '{when.astimezone(dt.timezone.utc).isoformat()}'"


@pytest.fixture
def lake(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=10)
    write_history(lake)
    return lake


def test_every_snapshot_matches_duckdb(lake):
    times = snapshot_times(lake)
    assert not set(EXPIRED) & set(times)
    readable = [s for s in sorted(times) if s >= 1]
    # A time names the snapshot at or before it. MySQL keeps whole seconds only, so several
    # snapshots may share a time, and DuckDB then picks any of them (we: the latest): times
    # are compared only where one snapshot has them (tests/catalog/test_mysql_catalog.py
    # spaces its snapshots a second apart).
    named = [s for s in readable if list(times.values()).count(times[s]) == 1]
    middle = (named or readable)[len(named or readable) // 2]
    # DuckDB first, then us: a DuckDB-file catalog cannot be open in both at once.
    cases = []  # (our SQL, pin, DuckDB's answer)
    for snapshot in readable:
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        cases.append((f'SELECT * FROM lake.main."t@v{snapshot}"', {}, expected))
        # the same instant as a time; one microsecond earlier is an earlier snapshot
        if snapshot in named:
            time_sql = f'SELECT * FROM lake.main."t@{times[snapshot].isoformat()}"'
            cases.append((time_sql, {}, expected))
        before = times[snapshot] - dt.timedelta(microseconds=1)
        if snapshot - 1 in named and times[snapshot - 1] <= before:
            earlier = lake.reference(
                f"SELECT * FROM lake.main.t AT (TIMESTAMP => {duckdb_ts(before)})"
            )
            naive = before.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()
            cases.append((f'SELECT * FROM lake.main."t@{naive}"', {}, earlier))
        if snapshot == middle:  # a pinned catalog reads the same as the suffix
            plain = "SELECT * FROM lake.main.t"
            cases.append((plain, {"snapshot": middle}, expected))
            if middle in named:
                cases.append((plain, {"snapshot_time": times[middle]}, expected))
    ctx = session(lake)
    for sql, pin, expected in cases:
        actual = (session(lake, **pin) if pin else ctx).sql(sql).to_arrow_table()
        assert_same_rows(actual, expected)

    # expired, unknown and too early snapshots are errors, never rows
    for snapshot in (*EXPIRED, max(times) + 5):
        with pytest.raises(errors.SnapshotNotFoundError, match=rf"no snapshot {snapshot}\b"):
            ctx.sql(f'SELECT * FROM lake.main."t@v{snapshot}"').to_arrow_table()
    with pytest.raises(errors.SnapshotNotFoundError, match="before the first snapshot"):
        ctx.sql('SELECT * FROM lake.main."t@2000-01-01T00:00:00"').to_arrow_table()
    with pytest.raises(errors.TableNotFoundError, match=r"main\.t at snapshot 0"):
        ctx.sql('SELECT * FROM lake.main."t@v0"').to_arrow_table()
    with pytest.raises(errors.SnapshotNotFoundError, match="no snapshot 3"):
        DuckLakeCatalog(**lake.reader_args(), snapshot=3).table("main", "t")
    # DataFusion drops errors raised in CatalogProvider.schema(); ours defers them to table().
    with pytest.raises(errors.SnapshotNotFoundError, match="no snapshot 3"):
        session(lake, snapshot=3).sql("SELECT * FROM lake.main.t").to_arrow_table()


def test_suffix_forms_and_errors(make_lake):
    lake = make_lake(inline_limit=10)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1)")
    lake.sql("INSERT INTO lake.main.t VALUES (2)")
    lake.sql('CREATE TABLE lake.main."odd@v1" (b VARCHAR)')  # a real name wins over a suffix
    lake.sql("INSERT INTO lake.main.\"odd@v1\" VALUES ('literal')")
    times = snapshot_times(lake)
    ctx = session(lake)

    def rows(sql):
        return ctx.sql(sql).to_pylist()

    assert rows('SELECT a FROM lake.main."t@V2" ORDER BY a') == [{"a": 1}]
    assert rows('SELECT a FROM lake.main."T@v3" ORDER BY a') == [{"a": 1}, {"a": 2}]
    plus2 = times[2].astimezone(dt.timezone(dt.timedelta(hours=2)))
    assert rows(f'SELECT a FROM lake.main."t@{plus2.isoformat()}"') == [{"a": 1}]
    zulu = times[2].astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert rows(f'SELECT a FROM lake.main."t@{zulu}"') == [{"a": 1}]
    spaced = times[2].astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert rows(f'SELECT a FROM lake.main."t@{spaced}"') == [{"a": 1}]
    assert rows('SELECT b FROM lake.main."odd@v1"') == [{"b": "literal"}]
    with pytest.raises(errors.InvalidOptionError, match="not a valid time-travel name"):
        rows('SELECT * FROM lake.main."t@yesterday"')
    with pytest.raises(errors.TableNotFoundError, match=r"main\.nope at snapshot 2"):
        rows('SELECT * FROM lake.main."nope@v2"')
    with pytest.raises(Exception, match="not found"):  # no suffix: DataFusion's own message
        rows("SELECT * FROM lake.main.nope")
    schema = DuckLakeCatalog(**lake.reader_args()).schema("main")
    assert schema.table_exist("t@v2") and not schema.table_exist("t@v0")
    assert not schema.table_exist("t@v99") and not schema.table_exist("t@nonsense")
    with pytest.raises(errors.TableNotFoundError, match=r"main\.t at snapshot 0"):
        session(lake, snapshot=0).sql("SELECT * FROM lake.main.t").to_arrow_table()


def test_at_copies_and_sqlite_text_times(make_lake):
    from support.lakes import LakeSpec

    lake = make_lake(LakeSpec("sqlite", "local"))
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    for value in range(3):
        lake.sql(f"INSERT INTO lake.main.t VALUES ({value})")
    times = snapshot_times(lake)
    lake_now = DuckLakeCatalog(**lake.reader_args())
    ctx = SessionContext()
    register(ctx, "now", lake_now)
    register(ctx, "then", lake_now.at(snapshot_time=times[3].replace(tzinfo=None)))
    register(ctx, "first", lake_now.at(snapshot=2))
    assert ctx.sql("SELECT count(*) AS n FROM now.main.t").to_pylist() == [{"n": 3}]
    assert ctx.sql("SELECT count(*) AS n FROM then.main.t").to_pylist() == [{"n": 2}]
    assert ctx.sql("SELECT count(*) AS n FROM first.main.t").to_pylist() == [{"n": 1}]
    assert lake_now.at(snapshot_time=times[3] - dt.timedelta(microseconds=1)).snapshot_id() == 2
    assert lake_now.at(snapshot_time=times[4] + dt.timedelta(days=1)).snapshot_id() == 4


def test_rewrite_keeps_history(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100) r(i)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")
    lake.sql("DELETE FROM lake.main.t WHERE id % 2 = 0")
    lake.sql("CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.3)")
    ctx = session(lake)
    for snapshot in range(2, lake.snapshot_id() + 1):
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        actual = ctx.sql(f'SELECT * FROM lake.main."t@v{snapshot}"').to_arrow_table()
        assert_same_rows(actual, expected)


def write_rewrite_history(lake) -> int:
    """Deletes, a rewrite and inlined deletes, ready for a flush; returns the rewrite snapshot.

    ``ducklake_rewrite_data_files`` retires the first data file (and its delete file) but
    leaves the inlined delete of position 500 in place. A flush afterwards writes a second
    delete file for the retired file, holding only that position and beginning before the
    rewrite, so one snapshot then has two live delete files for one data file.
    """
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, v VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'v' || i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 100")  # a delete file
    lake.sql("DELETE FROM lake.main.t WHERE id = 500")  # an inlined delete
    lake.sql("CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.0)")
    rewrite = lake.snapshot_id()
    lake.sql("DELETE FROM lake.main.t WHERE id IN (600, 601)")  # inlined, on the new file
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined')")
    return rewrite


def test_every_delete_file_live_at_a_snapshot_applies(make_lake, lake_spec):
    """Time travel and the change feed after flush-over-rewrite equal DuckDB's answers.

    Once the flush has run DuckDB itself answers wrongly (it scans the retired file once per
    live delete file: 1,899 rows instead of 899), but a flush never changes what a snapshot
    holds, so DuckDB's answers from *before* the flush are the oracle.
    """
    lake = make_lake(lake_spec, inline_limit=10)
    rewrite = write_rewrite_history(lake)
    latest = lake.snapshot_id()
    snapshots = range(rewrite - 3, latest + 1)
    states = {
        s: lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {s})") for s in snapshots
    }
    feeds = {
        s: lake.reference(f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {s}, {s})")
        for s in snapshots
    }
    lake.sql("CALL ducklake_flush_inlined_data('lake')")

    catalog = DuckLakeCatalog(**lake.reader_args())
    plan = catalog.at(snapshot=rewrite - 1).table("main", "t").scan_plan()
    counts = [len(t.deletes.files) for t in plan.tasks if getattr(t, "deletes", None)]
    assert 2 in counts, "the history no longer gives one data file two live delete files"
    ctx = session(lake)
    for snapshot in snapshots:
        actual = ctx.sql(f'SELECT * FROM lake.main."t@v{snapshot}"').to_arrow_table()
        assert_same_rows(actual, states[snapshot])
        sql = f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {snapshot}, {snapshot})"
        feed = ctx.sql(sql).to_arrow_table()
        if snapshot != rewrite:
            assert_same_rows(feed, feeds[snapshot])
        else:  # DuckDB lists rewritten rows as update pairs; ours is the state difference
            assert_same_rows(states[rewrite], states[rewrite - 1])
            assert feed.num_rows == 0
