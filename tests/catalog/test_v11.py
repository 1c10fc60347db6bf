"""DuckLake 1.1 catalogs: the reference writer's own 1.1 lake, migrated lakes, 1.1-only features.

No 1.1 writer installs here. So, besides the one lake the reference writer made at its
1.1-dev1 state (``../shared/lakes/ducklake-1.1-dev1``, with that writer's answers), 1.0
lakes written by DuckDB 1.5.5 are migrated to 1.1 as DuckDB 2.0 does (``lake_formats``)
and must read exactly as DuckDB read them before, at every snapshot, on every path; the
1.1-only features are built into migrated copies from equivalent 1.0 data, whose answers
DuckDB gives (``lake_formats``, ``puffin``). The whole suite also runs on migrated copies
with ``DUCKLAKE_TEST_FORMAT=1.1`` (``.ci/run`` runs the read tests that way).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.lake_formats import migrated_copy
from support.lakes import LakeSpec, assert_same_rows
from support.puffin import puffin_file

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import UnsupportedFeatureError, UnsupportedVersionError

REFERENCE_LAKE = Path(__file__).resolve().parents[3] / "shared" / "lakes" / "ducklake-1.1-dev1"
LOCAL_CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]


def _ours(metadata, sql: str, **kwargs) -> pa.Table:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**metadata, **kwargs))
    return ctx.sql(sql).to_arrow_table()


def _both_paths(args: dict, sql: str, expected: pa.Table, **kwargs) -> None:
    """Our answer on the Rust scan and on the exact reader, each equal to ``expected``."""
    for native in (True, False):
        assert_same_rows(_ours(args, sql, native=native, **kwargs), expected)


# -- the reference writer's own 1.1 lake -------------------------------------------------------


@pytest.fixture(scope="module")
def reference_lake() -> tuple[dict, dict]:
    """Reader arguments of the 1.1-dev1 lake and its ``checks.json``."""
    if not (REFERENCE_LAKE / "checks.json").exists():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"the reference 1.1 lake is missing: {REFERENCE_LAKE}")
        pytest.skip(f"the reference 1.1 lake is not beside the clone ({REFERENCE_LAKE})")
    args = {
        "metadata": str(REFERENCE_LAKE / "catalog.ducklake"),
        "data_path": str(REFERENCE_LAKE / "data") + "/",
    }
    return args, json.loads((REFERENCE_LAKE / "checks.json").read_text())


def _expected(name: str) -> pa.Table:
    return pq.read_table(REFERENCE_LAKE / "expected" / name)


def _as_expected(got: pa.Table, expected: pa.Table) -> pa.Table:
    """DuckDB sums integers as HUGEINT, which its Parquet export writes as DOUBLE."""
    return got.cast(expected.schema) if got.schema != expected.schema else got


@pytest.mark.parametrize("native", [True, False], ids=["rust", "exact"])
def test_the_reference_writer_s_1_1_lake_reads_as_it_wrote_it(reference_lake, native):
    args, checks = reference_lake
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**args, native=native))
    for check in checks["tables"] + checks["queries"]:
        expected = _expected(check["expected"])
        got = _as_expected(ctx.sql(check["sql"]).to_arrow_table(), expected)
        assert_same_rows(got, expected), check["sql"]


def test_the_reference_writer_s_epoch_partitions_prune_files(reference_lake):
    """``events`` (epoch_month, epoch_hour) and ``days`` (epoch_day): a range reads only
    the partitions it overlaps, even without column statistics."""
    args, _ = reference_lake
    catalog = DuckLakeCatalog(**args)
    events = catalog.table("main", "events")
    ts = pc.field("ts")
    low, high = dt.datetime(2024, 1, 10), dt.datetime(2024, 1, 12, 6)
    plan = events.scan_plan(filter=(ts >= pa.scalar(low)) & (ts < pa.scalar(high)))
    assert plan.stats.files_total == 700 and plan.stats.files_scanned <= 55
    days = catalog.table("main", "days")
    d = pc.field("d")
    plan = days.scan_plan(
        filter=(d >= pa.scalar(dt.date(1969, 12, 25))) & (d <= pa.scalar(dt.date(1970, 1, 3)))
    )
    assert plan.stats.files_total == 40 and plan.stats.files_scanned == 10


def test_the_reference_writer_s_view_column_comment(reference_lake):
    args, _ = reference_lake
    catalog = DuckLakeCatalog(**args)
    # build.sql: COMMENT ON COLUMN north_orders.total IS 'order total in EUR'
    assert catalog.column_comments("main", "north_orders") == {"total": "order total in EUR"}
    assert catalog.column_comments("main", "orders") == {}


def test_the_reference_writer_s_1_1_lake_from_the_command_line(reference_lake, tmp_path):
    from support.cli import run_cli

    args, checks = reference_lake
    check = checks["queries"][2]  # the group-by over deletion vectors
    out = tmp_path / "out.parquet"
    done = run_cli(
        "sql", args["metadata"], check["sql"], "--data-path", args["data_path"],
        "-f", "parquet", "-O", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = _expected(check["expected"])
    assert_same_rows(_as_expected(pq.read_table(out), expected), expected)


@pytest.mark.spark
def test_the_reference_writer_s_1_1_lake_on_spark(reference_lake, spark):
    from ducklake_datafusion.spark import read_table

    args, checks = reference_lake
    for check in checks["tables"]:
        frame = read_table(
            spark,
            args["metadata"],
            f"main.{check['table']}",
            snapshot=check["snapshot"],
            data_path=args["data_path"],
        )
        assert_same_rows(frame.toArrow(), _expected(check["expected"]))


# -- 1.0 lakes migrated to 1.1 --------------------------------------------------------------


def _history(lake) -> None:
    """Files, deletes, an update, inlined rows and deletes, a column added and renamed."""
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, l INTEGER[])")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, [i] FROM range(2000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, [i] FROM range(2000, 4000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 5 = 0")
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE k BETWEEN 100 AND 120")
    lake.sql("INSERT INTO lake.main.t VALUES (9000, 'inlined', [1, 2]), (9001, 'gone', NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 9001 OR k = 7")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN x INTEGER DEFAULT 4")
    lake.sql("INSERT INTO lake.main.t VALUES (9002, 'after', [3], 8)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO name")
    lake.sql("INSERT INTO lake.main.t VALUES (9003, 'renamed', [4], 9)")


def _every_snapshot(lake, args: dict, table: str = "t") -> None:
    """Every snapshot of ``table`` through both paths, each equal to DuckDB's on the
    original 1.0 lake."""
    for snapshot in range(1, lake.snapshot_id() + 1):
        expected = lake.reference(f"SELECT * FROM lake.main.{table}", snapshot=snapshot)
        _both_paths(args, f"SELECT * FROM lake.main.{table}", expected, snapshot=snapshot)


def _reader_args(lake, metadata: str, schema: str | None) -> dict:
    args = {**lake.reader_args("1.0"), "metadata": metadata}
    if schema is not None:
        args["metadata_schema"] = schema
    return args


@pytest.mark.parametrize("version", ["1.1", "1.1-dev1"])
@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_a_migrated_lake_reads_as_duckdb_read_it(make_lake, spec, version):
    lake = make_lake(spec, inline_limit=5)
    _history(lake)
    args = lake.reader_args("1.0")

    def repair(catalog) -> None:  # the 1.1 migration clears bounds of the wrong type
        catalog.execute(
            f"UPDATE {catalog.q}ducklake_file_column_stats SET min_value = NULL, "
            f"max_value = NULL WHERE data_file_id <= (SELECT min(data_file_id) + 1 FROM "
            f"{catalog.q}ducklake_data_file)"
        )

    metadata, schema = migrated_copy(
        args["metadata"], args.get("metadata_schema"), version=version, edit=repair
    )
    migrated = _reader_args(lake, metadata, schema)
    with DuckLakeCatalog(**migrated).backend.session() as session:
        (found,) = session.rows("SELECT value FROM ducklake_metadata WHERE key = 'version'")[0]
    assert found == version
    _every_snapshot(lake, migrated)
    changes = f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', 0, {lake.snapshot_id()})"
    _both_paths(migrated, changes, lake.reference(changes))


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_a_half_migrated_catalog_reads_as_it_is(make_lake, spec):
    """The migration renames inlined tables one by one: a catalog left between (one table
    renamed, one not) reads each table by its own columns."""
    lake = make_lake(spec, inline_limit=5)
    _history(lake)  # inlined rows under two schema versions: two inlined tables
    args = lake.reader_args("1.0")
    first = _inlined_tables(args)[:1]
    metadata, schema = migrated_copy(
        args["metadata"], args.get("metadata_schema"), inlined_tables=first
    )
    _every_snapshot(lake, _reader_args(lake, metadata, schema))


def _inlined_tables(args: dict) -> list[str]:
    with DuckLakeCatalog(**args).backend.session() as session:
        rows = session.rows("SELECT table_name FROM ducklake_inlined_data_tables")
        names = sorted(r[0] for r in rows if session.has_table(r[0]))
    assert len(names) >= 2
    return names


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_a_user_column_named_row_id(make_lake, spec):
    """1.1 frees ``row_id`` for users (the system column is ``_ducklake_row_id``): a table
    whose column is renamed so, in a migrated copy, with inlined rows and file rows."""
    lake = make_lake(spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.r (rid INTEGER, v VARCHAR)")
    lake.sql("INSERT INTO lake.main.r SELECT i, 'f' || i FROM range(100) r(i)")
    lake.sql("INSERT INTO lake.main.r VALUES (1000, 'inlined'), (1001, 'too')")
    lake.sql("DELETE FROM lake.main.r WHERE rid = 1001")
    args = lake.reader_args("1.0")

    def rename(catalog) -> None:
        q = catalog.q
        catalog.execute(
            f"UPDATE {q}ducklake_column SET column_name = 'row_id' WHERE column_name = 'rid'"
        )
        for name in _inlined_of(catalog):
            catalog.execute(f"ALTER TABLE {catalog.table(name)} RENAME COLUMN rid TO row_id")

    metadata, schema = migrated_copy(args["metadata"], args.get("metadata_schema"), edit=rename)
    migrated = _reader_args(lake, metadata, schema)
    for snapshot in range(2, lake.snapshot_id() + 1):
        expected = lake.reference("SELECT rid AS row_id, v FROM lake.main.r", snapshot=snapshot)
        _both_paths(migrated, "SELECT * FROM lake.main.r", expected, snapshot=snapshot)


def _inlined_of(catalog) -> list[str]:
    existing = catalog.tables()
    rows = catalog.rows(f"SELECT table_name FROM {catalog.q}ducklake_inlined_data_tables")
    return [r[0] for r in rows if r[0] in existing]


# -- epoch partitions, built into migrated copies --------------------------------------------

EPOCH_KEYS = ("epoch_year", "epoch_month", "epoch_day", "epoch_hour")
_EPOCH = dt.datetime(1970, 1, 1)


def _epoch_values(value: dt.datetime) -> tuple[int, int, int, int]:
    """DuckLake 1.1's epoch_year/month/day/hour of a (UTC) timestamp, as specified:
    whole periods since 1970-01-01, negative before it."""
    micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
    return (
        value.year - 1970,
        (value.year - 1970) * 12 + value.month - 1,
        micros // 86_400_000_000,
        micros // 3_600_000_000,
    )


def _parse_bound(text: str) -> dt.datetime:
    text = text.strip().replace("T", " ")
    for suffix in ("+00", "+00:00"):
        text = text.removesuffix(suffix)
    if len(text) == 10:
        return dt.datetime.fromisoformat(text)
    return dt.datetime.fromisoformat(text[:26] if "." in text else text[:19])


def _epoch_partitions(column: str, drop_stats: bool):
    """An edit that turns a table partitioned by year/month/day[/hour] of ``column`` into
    one partitioned by the epoch transforms of the same periods: each file's values are
    computed from its minimum (every file holds one period), as the 1.1 writer computes
    them from its rows. ``drop_stats`` deletes the column's statistics, so that only the
    partition values can prune."""

    def edit(catalog) -> None:
        q = catalog.q
        rows = catalog.rows(
            f"SELECT c.table_id, c.column_id FROM {q}ducklake_column c "
            f"JOIN {q}ducklake_partition_column p ON p.table_id = c.table_id "
            "AND p.column_id = c.column_id WHERE c.column_name = ?",
            [column],
        )
        table_id, column_id = rows[0]
        keys = catalog.rows(
            f"SELECT partition_key_index FROM {q}ducklake_partition_column WHERE table_id = ? "
            "ORDER BY partition_key_index",
            [table_id],
        )
        for (index,) in keys:
            catalog.execute(
                f"UPDATE {q}ducklake_partition_column SET transform = ? "
                "WHERE table_id = ? AND partition_key_index = ?",
                [EPOCH_KEYS[index], table_id, index],
            )
        minima = catalog.rows(
            f"SELECT data_file_id, min_value FROM {q}ducklake_file_column_stats "
            "WHERE table_id = ? AND column_id = ?",
            [table_id, column_id],
        )
        for file_id, low in minima:
            values = _epoch_values(_parse_bound(low))
            for (index,) in keys:
                catalog.execute(
                    f"UPDATE {q}ducklake_file_partition_value SET partition_value = ? "
                    "WHERE data_file_id = ? AND partition_key_index = ?",
                    [str(values[index]), file_id, index],
                )
        if drop_stats:
            catalog.execute(
                f"DELETE FROM {q}ducklake_file_column_stats WHERE table_id = ? AND column_id = ?",
                [table_id, column_id],
            )

    return edit


EPOCH_QUERIES = {
    "ts": [
        (
            "SELECT count(*) AS c, CAST(sum(n) AS BIGINT) AS s FROM lake.main.ev WHERE ts >= TIMESTAMP "
            "'1969-12-31 22:00:00' AND ts < TIMESTAMP '1970-01-01 03:30:00'"
        ),
        (
            "SELECT * FROM lake.main.ev WHERE ts BETWEEN TIMESTAMP '2023-12-31 23:59:00' AND "
            "TIMESTAMP '2024-01-01 00:05:00'"
        ),
        "SELECT count(*) AS c FROM lake.main.ev WHERE ts < TIMESTAMP '1969-12-31 01:00:00'",
        "SELECT count(*) AS c FROM lake.main.ev WHERE ts > TIMESTAMP '2024-01-01 20:00:00'",
    ],
    "d": [
        (
            "SELECT count(*) AS c, CAST(sum(n) AS BIGINT) AS s FROM lake.main.dd WHERE d BETWEEN DATE "
            "'1969-12-30' AND DATE '1970-01-02'"
        ),
        "SELECT * FROM lake.main.dd WHERE d = DATE '1969-12-31'",
        "SELECT count(*) AS c FROM lake.main.dd WHERE d >= DATE '2024-02-28'",
    ],
    "tz": [
        (
            "SELECT count(*) AS c, CAST(sum(n) AS BIGINT) AS s FROM lake.main.ez WHERE tz >= TIMESTAMPTZ "
            "'1969-12-31 23:00:00+00' AND tz < TIMESTAMPTZ '1970-01-01 02:00:00+00'"
        ),
    ],
}


def _epoch_lake(make_lake, spec):
    lake = make_lake(spec, inline_limit=0)
    lake.sql("SET TimeZone = 'UTC'")
    lake.sql("CREATE TABLE lake.main.ev (ts TIMESTAMP, n INTEGER)")
    lake.sql("ALTER TABLE lake.main.ev SET PARTITIONED BY (year(ts), month(ts), day(ts), hour(ts))")
    for start in ("1969-12-30 18:00:00", "2023-12-31 20:00:00"):
        lake.sql(
            f"INSERT INTO lake.main.ev SELECT TIMESTAMP '{start}' + INTERVAL (i * 7) MINUTE, i "
            "FROM range(0, 500) r(i)"
        )
    lake.sql("DELETE FROM lake.main.ev WHERE n % 13 = 0")
    lake.sql("CREATE TABLE lake.main.dd (d DATE, n INTEGER)")
    lake.sql("ALTER TABLE lake.main.dd SET PARTITIONED BY (year(d), month(d), day(d))")
    lake.sql(
        "INSERT INTO lake.main.dd SELECT DATE '1969-12-25' + INTERVAL (i % 12) DAY, i "
        "FROM range(0, 600) r(i)"
    )
    lake.sql(
        "INSERT INTO lake.main.dd SELECT DATE '2024-02-26' + INTERVAL (i % 5) DAY, i "
        "FROM range(0, 100) r(i)"
    )
    lake.sql("CREATE TABLE lake.main.ez (tz TIMESTAMPTZ, n INTEGER)")
    lake.sql("ALTER TABLE lake.main.ez SET PARTITIONED BY (year(tz), month(tz), day(tz), hour(tz))")
    lake.sql(
        "INSERT INTO lake.main.ez SELECT TIMESTAMPTZ '1969-12-31 20:00:00+00' + "
        "INTERVAL (i * 11) MINUTE, i FROM range(0, 200) r(i)"
    )
    return lake


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_epoch_partitions_prune_and_read_as_duckdb(make_lake, spec):
    lake = _epoch_lake(make_lake, spec)
    args = lake.reader_args("1.0")

    def edit(catalog) -> None:
        for column in EPOCH_QUERIES:
            _epoch_partitions(column, drop_stats=True)(catalog)

    metadata, schema = migrated_copy(args["metadata"], args.get("metadata_schema"), edit=edit)
    migrated = _reader_args(lake, metadata, schema)
    with DuckLakeCatalog(**migrated).backend.session() as session:
        transforms = {r[0] for r in session.rows("SELECT transform FROM ducklake_partition_column")}
    assert transforms == set(EPOCH_KEYS)
    for queries in EPOCH_QUERIES.values():
        for sql in queries:
            _both_paths(migrated, sql, lake.reference(sql))
    # with no statistics left, only the epoch values can have pruned these
    catalog = DuckLakeCatalog(**migrated)
    ts = pc.field("ts")
    plan = catalog.table("main", "ev").scan_plan(
        filter=(ts >= pa.scalar(dt.datetime(1969, 12, 31, 22)))
        & (ts < pa.scalar(dt.datetime(1970, 1, 1, 3, 30)))
    )
    assert plan.stats.files_scanned == 6 < plan.stats.files_total, plan.stats
    d = pc.field("d")
    plan = catalog.table("main", "dd").scan_plan(filter=d == pa.scalar(dt.date(1969, 12, 31)))
    assert plan.stats.files_scanned == 1 < plan.stats.files_total, plan.stats
    tz = pc.field("tz")
    plan = catalog.table("main", "ez").scan_plan(
        filter=tz >= pa.scalar(dt.datetime(1970, 1, 1, 23, tzinfo=dt.timezone.utc))
    )
    # rows run to 1970-01-02 08:40 UTC: the hours 23:00 to 08:00, ten partitions
    assert plan.stats.files_scanned == 10 < plan.stats.files_total, plan.stats


# -- deletion vectors of several snapshots in one Puffin file --------------------------------


def _puffin_deletes(lake_root: Path):
    """An edit that replaces each data file's chain of Parquet delete files (one per
    DELETE, each holding every position deleted so far) by one Puffin file holding one
    deletion vector per snapshot, as DuckLake 1.1 writes them."""

    def edit(catalog) -> None:
        q = catalog.q
        settings = dict(catalog.rows(f"SELECT key, value FROM {q}ducklake_metadata"))
        rows = catalog.rows(
            f"SELECT d.delete_file_id, d.table_id, d.data_file_id, d.begin_snapshot, "
            f"d.end_snapshot, d.path, d.path_is_relative, s.path, t.path "
            f"FROM {q}ducklake_delete_file d JOIN {q}ducklake_table t ON t.table_id = d.table_id "
            f"JOIN {q}ducklake_schema s ON s.schema_id = t.schema_id ORDER BY d.begin_snapshot"
        )
        chains: dict[int, list] = {}
        for row in rows:
            chains.setdefault(int(row[2]), []).append(row)
        next_id = 1 + max(int(r[0]) for r in rows)
        for data_file_id, chain in chains.items():
            directory = Path(settings["data_path"]) / chain[0][7] / chain[0][8]
            first_deleted: dict[int, int] = {}  # position -> snapshot of its DELETE
            for row in chain:
                path = Path(row[5]) if not _truthy(row[6]) else directory / row[5]
                deletes = pq.read_table(path)
                positions = deletes.column("pos").to_pylist()
                if SNAPSHOT_COLUMN in deletes.column_names:  # per-position snapshots
                    snapshots = deletes.column(SNAPSHOT_COLUMN).to_pylist()
                else:
                    snapshots = [int(row[3])] * len(positions)
                for position, snapshot in zip(positions, snapshots, strict=True):
                    known = first_deleted.get(position, snapshot)
                    first_deleted[position] = min(known, int(snapshot))
            for earlier, later in itertools.pairwise(chain):
                assert int(earlier[4]) == int(later[3]), "one live delete file at a time"
            vectors = [
                (snapshot, sorted(p for p, s in first_deleted.items() if s <= snapshot))
                for snapshot in sorted(set(first_deleted.values()))
            ]
            data, footer = puffin_file(vectors, f"data file {data_file_id}")
            target = directory / f"ducklake-{uuid.uuid4()}-delete.puffin"
            target.write_bytes(data)
            catalog.execute(
                f"DELETE FROM {q}ducklake_delete_file WHERE data_file_id = ?", [data_file_id]
            )
            catalog.execute(
                f"INSERT INTO {q}ducklake_delete_file (delete_file_id, table_id, begin_snapshot, "
                "end_snapshot, data_file_id, path, path_is_relative, format, delete_count, "
                "file_size_bytes, footer_size, encryption_key, partial_max, row_group_count) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'puffin', ?, ?, ?, NULL, ?, NULL)",
                [
                    next_id,
                    int(chain[0][1]),
                    vectors[0][0],
                    chain[-1][4],
                    data_file_id,
                    str(target),
                    False,
                    len(vectors[-1][1]),
                    len(data),
                    footer,
                    vectors[-1][0],
                ],
            )
            next_id += 1

    return edit


SNAPSHOT_COLUMN = "_ducklake_internal_snapshot_id"


def _truthy(value) -> bool:
    return value in (True, 1, "1", "t", "true")


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_deletes_of_several_snapshots_in_one_puffin_file(make_lake, spec, tmp_path):
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(3000, 5000) r(i)")
    for predicate in ("k % 11 = 0", "k % 13 = 0", "k BETWEEN 2990 AND 3010", "k % 17 = 0"):
        lake.sql(f"DELETE FROM lake.main.t WHERE {predicate}")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'late' FROM range(5000, 5100) r(i)")
    args = lake.reader_args("1.0")
    edit = _puffin_deletes(tmp_path)
    metadata, schema = migrated_copy(args["metadata"], args.get("metadata_schema"), edit=edit)
    migrated = _reader_args(lake, metadata, schema)
    with DuckLakeCatalog(**migrated).backend.session() as session:
        formats = session.rows("SELECT DISTINCT format, partial_max FROM ducklake_delete_file")
    assert {f for f, _ in formats} == {"puffin"} and all(p is not None for _, p in formats)
    _every_snapshot(lake, migrated)
    for a, b in ((0, lake.snapshot_id()), (4, 5), (5, 6)):
        changes = f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {a}, {b})"
        _both_paths(migrated, changes, lake.reference(changes))


# -- view column comments ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_column_comments_of_tables_and_views(make_lake, spec):
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("COMMENT ON COLUMN lake.main.t.k IS 'the key'")
    lake.sql("CREATE VIEW lake.main.v AS SELECT k, s AS label FROM lake.main.t")
    expected = lake.reference(
        "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = 'lake' "
        "AND table_name = 't' AND comment IS NOT NULL"
    )
    args = lake.reader_args("1.0")
    assert DuckLakeCatalog(**args).column_comments("main", "t") == dict(
        zip(expected.column(0).to_pylist(), expected.column(1).to_pylist())
    )
    assert DuckLakeCatalog(**args).column_comments("main", "v") == {}  # 1.0: none

    def tag(catalog) -> None:  # what 1.1's COMMENT ON COLUMN v.label writes
        q = catalog.q
        ((view_id, begin),) = catalog.rows(
            f"SELECT view_id, begin_snapshot FROM {q}ducklake_view WHERE view_name = 'v'"
        )
        catalog.execute(
            f"INSERT INTO {q}ducklake_view_column_tag VALUES (?, 'label', ?, NULL, 'comment', "
            "'shown as label')",
            [view_id, begin],
        )

    metadata, schema = migrated_copy(args["metadata"], args.get("metadata_schema"), edit=tag)
    migrated = DuckLakeCatalog(**_reader_args(lake, metadata, schema))
    assert migrated.column_comments("main", "v") == {"label": "shown as label"}
    assert migrated.column_comments("main", "t") == {"k": "the key"}


# -- what 1.1 adds that is refused, and versions this reader does not know -------------------


def test_a_nested_schema_is_refused_by_name_and_never_read_as_a_top_level_one(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0)
    lake.sql("CREATE SCHEMA lake.sales")
    lake.sql("CREATE TABLE lake.main.t (k INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1)")
    lake.sql("CREATE TABLE lake.sales.t (k INTEGER)")
    lake.sql("INSERT INTO lake.sales.t VALUES (2)")
    args = lake.reader_args("1.0")

    def nest(catalog) -> None:  # "sales" becomes "main.sales"... named "main" under "main"
        q = catalog.q
        catalog.execute(
            f"UPDATE {q}ducklake_schema SET parent_schema_id = 0, schema_name = 'main' "
            "WHERE schema_name = 'sales'"
        )

    metadata, schema = migrated_copy(args["metadata"], args.get("metadata_schema"), edit=nest)
    migrated = _reader_args(lake, metadata, schema)
    expected = lake.reference("SELECT * FROM lake.main.t")
    _both_paths(migrated, "SELECT * FROM lake.main.t", expected)  # not the nested main.main
    catalog = DuckLakeCatalog(**migrated)
    assert catalog.list_schema_names() == {"main"}
    with pytest.raises(UnsupportedFeatureError, match=r"main\.main is a nested schema"):
        catalog.table("main.main", "t")


def _catalog_of_version(make_lake, version: str) -> str:
    """A SQLite catalog of one table (a row), migrated, its version then set to ``version``."""
    lake = make_lake(LakeSpec("sqlite", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1)")
    args = lake.reader_args("1.0")

    def bump(catalog) -> None:
        catalog.execute(
            f"UPDATE {catalog.q}ducklake_metadata SET value = ? WHERE key = 'version'", [version]
        )

    return migrated_copy(args["metadata"], None, edit=bump)[0]


@pytest.mark.parametrize("version", ["1.2", "2.0", "1.1-dev2"])
def test_unknown_versions_are_refused_on_every_path(make_lake, version, tmp_path):
    from support.cli import run_cli

    from ducklake_datafusion.provider.functions import table_changes

    metadata = _catalog_of_version(make_lake, version)
    message = rf"version '{version}'; this reader reads 1\.0, 1\.1-dev1, 1\.1 catalogs"
    for native in (True, False):
        with pytest.raises(UnsupportedVersionError, match=message):
            _ours({"metadata": metadata}, "SELECT * FROM lake.main.t", native=native)
    with pytest.raises(UnsupportedVersionError, match=message):
        table_changes(DuckLakeCatalog(metadata), "main", "t", 0, 1)
    done = run_cli("sql", metadata, "SELECT * FROM lake.main.t")
    assert done.returncode != 0 and "UnsupportedVersionError" in done.stderr, done.stderr
    assert f"version '{version}'" in done.stderr


@pytest.mark.spark
def test_an_unknown_version_is_refused_on_spark(make_lake, spark):
    from ducklake_datafusion.spark import read_table

    metadata = _catalog_of_version(make_lake, "1.2")
    with pytest.raises(UnsupportedVersionError, match=r"version '1\.2'; this reader reads 1\.0"):
        read_table(spark, metadata, "main.t").toArrow()


def test_a_catalog_file_of_a_newer_duckdb_says_which_duckdb_it_needs(make_lake, tmp_path):
    """A DuckDB 2 catalog file (storage version 69) with duckdb 1.5 installed."""
    import duckdb

    if not duckdb.__version__.startswith("1."):
        pytest.skip("duckdb >= 2 opens the file (tests/test_reader_compat.py reads it)")
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER)")
    path = tmp_path / "newer.ducklake"
    path.write_bytes(Path(lake.reader_args("1.0")["metadata"]).read_bytes())
    forge_storage_version(path, 69)
    with pytest.raises(
        UnsupportedVersionError, match=r"needs duckdb >= 2 to open; pip install -U duckdb"
    ):
        DuckLakeCatalog(str(path)).table("main", "t")


def forge_storage_version(path: Path, version: int) -> None:
    """Write ``version`` into a DuckDB file's main header, with the header's checksum
    (DuckDB's: 5381 XOR-ed with each 64-bit word times a constant)."""
    import struct

    with open(path, "r+b") as f:
        block = bytearray(f.read(4096))
        struct.pack_into("<Q", block, 12, version)
        checksum = 5381
        for (word,) in struct.iter_unpack("<Q", bytes(block[8:])):
            checksum ^= (word * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        struct.pack_into("<Q", block, 0, checksum)
        f.seek(0)
        f.write(block)
