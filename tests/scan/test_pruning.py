"""Data skipping: files pruned by catalog statistics and partitions, row groups inside files.

Correctness is always checked against DuckDB; the number of files a scan opens is the
number of data-file tasks in its plan (executors open nothing else).
"""

from __future__ import annotations

import datetime as dt
import logging
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.scan import DataFileTask


def _files_opened(plan) -> int:
    return sum(isinstance(t, DataFileTask) for t in plan.tasks)


@pytest.fixture(scope="module")
def clustered(tmp_path_factory, request):
    """Five files with disjoint ranges on every column type that has statistics; built once
    per worker and only read by the tests that take it."""
    from support.lakes import LakeSpec
    from support.lakes import make_lake as build

    lake = build(LakeSpec("duckdb", "local"), tmp_path_factory.mktemp("clustered"), inline_limit=0)
    request.addfinalizer(lake.close)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, d DECIMAL(10,2), s VARCHAR, day DATE, ts TIMESTAMP, "
        "tz TIMESTAMPTZ, f DOUBLE, n INTEGER)"
    )
    for part in range(5):
        lo = part * 1000
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i / 100, 'key' || lpad(i::VARCHAR, 6, '0'), "
            f"DATE '2020-01-01' + i::INTEGER, TIMESTAMP '2020-01-01' + INTERVAL (i) HOUR, "
            f"TIMESTAMPTZ '2020-01-01 00:00:00+00' + INTERVAL (i) MINUTE, "
            f"CASE WHEN {part} = 4 AND i % 100 = 0 THEN 'nan'::DOUBLE ELSE i END, "
            f"CASE WHEN {part} = 2 THEN NULL ELSE i END FROM range({lo}, {lo + 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 50 = 7")
    return lake


CASES = [
    ("k = 1500", 1),
    ("k BETWEEN 1990 AND 2010", 2),
    ("k < 500", 1),
    ("k >= 4000", 1),
    ("k > 10000", 0),
    ("k IN (5, 4005)", 2),
    ("d <= 5.5", 1),
    ("s = 'key003333'", 1),
    ("s >= 'key004000'", 1),
    ("day < DATE '2020-01-10'", 1),
    ("ts >= TIMESTAMP '2020-06-01'", 2),
    ("tz < TIMESTAMPTZ '2020-01-01 10:00:00+00'", 1),
    ("n IS NULL", 1),
    ("n IS NOT NULL AND k < 3000", 2),
    ("k < 100 OR k > 4900", 2),
    ("NOT (k < 4000)", 1),
    ("f > 4500", 1),
]


@pytest.mark.parametrize("predicate,expected_files", CASES, ids=[c[0] for c in CASES])
def test_stats_skip_files_and_answers_match(clustered, predicate, expected_files, caplog):
    with caplog.at_level(logging.DEBUG, logger="ducklake_datafusion"):
        check(clustered, f"SELECT k, s, n FROM lake.main.t WHERE {predicate}")
    opened = _opened_from_log(caplog.messages)
    assert opened == expected_files, caplog.messages


def _opened_from_log(messages) -> int:
    """Files to read, from the planner's debug line of the last scan."""
    lines = [m for m in messages if m.startswith("plan main.t@")]
    return int(re.search(r": (\d+) of \d+ files to read", lines[-1]).group(1))


def test_nan_statistics_never_skip(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.f (x DOUBLE)")
    lake.sql("INSERT INTO lake.main.f VALUES (1.0), ('nan'::DOUBLE), (2.0)")
    catalog = DuckLakeCatalog(**lake.reader_args())
    plan = catalog.table("main", "f").scan_plan(filter=pc.field("x") > 5.0)
    assert _files_opened(plan) == 1
    check(lake, "SELECT x FROM lake.main.f WHERE x > 5.0")


def test_plan_reports_skipping(clustered):
    catalog = DuckLakeCatalog(**clustered.reader_args())
    plan = catalog.table("main", "t").scan_plan(filter=pc.field("k") < 1500)
    assert plan.stats.files_total == 5
    assert plan.stats.files_skipped_by_stats == 3
    assert plan.stats.files_with_deletes == 2
    assert _files_opened(plan) == 2


def test_partition_pruning(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.p (region VARCHAR, ts TIMESTAMP, v INTEGER)")
    lake.sql("ALTER TABLE lake.main.p SET PARTITIONED BY (region, year(ts))")
    lake.sql(
        "INSERT INTO lake.main.p SELECT ['north','south','east'][i % 3 + 1], "
        "TIMESTAMP '2020-06-01' + INTERVAL (i % 4) YEAR, i FROM range(1200) r(i)"
    )
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "p")
    total = table.scan_plan().stats.files_total
    plan = table.scan_plan(filter=pc.field("region") == "south")
    assert (
        plan.stats.files_skipped_by_partition + plan.stats.files_skipped_by_stats
        == total - total // 3
    )
    year_filter = pc.field("ts") >= pa.scalar(dt.datetime(2023, 1, 1))
    plan = table.scan_plan(filter=year_filter)
    assert _files_opened(plan) == total // 4
    check(lake, "SELECT * FROM lake.main.p WHERE region = 'south'")
    check(lake, "SELECT count(*) AS n FROM lake.main.p WHERE ts >= TIMESTAMP '2023-01-01'")


def test_row_group_pruning_kept_with_deletes(make_lake, monkeypatch):
    lake = make_lake(inline_limit=0)
    lake.sql("CALL lake.set_option('parquet_row_group_size', '1000')")
    lake.sql("CREATE TABLE lake.main.r (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.r SELECT i, 'v' || i FROM range(20000) r(i)")
    lake.sql("DELETE FROM lake.main.r WHERE k % 3 = 0")
    read_groups = set()

    def spy_iter(self, *args, _original=pq.ParquetFile.iter_batches, **kwargs):
        read_groups.update(kwargs.get("row_groups") or [])
        return _original(self, *args, **kwargs)

    def spy_group(self, i, *args, _original=pq.ParquetFile.read_row_group, **kwargs):
        read_groups.add(i)
        return _original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy_iter)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy_group)
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "r")
    plan = table.scan_plan(filter=(pc.field("k") >= 5000) & (pc.field("k") < 6500))
    from ducklake_datafusion.read import execute_plan

    result = execute_plan(plan)
    assert plan.stats.files_with_deletes == 1
    assert 1 <= len(read_groups) <= 3, read_groups  # 20 row groups in the file, 2 overlap
    expected = lake.reference("SELECT k, s FROM lake.main.r WHERE k >= 5000 AND k < 6500")
    from support.lakes import assert_same_rows

    assert_same_rows(result, expected)


def test_explain_shows_fragments(clustered):
    from datafusion import SessionContext

    from ducklake_datafusion import register

    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**clustered.reader_args(), native=False))
    plan = ctx.sql("EXPLAIN SELECT count(*) FROM lake.main.t WHERE k < 1500").to_pylist()
    physical = next(r["plan"] for r in plan if r["plan_type"] == "physical_plan")
    # two files survive the statistics: at most one partition per surviving file (the
    # exact reader's writable provider at the latest snapshot; a pinned catalog's
    # pyarrow.dataset shows them as fragments)
    match = re.search(r"DuckLakeExactScanExec: .*partitions=(\d+)", physical)
    assert match and 1 <= int(match.group(1)) <= 2, physical


CALENDAR_SPECS = {
    "year": "year(c)",
    "year_month": "year(c), month(c)",
    "year_month_day": "year(c), month(c), day(c)",
    "year_month_day_hour": "year(c), month(c), day(c), hour(c)",
    "day_before_year": "day(c), year(c), month(c)",
    "month_only": "month(c)",
}
CALENDAR_TYPES = ["TIMESTAMP", "DATE", "TIMESTAMP_NS", "TIMESTAMP_S"]
# (predicate on timestamps, on dates, the same as pyarrow filters)
CALENDAR_FILTERS = [
    (
        "c >= TIMESTAMP '2024-01-02 23:00:00'",
        "c >= DATE '2024-01-02'",
        pc.field("c") >= pa.scalar(dt.datetime(2024, 1, 2, 23)),
        pc.field("c") >= pa.scalar(dt.date(2024, 1, 2)),
    ),
    (
        "c < TIMESTAMP '2024-01-01 00:00:00'",
        "c < DATE '2024-01-01'",
        pc.field("c") < pa.scalar(dt.datetime(2024, 1, 1)),
        pc.field("c") < pa.scalar(dt.date(2024, 1, 1)),
    ),
    (
        "c = TIMESTAMP '2024-01-05 13:00:00'",
        "c = DATE '2024-01-05'",
        pc.field("c") == pa.scalar(dt.datetime(2024, 1, 5, 13)),
        pc.field("c") == pa.scalar(dt.date(2024, 1, 5)),
    ),
    ("c IS NULL", "c IS NULL", pc.field("c").is_null(), pc.field("c").is_null()),
]


# every spec on timestamps and dates; the other units (the same code past the unit's
# conversion) on the specs with an hour and with a day before its year
CALENDAR_CASES = [(s, t) for s in CALENDAR_SPECS for t in CALENDAR_TYPES[:2]] + [
    (s, t) for s in ("year_month_day_hour", "day_before_year") for t in CALENDAR_TYPES[2:]
]


@pytest.mark.parametrize(
    ("spec", "column_type"), CALENDAR_CASES, ids=[f"{s}-{t}" for s, t in CALENDAR_CASES]
)
def test_calendar_partitions_prune_through_the_transform(make_lake, spec, column_type):
    """year/month/day/hour partitions bound the source column, checked without statistics.

    A month, day or hour of no known year bounds nothing; answers always match DuckDB.
    """
    from dataclasses import replace

    from ducklake_datafusion.catalog import metadata
    from ducklake_datafusion.provider._pyarrow_filter import filter_of
    from ducklake_datafusion.read import execute_plan
    from ducklake_datafusion.scan._pruning import FilePruner

    lake = make_lake(inline_limit=0)
    lake.sql(f"CREATE TABLE lake.main.c (c {column_type}, v INTEGER)")
    lake.sql(f"ALTER TABLE lake.main.c SET PARTITIONED BY ({CALENDAR_SPECS[spec]})")
    lake.sql(  # every 7 hours across a year boundary, plus the last microsecond of a day
        f"INSERT INTO lake.main.c SELECT CAST(TIMESTAMP '2023-12-30 22:00:00' + "
        f"INTERVAL (i * 7) HOUR AS {column_type}), i FROM range(40) r(i)"
    )
    lake.sql(
        f"INSERT INTO lake.main.c VALUES (CAST(TIMESTAMP '2024-01-02 23:59:59.999999' AS "
        f"{column_type}), 1000), (NULL, 1001)"
    )
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "c")
    with catalog.backend.session() as session:
        files = metadata.read_table_files(
            session, table.entry, table.snapshot_id, with_partitions=True
        )
    files = replace(files, stats=None)  # partitions alone must prove every skip
    for timestamp_sql, date_sql, timestamp_filter, date_filter in CALENDAR_FILTERS:
        is_date = column_type == "DATE"
        predicate = date_sql if is_date else timestamp_sql
        expr = date_filter if is_date else timestamp_filter
        _, by_partition = FilePruner(filter_of(expr, table.schema), table.columns, files).masks()
        if spec == "month_only":
            assert by_partition.all(), predicate
        else:
            assert not by_partition.all(), predicate
        expected = lake.reference(f"SELECT v FROM lake.main.c WHERE {predicate}")
        got = execute_plan(table.scan_plan(filter=expr, columns=["v"]))
        assert sorted(got.column("v").to_pylist()) == sorted(expected.column("v").to_pylist())
        check(lake, f"SELECT v FROM lake.main.c WHERE {predicate}")


def test_timestamptz_calendar_partitions_never_prune(make_lake):
    """The writer derives year/month/day/hour of a TIMESTAMPTZ in its own session time zone,
    which the catalog does not record, so those partitions must not prune."""
    lake = make_lake(inline_limit=0)
    lake.sql("SET TimeZone = 'America/New_York'")
    lake.sql("CREATE TABLE lake.main.z (c TIMESTAMPTZ, v INTEGER)")
    lake.sql("ALTER TABLE lake.main.z SET PARTITIONED BY (year(c), month(c), day(c), hour(c))")
    lake.sql(  # 23:30 in New York is 03:30 UTC of the next day (and of the next year)
        "INSERT INTO lake.main.z VALUES (TIMESTAMPTZ '2023-12-31 23:30:00-05', 1), "
        "(TIMESTAMPTZ '2024-07-04 23:30:00-04', 2)"
    )
    lake.sql("RESET TimeZone")
    check(lake, "SELECT v FROM lake.main.z WHERE c >= TIMESTAMPTZ '2024-01-01 00:00:00+00'")
    check(lake, "SELECT v FROM lake.main.z WHERE c < TIMESTAMPTZ '2024-07-05 00:00:00+00'")
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "z")
    expr = pc.field("c") >= pa.scalar(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    assert table.scan_plan(filter=expr).stats.files_skipped_by_partition == 0
