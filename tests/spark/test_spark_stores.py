"""Lakes on GCS and Azure read by Spark's own Parquet reader, live against the emulators.

The connectors come from Maven's cache (``.ci/fetch_hadoop_jars.sh``): Google's
``gcs-connector`` (shaded) for ``gs://`` on fake-gcs-server, and ``hadoop-azure`` of the
Hadoop client pyspark bundles for Azurite, through ABFS on the Blob endpoint
(``abfs://``: Azurite has no ADLS Gen2 endpoint, and Hadoop 3.5 no longer has WASB).
DuckDB writes the lakes locally and ``StoreMirror`` copies their files to the store
(``tests/support/emulators.py``); every answer is compared with DuckDB's at the same
snapshot, and every plan is checked for which reader ran, so a silent fallback to the
Python data source cannot pass for the native path.
"""

from __future__ import annotations

import io
import logging
import traceback

import pyarrow.parquet as pq
import pytest
from support.lakes import (
    LakeSpec,
    assert_same_rows,
    deleting_history,
    evolve_table,
    masked_natively,
)

pytest.importorskip("pyspark")

from ducklake_datafusion import DuckLakeCatalog, errors
from ducklake_datafusion.pathres import StorageOptions
from ducklake_datafusion.spark import read_table
from ducklake_datafusion.spark._core._versions import has_data_source
from ducklake_datafusion.spark.parquet import _hadoop, _mask_join, _scan

pytestmark = pytest.mark.spark

GCS, AZURE = LakeSpec("duckdb", "gcs"), LakeSpec("sqlite", "azure")
# what the executed plan shows of a natively read store: the Hadoop scheme of its files
HADOOP_SCHEME = {"gcs": "gs://", "azure": "abfs://"}


@pytest.fixture(params=[GCS, AZURE], ids=lambda spec: spec.storage)
def store(request):
    """(lake spec, Spark session with that store's connector)."""
    spec = request.param
    fixture = "gcs_spark" if spec.storage == "gcs" else "abfs_spark"
    spark = request.getfixturevalue(fixture)
    if spec.storage == "azure":
        _skip_without_abfs_blob(spark)
    return spec, spark


@pytest.fixture
def abfs_blob_spark(abfs_spark):
    """``abfs_spark`` where its Hadoop reaches Azurite's Blob endpoint (3.4.2+)."""
    _skip_without_abfs_blob(abfs_spark)
    return abfs_spark


def _skip_without_abfs_blob(spark) -> None:
    version = _hadoop._hadoop_version(spark)
    if version < _hadoop._ABFS_BLOB_HADOOP:
        pytest.skip(
            f"Hadoop {'.'.join(map(str, version))}'s ABFS has no Blob endpoint mode "
            "(Azurite); test_azure_on_hadoop_without_blob_mode_is_not_read_natively covers it"
        )


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _source_part(plan: str) -> bool:
    """The ``ducklake`` Python data source reads part of the table."""
    return "BatchScan ducklake" in plan


def _read(spark, lake, storage_options=None, **kw):
    args = lake.reader_args()
    options = args["storage_options"] if storage_options is None else storage_options
    return read_table(
        spark,
        args["metadata"],
        "main.t",
        data_path=args["data_path"],  # the store's copy of the files
        storage_options=options,
        **kw,
    )


def _native_at_every_snapshot(spark, lake, where: str | None = None) -> None:
    """Every snapshot read with no data source part, its files from the store, equal to
    DuckDB (with ``where=`` too, when given)."""
    scheme = HADOOP_SCHEME[lake.spec.storage]
    for snapshot in range(2, lake.snapshot_id() + 1):
        df = _read(spark, lake, snapshot=snapshot)
        plan = _plan(df)
        table = f"lake.main.t AT (VERSION => {snapshot})"
        assert_same_rows(df.toArrow(), lake.reference(f"SELECT * FROM {table}"))
        assert not _source_part(plan), plan
        if "FileScan parquet" in plan:  # else: only inlined rows at this snapshot
            assert scheme in plan, plan
        if where is not None:
            got = _read(spark, lake, snapshot=snapshot, where=where).toArrow()
            assert_same_rows(got, lake.reference(f"SELECT * FROM {table} WHERE {where}"))


def _data_objects(lake) -> list[str]:
    """The data files of main.t (not delete files), as paths relative to the data path."""
    catalog = DuckLakeCatalog(**lake.reader_args())
    tasks = [t for t in catalog.table("main", "t").scan_plan().tasks if hasattr(t, "file")]
    return sorted(t.file.url[len(lake.mirror.data_path) :] for t in tasks)


def test_clean_files_older_layouts_and_inlined_rows_read_natively(store, make_lake, parquet_path):
    spec, spark = store
    lake = make_lake(spec, inline_limit=5)
    evolve_table(lake)  # files of three layouts: renamed, added, widened, dropped columns
    lake.sql("INSERT INTO lake.main.t (k, name) VALUES (9000, 'inlined')")
    _native_at_every_snapshot(spark, lake)
    plan = _plan(_read(spark, lake))
    local = "LocalTableScan" in plan or "Scan ExistingRDD" in plan  # from Arrow / rows (3.5)
    assert plan.count("FileScan parquet") == 3 and local, plan


def test_older_layouts_and_inlined_rows_through_the_catalogs_scan(
    store, make_lake, spark_package_jar
):
    """read_table's default with the jar: the catalog's scan, equal to DuckDB at every
    snapshot, and a filter on its DataFrame prunes files."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (make jars)")
    spec, spark = store
    lake = make_lake(spec, inline_limit=5)
    evolve_table(lake)
    lake.sql("INSERT INTO lake.main.t (k, name) VALUES (9000, 'inlined')")
    for snapshot in range(2, lake.snapshot_id() + 1):
        df = _read(spark, lake, snapshot=snapshot)
        table = f"lake.main.t AT (VERSION => {snapshot})"
        assert_same_rows(df.toArrow(), lake.reference(f"SELECT * FROM {table}"))
        assert f"snapshot {snapshot} [files: " in _plan(df), _plan(df)
    where = "k >= 9000"  # the inlined row only
    df = _read(spark, lake).where(where)
    assert_same_rows(df.toArrow(), lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))
    assert "files: 0 read by Spark" in _plan(df), _plan(df)


def test_deletes_are_masked_natively_at_every_snapshot(store, make_lake, deletes_by):
    """Positional delete files (and an inlined delete) on the store: inside Spark's reader
    they find their file by its path through the connector; the mask join keys them on
    the file ids of Spark's own listing (length, and modification time at the store's
    precision: seconds on Azurite), the very values ``_metadata`` gives each row."""
    spec, spark = store
    lake = make_lake(spec, inline_limit=3)
    deleting_history(lake)
    _native_at_every_snapshot(spark, lake, where="g = 3 OR k BETWEEN 990 AND 1010")
    assert masked_natively(_plan(_read(spark, lake)), deletes_by)


def test_deletes_in_files_of_older_layouts(store, make_lake, deletes_by):
    spec, spark = store
    lake = make_lake(spec, inline_limit=0)
    evolve_table(lake, deletes=True)
    _native_at_every_snapshot(spark, lake)


def test_files_of_equal_size_with_deletes(store, make_lake, monkeypatch, mask_join):
    """Two data files of the same length (the same rows inserted twice), both with
    deletes: whatever the store's clock gives them, the answer is DuckDB's; and when
    their ids coincide (forced here by masking the id to zero bits) each is masked in
    its own scan with its own mask table."""
    spec, spark = store
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    for _ in range(2):
        lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(2000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 0")
    lake.reader_args()  # upload
    sizes = {lake.mirror.fs.get_file_info(lake.mirror.object(o)).size for o in _data_objects(lake)}
    assert len(_data_objects(lake)) == 2 and len(sizes) == 1, sizes
    _scan._built.clear()
    _native_at_every_snapshot(spark, lake)
    monkeypatch.setattr(_mask_join, "_ID_MASK", 0)
    monkeypatch.setattr(_mask_join, "_ID_SQL", _mask_join._ID_SQL.rsplit("&", 1)[0] + "& 0")
    _scan._built.clear()
    df = _read(spark, lake)
    plan = _plan(df)
    assert plan.count("BroadcastHashJoin") == 2 and not _source_part(plan), plan
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    _scan._built.clear()


def _rewrite(lake, relative: str, table) -> None:
    with lake.mirror.fs.open_output_stream(lake.mirror.object(relative)) as out:
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        out.write(buffer.getvalue())


def test_a_rewritten_file_is_never_read_as_the_catalog_s(store, make_lake, deletes_by):
    """A data file overwritten on the store: with the very same bytes (a new modification
    time, the same length) it is still read and masked right, the ids coming from the
    listing the scan uses; with another Parquet file of another length, the read raises
    our typed error naming the table and snapshot, never rows of the wrong file."""
    spec, spark = store
    lake = make_lake(spec, inline_limit=0)
    deleting_history(lake)
    lake.reader_args()  # upload
    first = _data_objects(lake)[0]
    with lake.mirror.fs.open_input_file(lake.mirror.object(first)) as source:
        original = source.read()
    with lake.mirror.fs.open_output_stream(lake.mirror.object(first)) as out:
        out.write(original)  # the same bytes, written again
    _scan._built.clear()
    df = _read(spark, lake)
    assert not _source_part(_plan(df))
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    _rewrite(lake, first, pq.read_table(io.BytesIO(original)).slice(0, 100))
    _scan._built.clear()
    # (pyspark 3.5 / 4.0 have no exact path: the read is refused, naming why)
    with pytest.raises(Exception, match=r"table main\.t \(snapshot \d+\)") as info:
        _read(spark, lake).collect()
    text = f"{type(info.value).__name__}: {info.value}"
    if not has_data_source() and deletes_by == "join":
        assert "UnsupportedFeatureError" in text and "differ" in text, text
    else:
        assert "DataFileCorruptError" in text or "StorageError" in text, text
    _scan._built.clear()


@pytest.mark.data_source
def test_without_the_connector_the_data_source_reads_and_says_so(
    store, make_lake, caplog, monkeypatch, parquet_path
):
    """A cluster without the store's connector (simulated: the JVM resolves no
    FileSystem and no class): the data source reads every file, logged once."""
    spec, spark = store
    monkeypatch.setattr(_hadoop, "_filesystem_class", lambda spark, scheme: None)
    monkeypatch.setattr(_hadoop, "_loadable", lambda spark, name: False)
    lake = make_lake(spec, inline_limit=0)
    deleting_history(lake)
    _hadoop._said.clear()
    _scan._built.clear()
    with caplog.at_level(logging.WARNING, logger="ducklake_datafusion.spark"):
        for _ in range(2):
            df = _read(spark, lake)
            plan = _plan(df)
            assert "FileScan parquet" not in plan and _source_part(plan), plan
            assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    needs = "gcs-connector" if spec.storage == "gcs" else "hadoop-azure"
    said = [r.getMessage() for r in caplog.records if "Hadoop filesystem" in r.getMessage()]
    assert len(said) == 1 and needs in said[0], said
    _scan._built.clear()


@pytest.mark.data_source
def test_gcs_token_has_no_hadoop_setting_so_the_source_reads(
    gcs_spark, make_lake, caplog, parquet_path
):
    """A bearer token (fake-gcs-server takes any) cannot be handed to the connector: the
    data source reads the lake, says so once, and the token is in no plan or log line."""
    lake = make_lake(GCS, inline_limit=0)
    deleting_history(lake)
    token = "ya29.NotARealGoogleAccessToken0123456789"
    options = dict(lake.reader_args()["storage_options"], anonymous=False)
    options["google_service_account_token"] = token
    _hadoop._said.clear()
    _scan._built.clear()
    with caplog.at_level(logging.DEBUG, logger="ducklake_datafusion"):
        df = _read(gcs_spark, lake, storage_options=options)
        plan = _plan(df)
        assert "FileScan parquet" not in plan and _source_part(plan), plan
        assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    said = [r.getMessage() for r in caplog.records]
    assert any("no Hadoop equivalent" in m for m in said), said
    assert all(token not in m for m in said) and token not in plan
    _scan._built.clear()


@pytest.mark.parametrize("catalog_scan", [False, True], ids=["files", "catalog-scan"])
def test_the_account_key_is_in_no_plan_log_or_error(
    abfs_blob_spark, make_lake, caplog, catalog_scan, spark_package_jar
):
    """The key reaches ABFS as an option of the read (files listed up front) or as the
    runtime catalog's ``secret.account_key`` (the catalog's scan) only: not in the plans
    Spark shows, not in our log; a wrong key fails with our typed error, which does not
    quote it."""
    import base64

    if catalog_scan and spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (make jars)")
    lake = make_lake(AZURE, inline_limit=0)
    deleting_history(lake)
    key = lake.reader_args()["storage_options"]["account_key"]
    _scan._built.clear()
    with caplog.at_level(logging.DEBUG, logger="ducklake_datafusion"):
        df = _read(abfs_blob_spark, lake, catalog_scan=catalog_scan)
        assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    execution = df._jdf.queryExecution()
    plan = _plan(df)
    if catalog_scan:  # Spark's reader reads every file, with the key the catalog gave it
        assert "read by Spark" in plan and "read exactly" not in plan, plan
    else:
        assert "abfs://" in plan, plan
    for text in (execution.toString(), _plan(df), execution.analyzed().toString()):
        assert key not in text
    assert all(key not in r.getMessage() for r in caplog.records)
    wrong = base64.b64encode(b"definitely-the-wrong-account-key-0123456789").decode()
    options = dict(lake.reader_args()["storage_options"], account_key=wrong)
    _scan._built.clear()
    with pytest.raises(Exception, match=r"main\.t") as info:
        _read(abfs_blob_spark, lake, storage_options=options, catalog_scan=catalog_scan).collect()
    error = info.value
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert isinstance(error, errors.StorageError) or "StorageError" in text, text
    assert wrong not in text and key not in text
    _scan._built.clear()


def test_azure_on_hadoop_without_blob_mode_is_not_read_natively(
    abfs_spark, make_lake, monkeypatch, parquet_path
):
    """Hadoop before 3.4.2 (pyspark 3.5 and 4.0) has no ABFS Blob mode, which Azurite
    needs: the files go to the data source (4.1+) or the read is refused, named."""
    if _hadoop._hadoop_version(abfs_spark) >= _hadoop._ABFS_BLOB_HADOOP:
        monkeypatch.setattr(_hadoop, "_hadoop_version", lambda spark: (3, 3, 4))
    lake = make_lake(AZURE, inline_limit=0)
    deleting_history(lake)
    _hadoop._said.clear()
    _scan._built.clear()
    if not has_data_source():
        with pytest.raises(errors.UnsupportedFeatureError, match=r"main\.t .*az://"):
            _read(abfs_spark, lake)
        return
    df = _read(abfs_spark, lake)
    plan = _plan(df)
    assert "FileScan parquet" not in plan and _source_part(plan), plan
    assert_same_rows(df.toArrow(), lake.reference("SELECT * FROM lake.main.t"))
    _scan._built.clear()


def test_emulator_options_map_onto_connector_settings():
    """The emulators' storage options as per-read settings: Azure's scoped to the account
    host (but for ``fs.azure.always.use.https``, a global key), GCS's for the read."""
    azure = StorageOptions.from_user(
        {
            "account_name": "acct",
            "account_key": "S2V5",
            "azure_endpoint": "http://127.0.0.1:10000",
        }
    )
    url = "az://container/lake/a b.parquet"
    assert _hadoop.hadoop_url(url, azure) == (
        "abfs://container@acct.dfs.core.windows.net/lake/a b.parquet"
    )
    options = _hadoop.hadoop_options(url, azure)
    host = "acct.dfs.core.windows.net"
    assert options == {
        f"fs.azure.abfs.endpoint.{host}": "127.0.0.1:10000",
        f"fs.azure.account.hns.enabled.{host}": "false",
        f"fs.azure.fns.account.service.type.{host}": "BLOB",
        "fs.azure.always.use.https": "false",
        f"fs.azure.networking.library.{host}": "JDK_HTTP_URL_CONNECTION",
        f"fs.azure.account.key.{host}": "S2V5",
    }
    assert "S2V5" not in repr(azure)
    # a Blob endpoint needs ABFS's Blob mode: Hadoop 3.4.2+ (the catalog's planner reads
    # the files exactly before that, read_table's own path through the data source)
    for version, reachable in (
        ("3.3.4", False),
        ("3.4.1", False),
        ("3.4.2", True),
        ("3.5.0", True),
    ):
        problem = _hadoop.abfs_mode_problem(options, _hadoop.parse_hadoop_version(version))
        assert (problem is None) == reachable, (version, problem)
    assert "3.3.4" in _hadoop.abfs_mode_problem(options, (3, 3, 4))
    assert _hadoop.parse_hadoop_version("unknown") == (0,)
    real = StorageOptions.from_user({"account_name": "acct", "account_key": "S2V5"})
    assert _hadoop.hadoop_url(url, real).startswith("abfss://container@acct.dfs.")
    assert _hadoop.hadoop_options(url, real) == {f"fs.azure.account.key.{host}": "S2V5"}
    assert _hadoop.abfs_mode_problem(_hadoop.hadoop_options(url, real), (3, 3, 4)) is None
    portless = StorageOptions.from_user(
        {"account_name": "acct", "account_key": "S2V5", "azure_endpoint": "https://blob.example"}
    )
    assert _hadoop.hadoop_options(url, portless) is None  # ABFS takes host:port only
    gcs = StorageOptions.from_user(
        {"gcs_endpoint": "http://127.0.0.1:4443", "anonymous": True, "project_id": "p"}
    )
    assert _hadoop.hadoop_options("gs://b/k.parquet", gcs) == {
        "fs.gs.storage.root.url": "http://127.0.0.1:4443/",
        "fs.gs.auth.type": "UNAUTHENTICATED",
        "fs.gs.project.id": "p",
    }
    token = StorageOptions.from_user({"google_service_account_token": "ya29.x"})
    assert _hadoop.hadoop_options("gs://b/k.parquet", token) is None
