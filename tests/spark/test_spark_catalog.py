"""The lake as a Spark catalog: ``DuckLakeCatalog`` (the package's jar) and its planner process.

A SQL-only user configures ``spark.sql.catalog.<name>`` and reads ``<name>.main.t``, at any
snapshot (``VERSION AS OF`` / ``TIMESTAMP AS OF``). Every answer is compared with DuckDB's
reader of the same lake at the same snapshot; plans are checked for which files Spark's
reader took, which the planner read exactly, and which were pruned.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from support.lakes import (
    LakeSpec,
    assert_same_rows,
    deleting_history,
    evolve_structs,
    evolve_table,
    merged_inserts,
    row_grouped_deletes,
)
from support.spark_settings import CATALOG_CLASS, spark_settings

pytest.importorskip("pyspark")

from ducklake_datafusion.spark import read_table
from ducklake_datafusion.spark._core._versions import has_data_source

pytestmark = pytest.mark.spark

# The catalog database is read by the planner as on every other path (tests/catalog/ covers
# SQLite); a file catalog and the server ones here.
LOCAL_CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "postgres", "mysql")]


def _scan_text(frame) -> str:
    """The scan node's text in the executed plan (the catalog's description)."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan" in plan, plan
    return plan


def _every_snapshot_as_duckdb(spark, lake, name: str) -> None:
    """``SELECT *`` at every snapshot from the first INSERT on equals DuckDB's."""
    for snapshot in range(2, lake.snapshot_id() + 1):
        frame = spark.sql(f"SELECT * FROM {name}.main.t VERSION AS OF {snapshot}")
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(frame.toArrow(), expected)


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_every_snapshot_of_a_deleting_history_reads_as_duckdb(spark, make_lake, catalog, spec):
    lake = make_lake(spec, inline_limit=3)
    deleting_history(lake)
    name = catalog(lake)
    for snapshot in range(2, lake.snapshot_id() + 1):
        frame = spark.sql(f"SELECT * FROM {name}.main.t VERSION AS OF {snapshot}")
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(frame.toArrow(), expected)
        assert "read exactly by the planner" not in _scan_text(frame)  # deletes in Spark's reader
        where = "g = 3 OR k BETWEEN 1490 AND 1570"
        frame = spark.sql(f"SELECT k, s FROM {name}.main.t VERSION AS OF {snapshot} WHERE {where}")
        expected = lake.reference(
            f"SELECT k, s FROM lake.main.t AT (VERSION => {snapshot}) WHERE {where}"
        )
        assert_same_rows(frame.toArrow(), expected)
    latest = spark.table(f"{name}.main.t")
    assert_same_rows(latest.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    groups = lake.reference(
        "SELECT g, count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t GROUP BY g"
    )
    got = spark.sql(f"SELECT g, count(*) AS n, sum(k) AS sk FROM {name}.main.t GROUP BY g")
    assert_same_rows(got.toArrow(), groups)
    count = spark.sql(f"SELECT count(*) AS n FROM {name}.main.t")
    assert_same_rows(count.toArrow(), lake.reference("SELECT count(*) AS n FROM lake.main.t"))


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_older_layouts_and_merged_files_read_as_duckdb(spark, make_lake, catalog, spec):
    lake = make_lake(spec)
    evolve_table(lake, deletes=True)
    name = catalog(lake)
    for snapshot in range(2, lake.snapshot_id() + 1):
        frame = spark.sql(f"SELECT * FROM {name}.main.t VERSION AS OF {snapshot}")
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(frame.toArrow(), expected)
        if "note" in expected.column_names:  # a projection of a column dropped and re-added
            picked = spark.sql(f"SELECT note, k FROM {name}.main.t VERSION AS OF {snapshot}")
            expected = lake.reference(f"SELECT note, k FROM lake.main.t AT (VERSION => {snapshot})")
            assert_same_rows(picked.toArrow(), expected)
    # Renamed columns are read by Spark's reader under their old names; widened types and
    # defaults by the planner's exact reader, and the plan says so.
    text = _scan_text(spark.table(f"{name}.main.t"))
    assert "read by Spark" in text and "read exactly by the planner" in text

    merged = make_lake(spec)
    merged_inserts(merged)
    name = catalog(merged)
    frame = spark.table(f"{name}.main.t")
    assert_same_rows(frame.toArrow(), merged.reference("SELECT * FROM lake.main.t"))
    for snapshot in range(2, merged.snapshot_id() + 1):
        frame = spark.sql(f"SELECT * FROM {name}.main.t VERSION AS OF {snapshot}")
        expected = merged.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(frame.toArrow(), expected)


def test_timestamp_as_of_reads_the_snapshot_current_at_that_time(spark, make_lake, catalog):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    for start in range(0, 3000, 1000):
        lake.sql(f"INSERT INTO lake.main.t SELECT i FROM range({start}, {start + 1000}) r(i)")
        time.sleep(0.01)
    lake.sql("DELETE FROM lake.main.t WHERE k % 3 = 0")
    name = catalog(lake)
    times = lake.reference(
        "SELECT snapshot_id, strftime(snapshot_time AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') "
        "AS t FROM lake.snapshots() WHERE snapshot_id >= 2 ORDER BY 1"
    ).to_pylist()
    for row in times:
        frame = spark.sql(
            f"SELECT count(*) AS n, sum(k) AS s FROM {name}.main.t TIMESTAMP AS OF '{row['t']}'"
        )
        expected = lake.reference(
            f"SELECT count(*) AS n, sum(k)::BIGINT AS s FROM lake.main.t "
            f"AT (VERSION => {row['snapshot_id']})"
        )
        assert_same_rows(frame.toArrow(), expected)


def _ranged_lake(make_lake):
    """``main.t``: 20 files, file i holding k in [1000 i, 1000 i + 999], one with deletes."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    for i in range(20):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT j, 's' || j FROM range({1000 * i}, {1000 * i + 1000}) r(j)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 5100 AND 5199")
    return lake


@pytest.mark.parametrize(
    ("where", "kept"),
    [
        ("k BETWEEN 5000 AND 5999", 1),
        ("k >= 18500", 2),
        ("k < 1000 OR k > 19000", 2),
        ("k IN (10, 15010)", 2),
        ("s LIKE '%42'", 20),  # a suffix: no statistics prune it
        ("k = 5150", 1),  # a deleted row: the file is kept, the row is not returned
    ],
)
def test_the_querys_filters_prune_files_before_spark_lists_them(
    spark, make_lake, catalog, where, kept
):
    lake = _ranged_lake(make_lake)
    name = catalog(lake)
    frame = spark.sql(f"SELECT * FROM {name}.main.t WHERE {where}")
    assert_same_rows(frame.toArrow(), lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))
    text = _scan_text(frame)
    assert f"files: {kept} read by Spark" in text, text
    assert f"{20 - kept} pruned of 20 live" in text, text


@pytest.mark.parametrize(
    ("where", "kept"),
    [("k BETWEEN 5000 AND 5999", 1), ("k >= 18500", 2), ("k = 5150", 1), ("s LIKE '%42'", 20)],
)
def test_read_table_where_prunes_files_through_the_catalog(
    spark, make_lake, spark_package_jar, where, kept
):
    """``read_table(...).where(...)`` is the catalog's scan: the DataFrame's filter leaves
    out the files whose statistics cannot match, before Spark opens any."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    lake = _ranged_lake(make_lake)
    metadata = lake.reader_args()["metadata"]
    frame = read_table(spark, metadata, "main.t").where(where)
    assert_same_rows(frame.toArrow(), lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))
    text = _scan_text(frame)
    assert f"files: {kept} read by Spark" in text, text
    assert f"{20 - kept} pruned of 20 live" in text, text
    # where= is the same filter; an older snapshot is pinned by id, also after new writes.
    same = read_table(spark, metadata, "main.t", where=where)
    assert f"files: {kept} read by Spark" in _scan_text(same)
    before = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT j, 'n' FROM range(5000, 5010) r(j)")
    pinned = read_table(spark, metadata, "main.t", snapshot=before).where(where)
    expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {before}) WHERE {where}")
    assert_same_rows(pinned.toArrow(), expected)
    assert f"snapshot {before} [files: {kept} read by Spark" in _scan_text(pinned)
    assert_same_rows(same.toArrow(), expected)  # read_table pinned the then latest snapshot


def test_read_table_errors_stay_ours_on_the_catalog_path(spark, make_lake, spark_package_jar):
    """A read the catalog cannot build is read_table's earlier path, with its typed error,
    and leaves no catalog settings behind; the next good read is the catalog's scan."""
    from ducklake_datafusion.errors import SnapshotNotFoundError, TableNotFoundError
    from ducklake_datafusion.spark import _catalog_read
    from ducklake_datafusion.spark._core._options import SourceOptions

    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")
    metadata = lake.reader_args()["metadata"]
    with pytest.raises(TableNotFoundError, match="nope"):
        read_table(spark, metadata, "main.nope")
    with pytest.raises(SnapshotNotFoundError, match="99"):
        read_table(spark, metadata, "main.t", snapshot=99)
    parsed = SourceOptions.parse({"metadata": metadata, "path": "t"})
    prefix = "spark.sql.catalog." + _catalog_read.catalog_settings(parsed, sys.executable)[0]
    assert spark.conf.get(prefix, None) is None
    frame = read_table(spark, metadata, "t").where("a > 4")
    assert_same_rows(frame.toArrow(), lake.reference("SELECT * FROM lake.main.t WHERE a > 4"))
    assert "files: 1 read by Spark" in _scan_text(frame)
    assert spark.conf.get(prefix, None) == CATALOG_CLASS


def _planner_processes(spark) -> set[int]:
    """The ids of the planner processes this session's JVM runs now (its child processes)."""
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:  # it ended meanwhile
            continue
        if parent == jvm and b"ducklake_datafusion.spark.planner" in command:
            found.add(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="counts processes in /proc")
def test_a_jvm_keeps_few_planner_processes(spark, make_lake, catalog):
    """Each catalog (read_table's runtime catalog per lake included) has its planner; the
    JVM keeps at most MAX_LIVE (8) of them: once 8 live, a new catalog takes over the process
    unused longest (no new Python started), whose catalog gets another when asked; one
    process started ahead for the next catalog while fewer live."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 3 = 0")
    expected = lake.reference("SELECT count(*) AS n, sum(k)::BIGINT AS s FROM lake.main.t")
    names = [catalog(lake, planner_idle_seconds="120") for _ in range(11)]
    seen = _planner_processes(spark)
    for name in names:
        got = spark.sql(f"SELECT count(*) AS n, sum(k) AS s FROM {name}.main.t").toArrow()
        assert_same_rows(got, expected)
        now = _planner_processes(spark)
        assert len(now) <= 8 + 1
        seen |= now
    first = spark.sql(f"SELECT count(*) AS n, sum(k) AS s FROM {names[0]}.main.t")
    assert_same_rows(first.toArrow(), expected)  # its planner serves another: one answers
    assert len(_planner_processes(spark)) <= 8 + 1
    # 12 catalog starts; processes of the session's earlier catalogs were taken over (one
    # more may have idled out and been started again meanwhile)
    assert len(seen | _planner_processes(spark)) <= 8 + 1 + 1, seen


def test_read_tables_runtime_catalog_keeps_secrets_out_of_set(spark, spark_package_jar):
    """Secret storage options reach the runtime catalog as ``secret.<option>``, which Spark's
    default redaction hides in ``SET`` (``access_key_id`` and ``account_key`` it would show
    under their own names); a regex that would show one keeps the catalog out."""
    from ducklake_datafusion.spark import _catalog_read
    from ducklake_datafusion.spark._core._options import SourceOptions

    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    secrets = {"access_key_id": "AKIAEXAMPLE1", "secret_access_key": "s3cr3t-value-2"}
    secrets.update(account_key="azure-key-3", account_name="acct", region="eu-west-1")
    parsed = SourceOptions.parse(
        {"metadata": "postgres:dbname=x password=pw4", "path": "t", **secrets}
    )
    name, options = _catalog_read.catalog_settings(parsed, None)
    assert name == _catalog_read.catalog_settings(parsed, None)[0]  # one catalog per options
    other = SourceOptions.parse({"metadata": "postgres:dbname=x password=pw4", "path": "t"})
    assert _catalog_read.catalog_settings(other, None)[0] != name
    assert not any(value in name for value in ("AKIAEXAMPLE1", "s3cr3t", "azure-key", "pw4"))
    assert _catalog_read._unredacted(spark, name, options) == []
    prefix = f"spark.sql.catalog.{name}"
    try:
        _catalog_read._configure(spark, name, options)
        shown = [row for row in spark.sql("SET").collect() if row[0].startswith(prefix)]
        assert len(shown) == len(options) + 1
        text = repr(shown)
        for value in ("AKIAEXAMPLE1", "s3cr3t-value-2", "azure-key-3", "pw4"):
            assert value not in text, text
        assert "eu-west-1" in text  # not a secret: shown as set
    finally:
        for key in [prefix, *(f"{prefix}.{key}" for key in options)]:
            spark.conf.unset(key)

    class Conf:  # a session whose regex would show the secret names
        @staticmethod
        def get(key, default=None):
            return "(?i)password" if key == "spark.redaction.regex" else default

    class Session:
        conf = Conf()

    assert _catalog_read._unredacted(Session(), name, options) == [
        key for key in options if key.startswith("secret.") and key != "secret.metadata"
    ]


def test_namespaces_tables_and_descriptions_follow_the_lake(spark, make_lake, catalog):
    lake = make_lake()
    lake.sql("CREATE SCHEMA lake.sales")
    lake.sql("CREATE TABLE lake.sales.orders (id BIGINT, amount DECIMAL(10,2))")
    lake.sql("INSERT INTO lake.sales.orders VALUES (1, 9.50), (2, 3.25)")
    lake.sql("COMMENT ON COLUMN lake.sales.orders.amount IS 'in euros'")
    lake.sql("CREATE TABLE lake.main.gone (x INTEGER)")
    lake.sql("INSERT INTO lake.main.gone VALUES (42)")
    before_drop = lake.snapshot_id()
    lake.sql("DROP TABLE lake.main.gone")
    name = catalog(lake)
    namespaces = {r[0] for r in spark.sql(f"SHOW NAMESPACES IN {name}").collect()}
    expected = {
        r["schema_name"]
        for r in lake.reference(
            "SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'lake'"
        ).to_pylist()
    }
    assert namespaces == expected
    tables = {r.tableName for r in spark.sql(f"SHOW TABLES IN {name}.sales").collect()}
    assert tables == {"orders"}
    assert not spark.sql(f"SHOW TABLES IN {name}.main").collect()  # gone was dropped
    described = {
        r.col_name: (r.data_type, r.comment)
        for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}.sales.orders").collect()
    }
    assert described["id"] == ("bigint", None)
    assert described["amount"] == ("decimal(10,2)", "in euros")
    assert f"ducklake.snapshot={lake.snapshot_id()}" in described["Table Properties"][0]
    old = spark.sql(f"SELECT * FROM {name}.main.gone VERSION AS OF {before_drop}")
    assert_same_rows(
        old.toArrow(),
        lake.reference(f"SELECT * FROM lake.main.gone AT (VERSION => {before_drop})"),
    )


def test_types_spark_reads_differently_come_from_the_exact_reader(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, u UBIGINT, h HUGEINT, ns TIMESTAMP_NS, "
        "iv INTERVAL, tz TIMESTAMPTZ, j JSON, l INTEGER[], st STRUCT(a INTEGER, b VARCHAR))"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, i * 1000000000000, i * 100000000000000000000, "
        "TIMESTAMP_NS '2024-01-01 00:00:00.123456789' + INTERVAL (i) SECOND, "
        "INTERVAL (i) DAY + INTERVAL 3 MONTH, TIMESTAMPTZ '2024-05-01 10:00:00+00', "
        "'{\"a\": ' || i || '}', [i, i + 1], {'a': i, 'b': 'x' || i} FROM range(50) r(i)"
    )
    lake.sql("DELETE FROM lake.main.t WHERE k % 5 = 0")
    name = catalog(lake)
    frame = spark.table(f"{name}.main.t")
    assert "read exactly by the planner" in _scan_text(frame)
    exact = "k, u::DECIMAL(20,0) AS u, h::DECIMAL(38,0) AS h, tz, j::VARCHAR AS j, l, st"
    assert_same_rows(
        frame.select("k", "u", "h", "tz", "j", "l", "st").toArrow(),
        lake.reference(f"SELECT {exact} FROM lake.main.t"),
    )
    if has_data_source():  # and every column as read_table's data source converts it
        reference = read_table(spark, lake.reader_args()["metadata"], "main.t", native=False)
        assert frame.schema == reference.schema
        assert_same_rows(frame.toArrow(), reference.toArrow())


def _error_text(spark, sql: str) -> str:
    with pytest.raises(Exception) as caught:  # Spark's or py4j's class, by release
        spark.sql(sql).collect()
    return str(caught.value)


def test_errors_name_the_snapshot_the_table_and_the_operation(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")
    name = catalog(lake)
    text = _error_text(spark, f"SELECT * FROM {name}.main.t VERSION AS OF 999")
    assert "SnapshotNotFoundError" in text and "999" in text
    text = _error_text(spark, f"SELECT * FROM {name}.main.t VERSION AS OF 'latest'")
    assert "InvalidOptionError" in text and "latest" in text
    assert "TABLE_OR_VIEW_NOT_FOUND" in _error_text(spark, f"SELECT * FROM {name}.main.nope")
    for sql, words in [  # (what the catalog cannot do, named; its DDL: test_spark_ddl.py)
        (f"REPLACE TABLE {name}.main.t AS SELECT 1 AS k", "does not support REPLACE TABLE"),
        (f"ALTER TABLE {name}.main.t ADD COLUMN z INT FIRST", "FIRST or AFTER"),
    ]:
        text = _error_text(spark, sql)
        assert "UnsupportedFeatureError" in text and words in text

    files = lake.reference("SELECT data_file FROM ducklake_list_files('lake', 't')").to_pylist()
    os.remove(files[0]["data_file"])
    text = _error_text(spark, f"SELECT * FROM {name}.main.t")
    assert "DataFileMissingError" in text and os.path.basename(files[0]["data_file"]) in text


def test_a_misconfigured_catalog_says_what_to_set(spark, make_lake, catalog):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    missing = catalog(lake, metadata="")
    spark.conf.unset(f"spark.sql.catalog.{missing}.metadata")
    text = _error_text(spark, f"SHOW TABLES IN {missing}.main")
    assert "InvalidOptionError" in text and f"spark.sql.catalog.{missing}.metadata" in text
    no_python = catalog(lake, python="/nonexistent/python3")
    text = _error_text(spark, f"SHOW TABLES IN {no_python}.main")
    assert "MissingDependencyError" in text and "/nonexistent/python3" in text
    bad_option = catalog(lake, no_such_option="1")
    text = _error_text(spark, f"SHOW TABLES IN {bad_option}.main")
    assert "InvalidOptionError" in text and "no_such_option" in text


def test_an_idle_planner_exits_and_the_next_query_starts_another(spark, make_lake, catalog):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100) r(i)")
    name = catalog(lake, planner_idle_seconds="0.5")
    expected = lake.reference("SELECT count(*) AS n FROM lake.main.t")
    for _ in range(3):
        got = spark.sql(f"SELECT count(*) AS n FROM {name}.main.t").toArrow()
        assert_same_rows(got, expected)
        time.sleep(1.0)


def test_spark_sql_reads_and_writes_the_lake_by_configuration_alone(
    make_lake, spark_package_jar, tmp_path
):
    """``spark-sql`` with the catalog's settings alone: time travel, INSERT, UPDATE, DELETE
    and MERGE INTO (Spark's own rewrite, no session extension)."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    import pyspark

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k < 10")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100, 150) r(i)")
    before = lake.snapshot_id()
    metadata = lake.reader_args()["metadata"]
    spark_sql = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-sql")
    env = {**os.environ, "SPARK_HOME": os.path.dirname(pyspark.__file__)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    done = subprocess.run(
        [
            spark_sql,
            "--master",
            "local[1]",
            "--jars",
            spark_package_jar,
            "--conf",
            f"spark.sql.catalog.lake={CATALOG_CLASS}",
            "--conf",
            f"spark.sql.catalog.lake.metadata={metadata}",
            "--conf",
            f"spark.sql.catalog.lake.python={sys.executable}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            f"spark.local.dir={tmp_path}",
            "--conf",
            f"spark.sql.warehouse.dir={tmp_path / 'warehouse'}",
            "--conf",
            f"spark.driver.extraJavaOptions=-Dderby.system.home={tmp_path}",
            "-e",
            (
                "SELECT count(*), sum(k) FROM lake.main.t VERSION AS OF 3; "
                "SELECT count(*), sum(k) FROM lake.main.t; "
                "INSERT INTO lake.main.t SELECT id + 1000, 'sql' FROM range(5); "
                "SELECT count(*), sum(k) FROM lake.main.t; "
                "UPDATE lake.main.t SET s = 'u' WHERE k < 20; "
                "DELETE FROM lake.main.t WHERE k BETWEEN 30 AND 34; "
                "MERGE INTO lake.main.t AS t USING (SELECT id + 1003 AS k FROM range(4)) AS src "
                "ON t.k = src.k WHEN MATCHED THEN UPDATE SET s = 'm' "
                "WHEN NOT MATCHED THEN INSERT (k, s) VALUES (src.k, 'new')"
            ),
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = [line.split("\t") for line in done.stdout.strip().splitlines()]
    expected = [
        lake.reference(f"SELECT count(*), sum(k)::BIGINT FROM lake.main.t {at}").to_pylist()[0]
        for at in (
            "AT (VERSION => 3)",
            f"AT (VERSION => {before})",
            f"AT (VERSION => {before + 1})",
        )
    ]
    assert got == [[str(v) for v in row.values()] for row in expected]
    assert lake.snapshot_id() == before + 4  # the INSERT, UPDATE, DELETE, MERGE: one each
    changed = lake.reference(
        f"SELECT k, CASE WHEN k < 20 THEN 'u' WHEN k IN (1003, 1004) THEN 'm' ELSE s END AS s "
        f"FROM lake.main.t AT (VERSION => {before + 1}) WHERE k NOT BETWEEN 30 AND 34 "
        "UNION ALL SELECT * FROM (VALUES (1005, 'new'), (1006, 'new')) v(k, s)"
    )
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), changed)


def test_the_planner_protocol_answers_without_spark(make_lake):
    """The planning process alone, as the JVM drives it: framing, answers, typed errors."""
    import io
    import struct

    from ducklake_datafusion.read import import_plan
    from ducklake_datafusion.spark.planner import PROTOCOL_VERSION, serve

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 3")
    requests = [
        {"op": "open", "options": {"metadata": lake.reader_args()["metadata"]}},
        {"op": "table", "namespace": "main", "name": "t"},
        {"op": "scan", "namespace": "main", "name": "t", "snapshot": 3, "columns": ["k"]},
        {"op": "table", "namespace": "main", "name": "missing"},
    ]
    import json

    stream = b"".join(
        struct.pack(">I", len(body)) + body for body in (json.dumps(r).encode() for r in requests)
    )
    out = io.BytesIO()
    serve(io.BytesIO(stream), out)
    answers, view = [], memoryview(out.getvalue())
    while view:
        (length,) = struct.unpack(">I", view[:4])
        header = json.loads(bytes(view[4 : 4 + length]))
        view = view[4 + length :]
        blobs = []
        for _ in range(header["blobs"]):
            (size,) = struct.unpack(">Q", view[:8])
            blobs.append(bytes(view[8 : 8 + size]))
            view = view[8 + size :]
        answers.append((header, blobs))
    assert answers[0][0]["protocol"] == PROTOCOL_VERSION
    assert answers[1][0]["snapshot"] == 3 and '"name":"k"' in answers[1][0]["schema"]
    export = import_plan(answers[2][1][0])
    assert export.files.column("deleted").to_pylist() == [[3]]
    assert pa.ipc.open_stream(answers[2][1][1]).read_all().num_rows == 0
    assert answers[3][0]["error"]["class"] == "TableNotFoundError"


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_the_change_feed_in_sql_is_duckdbs(spark, make_lake, catalog, spec):
    lake = make_lake(spec, inline_limit=3)
    deleting_history(lake)
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 4")
    lake.sql("UPDATE lake.main.t SET extra = 5 WHERE k < 100")
    name = catalog(lake)
    last = lake.snapshot_id()
    for start, end in [(2, 2), (2, 5), (4, 8), (6, last), (1, last)]:
        got = spark.sql(f"SELECT * FROM ducklake_table_changes('{name}.main.t', {start}, {end})")
        expected = lake.reference(
            f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {start}, {end})"
        )
        assert_same_rows(got.toArrow(), expected)
    no_end = spark.sql(f"SELECT * FROM ducklake_table_changes('{name}.main.t', 5)")
    expected = lake.reference(
        f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', 5, {last})"
    )
    assert_same_rows(no_end.toArrow(), expected)
    text = _error_text(spark, f"SELECT * FROM ducklake_table_changes('{name}.main.t', 999, 1000)")
    assert "SnapshotNotFoundError" in text
    text = _error_text(
        spark, "SELECT * FROM ducklake_table_changes('spark_catalog.default.t', 1, 2)"
    )
    assert "InvalidOptionError" in text and "not a DuckLake catalog" in text


@pytest.fixture(
    params=[LakeSpec("duckdb", "s3"), LakeSpec("duckdb", "gcs"), LakeSpec("sqlite", "azure")],
    ids=lambda spec: spec.storage,
)
def store(request):
    """(lake spec on an object store, the Spark session with that store's connector)."""
    spec = request.param
    fixture = {"s3": "s3a", "gcs": "gcs_spark", "azure": "abfs_spark"}[spec.storage]
    return spec, request.getfixturevalue(fixture)


def _abfs_without_blob_mode(spec, spark) -> bool:
    """Azurite's Blob endpoint on a Hadoop whose ABFS lacks Blob mode (before 3.4.2:
    pyspark 3.5 and 4.0): Spark cannot reach the files, the planner reads them exactly."""
    from ducklake_datafusion.spark.parquet import _hadoop

    return spec.storage == "azure" and _hadoop._hadoop_version(spark) < _hadoop._ABFS_BLOB_HADOOP


def test_lakes_on_object_stores_read_through_the_catalog(store, make_lake, catalog):
    spec, spark = store
    lake = make_lake(spec, inline_limit=3)
    deleting_history(lake)
    name = catalog(lake)
    _every_snapshot_as_duckdb(spark, lake, name)
    text = _scan_text(spark.table(f"{name}.main.t"))
    where = "k BETWEEN 1490 AND 1570"
    frame = spark.sql(f"SELECT * FROM {name}.main.t WHERE {where}")
    assert_same_rows(frame.toArrow(), lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))
    if _abfs_without_blob_mode(spec, spark):
        assert "files: 0 read by Spark, 3 read exactly by the planner" in text, text
        assert "Azure Blob endpoint" in text, text
        assert "files: 0 read by Spark, 1 read exactly" in _scan_text(frame)
        return
    assert "files: 3 read by Spark" in text and "read exactly" not in text, text
    assert "files: 1 read by Spark, 2 pruned of 3 live" in _scan_text(frame)


def test_exact_rows_of_evolved_structs_in_several_batches(spark, make_lake, catalog):
    """Files and inlined rows from before struct fields were added go to the planner's
    exact reader: several Arrow batches of struct columns, each loaded into the same
    vectors (closing one batch's vectors must not drop the next one's children)."""
    lake = make_lake(inline_limit=5)
    evolve_structs(lake)
    name = catalog(lake)
    _every_snapshot_as_duckdb(spark, lake, name)
    assert "read exactly by the planner" in _scan_text(spark.table(f"{name}.main.t"))
    # with s itself selected: DuckDB answers s.n.k of the NULL struct of row 101 with the
    # field's default 'kk' when s is not selected, NULL when it is (as here, and as we do)
    picked = spark.sql(f"SELECT id, s, s.b AS b, s.n.k AS k FROM {name}.main.t WHERE id > 10")
    expected = lake.reference("SELECT id, s, s.b AS b, s.n.k AS k FROM lake.main.t WHERE id > 10")
    assert_same_rows(picked.toArrow(), expected)


def test_nested_columns_are_read_by_sparks_reader(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, l INTEGER[], st STRUCT(a INTEGER, b VARCHAR), "
        "ll VARCHAR[][], ls STRUCT(x DOUBLE, y DATE)[])"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, CASE WHEN i % 9 = 0 THEN NULL ELSE [i, NULL, i + 1] END, "
        "{'a': i, 'b': 'b' || i}, [['x' || i], [], NULL], "
        "[{'x': i / 2, 'y': DATE '2024-01-01' + (i % 30)::INTEGER}] FROM range(300) r(i)"
    )
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 0")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER")
    lake.sql("INSERT INTO lake.main.t (k, l, st) VALUES (1000, [1], {'a': 1, 'b': 'one'})")
    name = catalog(lake)
    _every_snapshot_as_duckdb(spark, lake, name)
    text = _scan_text(spark.table(f"{name}.main.t"))
    assert "files: 2 read by Spark" in text and "read exactly" not in text, text
    picked = spark.sql(f"SELECT k, st.b, l[1] AS second FROM {name}.main.t WHERE k < 50")
    expected = lake.reference("SELECT k, st.b AS b, l[2] AS second FROM lake.main.t WHERE k < 50")
    assert_same_rows(picked.toArrow(), expected)


@pytest.mark.parametrize(
    "conf",
    [
        {},  # vectorised, whole files
        {"spark.sql.files.maxPartitionBytes": "16k", "spark.sql.files.openCostInBytes": "1k"},
        {"spark.sql.parquet.enableVectorizedReader": "false"},  # rows
        {"spark.sql.parquet.columnarReaderBatchSize": "100"},
        {"spark.sql.codegen.wholeStage": "false"},  # rows out of columnar batches
        {"spark.sql.columnVector.offheap.enabled": "true"},
    ],
    ids=["whole", "split", "rows", "small-batches", "batch-rows", "off-heap"],
)
def test_deleted_rows_are_dropped_in_every_reading_mode(spark, make_lake, catalog, conf):
    """Files cut into slices at row-group bounds, the row reader, small batches: each row
    keeps its position in its file, and the deleted ones are dropped. Whole files read
    without filters count their rows' positions; with the query's filters (row groups and
    pages skipped) or in slices they read Spark's row index: both, in one scan too."""
    lake = make_lake(inline_limit=0)
    row_grouped_deletes(lake)
    name = catalog(lake)
    with spark_settings(spark, conf):
        frame = spark.table(f"{name}.main.t")
        assert_same_rows(frame.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
        if "spark.sql.files.maxPartitionBytes" in conf:
            assert frame.rdd.getNumPartitions() > 2  # the files were cut
        count = spark.sql(f"SELECT count(*) AS n, sum(k) AS sk FROM {name}.main.t")
        expected = lake.reference("SELECT count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t")
        assert_same_rows(count.toArrow(), expected)
        for where in (
            "k BETWEEN 4090 AND 6200",
            "k >= 14000 AND k < 14100",
            "k BETWEEN 16990 AND 18010",
            "s = 's10'",
            "k % 5 = 1",  # not pushed: no row skipped
        ):
            picked = spark.sql(f"SELECT k, s FROM {name}.main.t WHERE {where}")
            expected = lake.reference(f"SELECT k, s FROM lake.main.t WHERE {where}")
            assert_same_rows(picked.toArrow(), expected)
        grouped = spark.sql(f"SELECT k % 3 AS m, count(*) AS n FROM {name}.main.t GROUP BY 1")
        expected = lake.reference("SELECT k % 3 AS m, count(*) AS n FROM lake.main.t GROUP BY m")
        assert_same_rows(grouped.toArrow(), expected)


def test_a_pinned_catalog_reads_its_snapshot_unless_the_query_names_another(
    spark, make_lake, catalog
):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10) r(i)")
    pinned = lake.snapshot_id()
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(10, 25) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k < 3")
    name = catalog(lake, snapshot=str(pinned))
    at_pin = spark.sql(f"SELECT count(*) AS n, sum(k) AS sk FROM {name}.main.t")
    expected = lake.reference(
        f"SELECT count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t AT (VERSION => {pinned})"
    )
    assert_same_rows(at_pin.toArrow(), expected)
    latest = lake.snapshot_id()
    named = spark.sql(
        f"SELECT count(*) AS n, sum(k) AS sk FROM {name}.main.t VERSION AS OF {latest}"
    )
    expected = lake.reference("SELECT count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t")
    assert_same_rows(named.toArrow(), expected)


def test_files_on_a_store_without_a_connector_are_read_by_the_planner(make_lake, request):
    """The JVM names the Hadoop schemes it has connectors for; the planner reads files on
    any other store exactly and says why (no Spark needed to check the planner's side)."""
    from ducklake_datafusion.spark.planner import Planner

    lake = make_lake(LakeSpec("duckdb", "s3"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 0")
    args = lake.reader_args()
    planner = Planner()
    request.addfinalizer(planner.close)
    options = {"metadata": args["metadata"], **args["storage_options"]}
    # the JVM sends every option as text, as Spark's configuration holds them
    planner.handle({"op": "open", "options": {k: str(v) for k, v in options.items()}})
    scan = {"op": "scan", "namespace": "main", "name": "t", "snapshot": lake.snapshot_id()}
    header, _ = planner.handle({**scan, "hadoop_schemes": ["s3a"]})
    assert (header["files_spark"], header["files_exact"]) == (1, 0)
    header, blobs = planner.handle({**scan, "hadoop_schemes": ["gs"]})
    assert (header["files_spark"], header["files_exact"]) == (0, 1)
    assert header["exact_reasons"] == ["1 files on s3a://, whose Hadoop connector this Spark lacks"]
    rows = pa.ipc.open_stream(blobs[1]).read_all()
    assert_same_rows(rows, lake.reference("SELECT * FROM lake.main.t"))
