"""The Rust scan (``provider/_rust``, ``rust/``): the FFI facts it rests on, and lakes read
through it against DuckDB.

Contract tests pin what crosses the ``datafusion-ffi`` boundary with datafusion 55: the
capsule is accepted by ``Table(...)``, the query's filters reach ``scan()`` (files are
pruned by catalog statistics there), a mismatched datafusion major is refused with a clear
error, and errors keep their message. ``readcheck.check`` runs the Rust path in every read
test; these tests also assert which path ran.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.lakes import assert_same_rows
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import UnsupportedFeatureError
from ducklake_datafusion.provider import _rust, _rust_build, _rust_stores


def _catalog(lake, **kwargs) -> DuckLakeCatalog:
    return DuckLakeCatalog(**lake.reader_args(), **kwargs)


def _explain(lake, sql: str, **kwargs) -> str:
    ctx = SessionContext()
    register(ctx, "lake", _catalog(lake, **kwargs))
    return "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())


def _is_rust(lake, sql="SELECT * FROM lake.main.t", **kwargs) -> bool:
    return "DuckLakeScanExec" in _explain(lake, sql, **kwargs)


def _provider(lake, name="t"):
    return _rust.rust_provider(_catalog(lake).table("main", name))


@pytest.fixture
def ranged_lake(make_lake):
    """Eight files of 1,000 rows with disjoint key ranges (row groups of 100), deletes in
    four of them: scattered in three (every 9th row: decoded whole, deleted rows dropped
    after decoding) and one block of 251 rows in the fourth (skipped by a row selection)."""
    lake = make_lake(inline_limit=0)
    lake.sql("CALL lake.set_option('parquet_row_group_size', '100')")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR, x DOUBLE)")
    for start in range(0, 8000, 1000):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i % 5, 's' || i, "
            f"CASE WHEN i % 13 = 0 THEN NULL ELSE i / 7.0 END "
            f"FROM range({start}, {start + 1000}) r(i)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 4 AND k < 3000")
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 5100 AND 5350")
    return lake


# -- FFI contract ---------------------------------------------------------------------------


def test_the_capsule_is_accepted_by_table_and_scanned(ranged_lake):
    from datafusion.catalog import Table

    provider = _provider(ranged_lake)
    assert provider is not None
    ctx = SessionContext()
    ctx.register_table("t", Table(provider, ctx))
    got = ctx.sql("SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM t").to_arrow_table()
    want = ranged_lake.reference(
        "SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM lake.main.t"
    )
    assert_same_rows(got, want)


def test_filters_reach_scan_and_prune_files_by_catalog_statistics(ranged_lake):
    from datafusion.catalog import Table

    provider = _provider(ranged_lake)
    ctx = SessionContext()
    ctx.register_table("t", Table(provider, ctx))
    sql = "SELECT k, s FROM t WHERE k BETWEEN 2990 AND 3010"
    got = ctx.sql(sql).to_arrow_table()
    report = provider.last_scan()
    assert report["filters"] >= 1
    assert report["files_total"] == 8
    assert report["files_kept"] == 2  # [2000, 3000) and [3000, 4000)
    want = ranged_lake.reference(sql.replace("FROM t", "FROM lake.main.t"))
    assert_same_rows(got, want)


def test_count_star_comes_from_the_catalog(ranged_lake):
    from datafusion.catalog import Table

    provider = _provider(ranged_lake)
    ctx = SessionContext()
    ctx.register_table("t", Table(provider, ctx))
    got = ctx.sql("SELECT count(*) AS n FROM t").to_arrow_table()
    assert provider.last_scan()["from_catalog"]
    assert_same_rows(got, ranged_lake.reference("SELECT count(*) AS n FROM lake.main.t"))


def test_deleted_rows_are_skipped_by_row_selections_or_dropped_after_decoding(ranged_lake):
    """A block of deleted rows is skipped by a row selection; rows deleted every few rows
    (``deletes::scattered``) are decoded and dropped, which costs less than following
    their selection run by run. Either way the answer is DuckDB's."""
    from datafusion.catalog import Table

    provider = _provider(ranged_lake)
    ctx = SessionContext()
    ctx.register_table("t", Table(provider, ctx))
    got = ctx.sql("SELECT max(k) AS s, count(x) AS n FROM t").to_arrow_table()
    assert_same_rows(
        got, ranged_lake.reference("SELECT max(k) AS s, count(x) AS n FROM lake.main.t")
    )
    report = provider.last_scan()
    assert report["files_with_deletes"] == 4
    assert report["files_read_whole"] == 3
    assert report["rows_skipped"] == 251  # k BETWEEN 5100 AND 5350
    deleted = ranged_lake.reference(
        "SELECT count(*) AS n FROM range(8000) r(k) WHERE k NOT IN (SELECT k FROM lake.main.t)"
    )
    assert report["rows_skipped"] + report["rows_dropped"] == deleted.column("n")[0].as_py()


@pytest.mark.parametrize("pushdown", [False, True])
def test_selections_split_into_row_groups_on_first_open_are_reused(ranged_lake, pushdown):
    """A file's deletes are split into its row groups when the scan first opens it
    (``RowGroupSelections``); later scans of the provider hand DataFusion that split, with
    its own row-group, page-index and row-filter pruning on top. Every answer, first
    and later, equals DuckDB's."""
    from datafusion import SessionConfig
    from datafusion.catalog import Table

    provider = _provider(ranged_lake)
    config = SessionConfig().set(
        "datafusion.execution.parquet.pushdown_filters", str(pushdown).lower()
    )
    ctx = SessionContext(config.set("datafusion.execution.parquet.enable_page_index", "true"))
    ctx.register_table("t", Table(provider, ctx))
    sql = "SELECT k, s, x FROM t"
    first = ctx.sql(sql).to_arrow_table()
    assert provider.last_scan()["files_split"] == 0
    for round in range(2):
        for query in QUERIES + [sql]:
            query = query.replace("lake.main.t", "t")
            got = ctx.sql(query).to_arrow_table()
            want = ranged_lake.reference(query.replace("FROM t", "FROM lake.main.t"))
            assert_same_rows(got, want)
    ctx.sql(sql).to_arrow_table()
    report = provider.last_scan()
    # the three files with scattered deletes are read whole: only the fourth has a split
    assert report["files_with_deletes"] == 4
    assert report["files_split"] == 1
    assert_same_rows(first, ranged_lake.reference("SELECT k, s, x FROM lake.main.t"))


def test_explain_shows_the_rust_scan(ranged_lake):
    plan = _explain(ranged_lake, "SELECT * FROM lake.main.t WHERE k < 1500")
    assert "DuckLakeScanExec: files 2 of 8" in plan, plan
    assert "DatasetExec" not in plan


def test_the_scan_is_one_leaf_for_the_caller(ranged_lake):
    """The caller sees one leaf (``rust/src/guard.rs``): its optimizer cannot wrap the
    inner Parquet scan in a node of its own, so each partition crosses the FFI boundary
    once; ``EXPLAIN ANALYZE`` still shows the Parquet scan's metrics on that line."""
    ctx = SessionContext()
    register(ctx, "lake", _catalog(ranged_lake))
    sql = "SELECT k, s FROM lake.main.t WHERE k < 1500"
    plan = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())
    scan = [line for line in plan.splitlines() if "DuckLakeScanExec" in line]
    assert len(scan) == 1 and "number_of_children=0" in scan[0], plan
    assert "DataSourceExec" not in plan, plan
    analyzed = ctx.sql("EXPLAIN ANALYZE " + sql).to_arrow_table().column(1)[0].as_py()
    scan = [line for line in analyzed.splitlines() if "DuckLakeScanExec" in line]
    assert len(scan) == 1 and "files_opened=" in scan[0], analyzed
    assert_same_rows(ctx.sql(sql).to_arrow_table(), ranged_lake.reference(sql))


@pytest.mark.parametrize("batch_size", [100, 8192])
def test_partitions_run_with_the_planning_session_s_settings(make_lake, batch_size):
    """A scan's partitions execute with the task context captured when the session
    planned them, not one rebuilt from the caller's across the boundary
    (``rust/src/crossing.rs``): the session's settings still reach the Parquet scan."""
    from datafusion import SessionConfig

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t AS SELECT i AS k, 's' || i AS s FROM range(5000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 3")
    ctx = SessionContext(SessionConfig().with_batch_size(batch_size))
    register(ctx, "lake", _catalog(lake))
    sql = "SELECT k, s FROM lake.main.t"
    assert _is_rust(lake, sql)
    batches = ctx.sql(sql).collect()
    largest = max(b.num_rows for b in batches)
    assert largest <= batch_size and (batch_size < 5000 or largest > 100), largest
    assert_same_rows(pa.Table.from_batches(batches), lake.reference(sql))


def test_the_version_guard_refuses_another_datafusion_major(monkeypatch):
    import datafusion

    with pytest.raises(UnsupportedFeatureError, match=r"datafusion 56\.0\.0 is installed"):
        _rust.check_datafusion_version("56.0.0", "55.2.0")
    _rust.check_datafusion_version("55.0.0", "55.2.0")  # any 55 release is fine
    monkeypatch.setattr(_rust, "_EXTENSION", None)
    monkeypatch.setattr(datafusion, "__version__", "54.1.0")
    with pytest.raises(UnsupportedFeatureError, match="built for datafusion 55"):
        _rust.extension()


def test_a_plain_register_catalog_provider_reads_through_the_global_context(ranged_lake):
    """Without ``register()`` the catalog does not know the session: the provider is
    created with DataFusion's global context, which decodes the pushed filters."""
    ctx = SessionContext()
    ctx.register_catalog_provider("lake", _catalog(ranged_lake))
    sql = "SELECT k, g FROM lake.main.t WHERE k BETWEEN 2990 AND 3010 AND g = 1"
    assert_same_rows(ctx.sql(sql).to_arrow_table(), ranged_lake.reference(sql))


def test_a_query_outlives_its_session_object(ranged_lake):
    """The provider holds no session: a DataFrame still runs after the SessionContext
    object that planned it is gone (a session's codec is held weakly across the FFI)."""
    import gc

    def frame():
        ctx = SessionContext()
        register(ctx, "lake", _catalog(ranged_lake))
        return ctx.sql("SELECT count(*) AS n FROM lake.main.t WHERE k > 5")

    df = frame()
    gc.collect()
    sql = "SELECT count(*) AS n FROM lake.main.t WHERE k > 5"
    assert_same_rows(df.to_arrow_table(), ranged_lake.reference(sql))


def test_a_filter_with_a_session_udf_on_a_registered_catalog(ranged_lake):
    """A filter calling a function registered only on the user's session: the answer is
    right (DataFusion applies every pushed filter again)."""
    import pyarrow.compute as pc
    from datafusion import udf

    ctx = SessionContext()
    register(ctx, "lake", _catalog(ranged_lake))
    ctx.register_udf(
        udf(lambda a: pc.add(a, 1), [pa.int64()], pa.int64(), "immutable", name="plus_one")
    )
    sql = "SELECT k FROM lake.main.t WHERE plus_one(k) = 4001"
    assert ctx.sql(sql).to_pydict() == {"k": [4000]}


@pytest.mark.parametrize("pushdown", [False, True])
def test_functions_registered_between_queries_are_the_session_s_own(ranged_lake, pushdown):
    """The session's functions are converted for decoding filters once per set of names
    (``rust/src/task_context.rs``). Functions registered after the first query, and again
    under the same name with another body, filter with the body registered last, also
    when the session evaluates filters inside the Parquet decoder. (Python functions
    travel with their body; a function the scan decodes by name may be an older body, so
    the scan never evaluates conjuncts calling functions: ``calls_a_function``.)"""
    import pyarrow.compute as pc
    from datafusion import SessionConfig, udf

    config = SessionConfig().set(
        "datafusion.execution.parquet.pushdown_filters", str(pushdown).lower()
    )
    ctx = SessionContext(config)
    register(ctx, "lake", _catalog(ranged_lake))
    assert ctx.sql("SELECT count(*) AS n FROM lake.main.t WHERE k = 4000").to_pylist()

    def shifted(by: int):
        return udf(lambda a: pc.add(a, by), [pa.int64()], pa.int64(), "immutable", name="f")

    for by in (1, 1000, 0):
        ctx.register_udf(shifted(by))
        sql = "SELECT k, s FROM lake.main.t WHERE f(k) = 4001 AND k BETWEEN 3000 AND 5000"
        reference = sql.replace("f(k)", f"(k + {by})")
        assert_same_rows(ctx.sql(sql).to_arrow_table(), ranged_lake.reference(reference))


# -- lakes through the Rust path ---------------------------------------------------------------

QUERIES = [
    "SELECT * FROM lake.main.t",
    "SELECT count(*) AS n FROM lake.main.t",
    "SELECT g, count(*) AS n, count(x) AS nx, max(k) AS mk, min(s) AS ms FROM lake.main.t GROUP BY g",
    "SELECT k, s FROM lake.main.t WHERE k BETWEEN 190 AND 5310",
    "SELECT * FROM lake.main.t WHERE k = 4 OR k = 5 OR k = 5349 OR k = 5351",
    "SELECT count(*) AS n FROM lake.main.t WHERE x IS NULL",
    "SELECT k FROM lake.main.t WHERE s = 's5351'",
    "SELECT k FROM lake.main.t WHERE k > 7990 LIMIT 3",
    "SELECT * FROM lake.main.t WHERE k = 2003",
    "SELECT * FROM lake.main.t WHERE k = 5349",
    "SELECT k, s FROM lake.main.t WHERE k IN (4, 13, 2003, 5351, 7999)",
    # a limit reaches the scan: rows dropped after decoding must not count towards it
    "SELECT count(*) AS n FROM (SELECT k FROM lake.main.t WHERE k < 3000 LIMIT 500)",
    "SELECT k FROM lake.main.t WHERE k < 3000 ORDER BY k LIMIT 7",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_deletes_with_row_group_and_page_pruning_match_duckdb(ranged_lake, sql):
    if sql == "SELECT count(*) AS n FROM lake.main.t":
        # the scan's exact row count (from the catalog) answers it: no scan is left
        assert "PlaceholderRowExec" in _explain(ranged_lake, sql)
        assert _provider(ranged_lake) is not None
    else:
        assert _is_rust(ranged_lake, sql)
    check(ranged_lake, sql)


@pytest.mark.parametrize("pushdown", [False, True])
def test_row_selections_with_filter_pushdown_and_page_index(ranged_lake, pushdown):
    """DataFusion intersects the deletes' row selections with its own row-group, page-index
    and (with pushdown) row-filter selections."""
    from datafusion import SessionConfig

    config = SessionConfig().set(
        "datafusion.execution.parquet.pushdown_filters", str(pushdown).lower()
    )
    config = config.set("datafusion.execution.parquet.enable_page_index", "true")
    ctx = SessionContext(config)
    register(ctx, "lake", _catalog(ranged_lake))
    for sql in QUERIES:
        assert_same_rows(ctx.sql(sql).to_arrow_table(), ranged_lake.reference(sql))


DECODER_FILTERS = "filters evaluated while decoding"


@pytest.mark.parametrize(
    ("where", "in_decoder"),
    [
        ("k = 2003", True),
        ("k = 5349", True),  # a deleted row
        ("2003 = k", True),
        ("k IN (4, 2003, 5351, 7999)", True),  # one value per file
        ("k IN (4, 13, 2003)", False),  # two values of one file: 0.2% of its rows
        ("k = 2003 AND s = 's2003'", True),
        ("k BETWEEN 190 AND 5310", False),  # many rows: decoded, then filtered
        ("g = 3", False),  # five values in every file: a fifth of the rows
        ("s = 's5351'", False),  # string bounds say nothing of how many rows match
        ("k = 2003 OR k = 2004", False),
    ],
)
def test_point_lookups_filter_inside_the_decoder(ranged_lake, where, in_decoder):
    """A lookup of a few values of an integer column whose catalog bounds span at least a
    thousand values per looked-up value is evaluated inside the Parquet decoder (the other
    columns are decoded only where it matched); other filters are not (measured slower).
    Either way DataFusion filters again above the scan, and the rows equal DuckDB's."""
    sql = f"SELECT * FROM lake.main.t WHERE {where}"
    assert (DECODER_FILTERS in _explain(ranged_lake, sql)) == in_decoder
    check(ranged_lake, sql)


def test_inlined_rows_are_scanned_beside_the_files(make_lake):
    lake = make_lake(inline_limit=100)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(1000) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'five'), (5001, NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE k = 5000 OR k = 7")
    assert _is_rust(lake)
    for sql in ("SELECT * FROM lake.main.t", "SELECT count(*) AS n FROM lake.main.t WHERE k > 10"):
        check(lake, sql)


def test_every_snapshot_through_the_rust_path(ranged_lake):
    for snapshot in range(1, ranged_lake.snapshot_id() + 1):
        try:
            check(
                ranged_lake,
                "SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM lake.main.t",
                snapshot=snapshot,
            )
        except Exception as exc:  # a snapshot before the table existed
            if "does not exist" not in str(exc) and "not found" not in str(exc).lower():
                raise


LAYOUT_QUERIES = [
    "SELECT * FROM lake.main.t",
    "SELECT count(*) AS n FROM lake.main.t",
    "SELECT name, v FROM lake.main.t WHERE k BETWEEN 990 AND 2010",
    "SELECT v, count(*) AS n, CAST(sum(w) AS BIGINT) AS sw FROM lake.main.t GROUP BY v",
    "SELECT k, d, m, note FROM lake.main.t WHERE v = 7 AND k % 97 = 0",
    "SELECT count(*) AS n FROM lake.main.t WHERE note IS NULL OR note = 'new'",
    # point lookups, evaluated inside the decoder: by field id, in every layout
    "SELECT * FROM lake.main.t WHERE k = 1500",
    "SELECT * FROM lake.main.t WHERE k IN (7, 500, 1003, 2500, 2999)",
    "SELECT k, w, v, note FROM lake.main.t WHERE w = -2500",
    "SELECT k, name FROM lake.main.t WHERE w = 700",
]


@pytest.mark.parametrize("deletes", [False, True])
def test_older_layouts_are_read_by_field_id(make_lake, deletes):
    from support.lakes import evolve_table

    lake = make_lake(inline_limit=0)
    evolve_table(lake, deletes=deletes)
    assert _is_rust(lake)
    for sql in LAYOUT_QUERIES:
        check(lake, sql)
    assert DECODER_FILTERS in _explain(lake, "SELECT * FROM lake.main.t WHERE w = 700")


def test_merged_files_drop_rows_of_later_snapshots(make_lake):
    from support.lakes import merged_inserts

    lake = make_lake(inline_limit=0)
    merged_inserts(lake)
    lake.sql("DELETE FROM lake.main.t WHERE k % 10 = 1")
    for snapshot in range(2, lake.snapshot_id() + 1):
        assert _is_rust(lake, snapshot=snapshot)
        check(lake, "SELECT count(*) AS n, max(k) AS m FROM lake.main.t", snapshot=snapshot)
        check(lake, "SELECT k, s FROM lake.main.t WHERE k BETWEEN 1995 AND 3004", snapshot=snapshot)


def test_a_panic_inside_the_extension_does_not_abort_python():
    """PyO3 turns a panic in a method into an exception; bad input is an error, not a
    crash."""

    from ducklake_datafusion.provider._rust_contract import ProviderSpec
    from ducklake_datafusion.read import PLAN_SCHEMA, PlanExport, export_bytes

    rust = _rust.extension()
    schema = pa.schema([pa.field("k", pa.int64())])
    layout = {
        "read_schema": schema.serialize().to_pybytes(),
        "sources": [{"column": "k", "physical": "k", "cast": False}],
        "snapshot_column": None,
        "current": True,
    }
    row = {"data_file_id": 1, "url": "file:///x.parquet", "size": 10, "footer_size": None}
    row |= {"record_count": 3, "deleted": [5], "encrypted": False, "layout": layout}
    files = pa.RecordBatch.from_pylist([row], schema=PLAN_SCHEMA)
    defaults = pa.RecordBatch.from_pydict({"k": [None]}, schema=schema)
    export = PlanExport("main.t", "test", 1, schema, files, {"k": 1}, defaults, ())
    spec = ProviderSpec(export_bytes(export), ("x.parquet",), None, (), {"kind": "local"}, 2)
    with pytest.raises(ValueError, match="outside the file's 3 rows"):
        rust.LakeProvider(spec)


def test_a_store_the_options_cannot_configure_is_our_typed_option_error(make_lake, monkeypatch):
    """The Rust store refuses its options (here an Azure account key that is no base64):
    ``InvalidOptionError`` naming the table and snapshot, the key never quoted."""
    from ducklake_datafusion.errors import InvalidOptionError

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS k FROM range(10)")
    table = _catalog(lake).table("main", "t")
    bad = {"kind": "azure", "container": "c", "account": "a", "access_key": "not-base64!!"}
    monkeypatch.setattr(_rust_build, "store_options", lambda files, plan: bad)
    with pytest.raises(InvalidOptionError, match=r"main\.t \(snapshot \d+\)") as info:
        _rust_build.build_provider(_rust.extension(), table, table.scan_plan())
    assert "not-base64" not in str(info.value)


def test_a_file_removed_or_replaced_after_a_query_fails_the_query_with_our_error(make_lake):
    """The provider of a snapshot is reused; each file its scan opens is checked again in
    Rust (size, footer row count) and a failed check names our error class."""
    import shutil

    from ducklake_datafusion.pathres import parse_location

    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    for start in (0, 1000):
        lake.sql(f"INSERT INTO lake.main.t SELECT i FROM range({start}, {start + 1000}) r(i)")
    ctx = SessionContext()
    register(ctx, "lake", _catalog(lake))
    sql = "SELECT count(*) AS n, max(k) AS m FROM lake.main.t WHERE k >= 0"
    assert_same_rows(ctx.sql(sql).to_arrow_table(), lake.reference(sql))
    tasks = _catalog(lake).table("main", "t").scan_plan().tasks
    first, second = (parse_location(t.file.url).path for t in tasks)
    shutil.copyfile(first, first + ".bak")
    with open(first, "r+b") as handle:  # the same size, another footer row count: rewritten
        handle.truncate(0)
    shutil.copyfile(second, first)
    with pytest.raises(Exception, match="DataFileCorruptError|DataFileMissingError|bytes but"):
        ctx.sql(sql).to_arrow_table()
    import os

    os.remove(first)
    with pytest.raises(Exception, match="DataFileMissingError"):
        ctx.sql(sql).to_arrow_table()


def test_store_options_for_each_store():
    """What the Rust scan's own store is built from (``_rust_stores.store_kind``): explicit
    credentials only; where the exact path would find ambient ones, ``None`` keeps the
    table on the next path."""
    from ducklake_datafusion.pathres import StorageOptions

    def options(url, **storage):
        return _rust_stores.store_kind(url, StorageOptions.from_user(storage))

    assert options("/data/lake/") == {"kind": "local"}
    s3 = options(
        "s3://bucket/lake/",
        access_key_id="AK",
        secret_access_key="SK",
        endpoint="http://127.0.0.1:9000",
        region="eu-west-1",
    )
    assert s3 == {
        "kind": "s3",
        "bucket": "bucket",
        "region": "eu-west-1",
        "endpoint": "http://127.0.0.1:9000",
        "allow_http": "true",
        "access_key_id": "AK",
        "secret_access_key": "SK",
    }
    assert options("s3://bucket/lake/") is None  # ambient credentials
    gcs = options("gs://bucket/lake/", google_service_account_token="tok")
    assert gcs == {"kind": "gcs", "bucket": "bucket", "token": "tok"}
    emulated = options("gs://bucket/lake/", anonymous=True, gcs_endpoint="http://127.0.0.1:4443")
    assert emulated == {
        "kind": "gcs",
        "bucket": "bucket",
        "anonymous": "true",
        "endpoint": "http://127.0.0.1:4443",
        "allow_http": "true",
    }
    assert options("gs://bucket/lake/") is None  # ambient credentials
    azurite = options(
        "az://box/lake/",
        account_name="devstoreaccount1",
        account_key="a2V5",
        endpoint="http://127.0.0.1:10000",
    )
    assert azurite == {
        "kind": "azure",
        "container": "box",
        "account": "devstoreaccount1",
        "access_key": "a2V5",
        "endpoint": "http://127.0.0.1:10000/devstoreaccount1",  # the account in the path
        "allow_http": "true",
    }
    cloud = options(
        "abfss://box@acct.dfs.core.windows.net/lake/",
        sas_token="sv=x",
        blob_storage_authority="https://acct.blob.core.chinacloudapi.cn",
    )
    assert cloud["endpoint"] == "https://acct.blob.core.chinacloudapi.cn"  # host style
    assert cloud["sas_token"] == "sv=x" and cloud["account"] == "acct"
    assert options("az://box/lake/", account_name="acct") is None  # managed identity etc.
