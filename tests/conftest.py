"""Shared fixtures: live object stores and PostgreSQL, and lakes over the back-end matrix.

Servers are session-scoped and requested lazily, so a run that only touches local lakes
starts no server. The stores: moto (``s3``), MinIO (``minio``), fake-gcs-server (``gcs``)
and Azurite (``azure``); ``tests/support/emulators.py`` starts the last three from the
tools ``.ci/install_emulators.sh`` installs. See ``tests/support/lakes.py`` for the lake API.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import sparkreplay
from support.emulators import start_azurite, start_fake_gcs, start_minio
from support.lakes import ALL_SPECS, LakeSpec, MySQLServer, PgServer, S3Endpoint, start_moto
from support.lakes import make_lake as _make_lake

PG_HINT = "set DUCKLAKE_TEST_PG (see .ci/run)"
MYSQL_HINT = 'set DUCKLAKE_TEST_MYSQL, e.g. eval "$(.ci/start_mysql.sh)" (see .ci/run)'
TOOLS_HINT = "install it with .ci/install_emulators.sh (make test does when go/npm exist)"
BUCKET = "ducklake-tests"  # the bucket (GCS) or container (Azure) lakes put their files in


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    config.addinivalue_line("markers", "spark: needs pyspark and a Java runtime")
    config.addinivalue_line(
        "markers", "data_source: needs the ducklake Python data source (pyspark 4.1+)"
    )
    _arrow_collect_on_old_pyspark()


def _pyspark_has_data_source() -> bool | None:
    """Whether the installed pyspark runs the data source (None: no pyspark)."""
    try:
        from ducklake_datafusion.spark._core._versions import has_data_source
    except ImportError:
        return None
    try:
        return has_data_source()
    except ImportError:
        return None


def pytest_collection_modifyitems(config, items):
    """Tests of the data source skip on pyspark 3.5 / 4.0, which read natively only
    (``tests/spark/test_spark_versions.py`` checks what those releases raise instead)."""
    if _pyspark_has_data_source() is not False:
        return
    import pyspark

    skip = pytest.mark.skip(reason=f"pyspark {pyspark.__version__} has no Python data source")
    for item in items:
        if "data_source" in item.keywords:
            item.add_marker(skip)


def _arrow_collect_on_old_pyspark() -> None:
    """``DataFrame.toArrow()`` (pyspark 4.0+) for the tests' comparisons on pyspark 3.5,
    from the Arrow batches its ``toPandas`` collects."""
    try:
        import pyarrow as pa
        from pyspark.sql import DataFrame
        from pyspark.sql.pandas.types import to_arrow_schema
    except ImportError:
        return
    if hasattr(DataFrame, "toArrow"):
        return

    def to_arrow(self):
        batches = self._collect_as_arrow()
        if batches:
            return pa.Table.from_batches(batches)
        return to_arrow_schema(self.schema).empty_table()

    DataFrame.toArrow = to_arrow


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _configured_minio() -> S3Endpoint | None:
    endpoint = os.environ.get("MINIO_ENDPOINT")
    if not endpoint:
        return None
    if "://" not in endpoint:
        endpoint = "http://" + endpoint
    return S3Endpoint(
        endpoint.rstrip("/"),
        os.environ["MINIO_ACCESS_KEY"],
        os.environ["MINIO_SECRET_KEY"],
        os.environ.get("MINIO_REGION", "us-east-1"),
    )


@pytest.fixture(scope="session")
def s3():
    """A live S3 endpoint: MinIO from ``MINIO_ENDPOINT``/``_ACCESS_KEY``/``_SECRET_KEY``, else moto."""
    configured = _configured_minio()
    if configured:
        yield configured
        return
    server, endpoint = start_moto()
    try:
        yield endpoint
    finally:
        server.stop()


def _emulator(start, tmp_path_factory, store: str, *args):
    """Start a store emulator, or skip (fail under CI=true) when its tool is not installed."""
    workdir = tmp_path_factory.mktemp(store.lower())
    try:
        return start(workdir, *args)
    except FileNotFoundError as exc:
        message = f"the {store} tests need {exc.args[0]}, which is not installed: {TOOLS_HINT}"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def minio(tmp_path_factory):
    """MinIO itself: ``MINIO_ENDPOINT`` if set, else the ``minio`` server on 127.0.0.1."""
    configured = _configured_minio()
    if configured:
        yield configured
        return
    if os.environ.get("DUCKLAKE_TEST_MINIO") == "0":
        pytest.skip("MinIO left out (DUCKLAKE_TEST_MINIO=0)")
    server, endpoint = _emulator(start_minio, tmp_path_factory, "MinIO")
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="session")
def gcs(tmp_path_factory):
    """fake-gcs-server on 127.0.0.1 (in memory) with the test bucket."""
    server, endpoint = _emulator(start_fake_gcs, tmp_path_factory, "GCS", BUCKET)
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azure(tmp_path_factory):
    """Azurite's blob service on 127.0.0.1 with the test container."""
    server, endpoint = _emulator(start_azurite, tmp_path_factory, "Azure", BUCKET)
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg():
    """A reachable PostgreSQL server from ``DUCKLAKE_TEST_PG``; skip (fail under CI=true) if none."""
    conninfo = os.environ.get("DUCKLAKE_TEST_PG")
    problem = None
    if not conninfo:
        problem = "DUCKLAKE_TEST_PG is not set"
    else:
        import psycopg

        try:
            psycopg.connect(conninfo, connect_timeout=5).close()
        except psycopg.Error as exc:
            problem = f"{conninfo!r}: {exc}".strip()
    if problem:
        message = f"PostgreSQL not reachable: {PG_HINT} ({problem})"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return PgServer(conninfo)


@pytest.fixture(scope="session")
def mysql():
    """A reachable MySQL/MariaDB server from ``DUCKLAKE_TEST_MYSQL`` (DuckDB's MySQL keys
    without a database); skip (fail under CI=true) if none."""
    conninfo = os.environ.get("DUCKLAKE_TEST_MYSQL")
    problem = None
    if not conninfo:
        problem = "DUCKLAKE_TEST_MYSQL is not set"
    else:
        try:
            import pymysql

            MySQLServer(conninfo).ping()
        except ImportError as exc:
            problem = f"PyMySQL is not installed ({exc})"
        except pymysql.MySQLError as exc:
            problem = f"{conninfo!r}: {exc}".strip()
    if problem:
        message = f"MySQL not reachable: {MYSQL_HINT} ({problem})"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return MySQLServer(conninfo)


@pytest.fixture(params=ALL_SPECS, ids=lambda spec: spec.id)
def lake_spec(request) -> LakeSpec:
    """Every cell of the matrix (``lakes.ALL_SPECS``: each catalog and each store once)."""
    return request.param


@pytest.fixture
def make_lake(request, tmp_path):
    """Factory ``make_lake(spec=None, **kw) -> Lake``; closed (PG database dropped) at teardown.

    ``spec`` defaults to the test's ``lake_spec`` when it has one, else duckdb-local. Keyword
    arguments go to ``lakes.make_lake`` (``inline_limit``, ``name``).
    """
    lakes = []

    def factory(spec: LakeSpec | None = None, **kw):
        if spec is None:
            if "lake_spec" in request.fixturenames:
                spec = request.getfixturevalue("lake_spec")
            else:
                spec = LakeSpec("duckdb", "local")
        if spec.catalog == "postgres":
            kw.setdefault("pg", request.getfixturevalue("pg"))
        elif spec.catalog == "mysql":
            kw.setdefault("mysql", request.getfixturevalue("mysql"))
        if spec.storage in ("s3", "minio"):
            kw.setdefault("s3", request.getfixturevalue(spec.storage))
        elif spec.storage in ("gcs", "azure"):
            kw.setdefault("store", request.getfixturevalue(spec.storage))
        lake = _make_lake(spec, tmp_path, **kw)
        lakes.append(lake)
        return lake

    yield factory
    for lake in lakes:
        lake.close()


@pytest.fixture
def lake(lake_spec, make_lake):
    """A fresh empty lake for each matrix cell."""
    return make_lake(lake_spec)


FETCH_JARS = Path(__file__).resolve().parent.parent / ".ci" / "fetch_hadoop_jars.sh"


@functools.cache
def connector_jars() -> tuple[str | None, str]:
    """(Spark's object-store connectors for the installed pyspark, comma-separated jar
    paths, or None; why not): hadoop-aws with the AWS SDK bundle, hadoop-azure,
    gcs-connector. Fetched into Maven's cache by ``.ci/fetch_hadoop_jars.sh`` (CI runs
    it first and passes the list as ``DUCKLAKE_TEST_SPARK_JARS``)."""
    if os.environ.get("DUCKLAKE_TEST_SPARK_JARS"):
        return os.environ["DUCKLAKE_TEST_SPARK_JARS"], ""
    if shutil.which("mvn") is None:
        return None, "no Maven client to fetch the Hadoop connectors"
    done = subprocess.run(
        ["bash", str(FETCH_JARS), sys.executable], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return None, f"fetching the Hadoop connectors failed: {done.stderr.strip()[-500:]}"
    return done.stdout.strip(), ""


@functools.cache
def package_spark_jar() -> str | None:
    """The package's Spark jar (``jvm/build.sh``); None outside CI when it is not built."""
    from ducklake_datafusion.errors import MissingDependencyError
    from ducklake_datafusion.spark import spark_jar

    try:
        return spark_jar()
    except MissingDependencyError:
        if _in_ci():
            raise
        return None


@pytest.fixture(scope="session")
def spark_package_jar() -> str | None:
    """The package's Spark jar, for sessions a test builds itself (None: not built)."""
    return package_spark_jar()


@pytest.fixture(params=["reader", "join"])
def deletes_by(request, spark, monkeypatch) -> str:
    """How the native Spark path drops deleted rows: inside Spark's reader (the package's
    jar, ``spark/parquet/_deleted_rows.py``) or by the broadcast mask join (a session without the
    jar). Native scans are built afresh for the test."""
    from ducklake_datafusion.spark.parquet._deleted_rows import has_reader

    _fresh_native_scans(monkeypatch, mask_join=request.param == "join")
    if request.param == "reader" and not has_reader(spark):
        if _in_ci():
            pytest.fail("the package's Spark jar is needed in CI (jvm/build.sh)")
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    return request.param


@pytest.fixture
def mask_join(monkeypatch) -> None:
    """The native Spark path as a session without the package's jar runs it: deletes by
    the mask join (tests of its file ids)."""
    _fresh_native_scans(monkeypatch, mask_join=True)


@pytest.fixture
def parquet_path(monkeypatch) -> None:
    """``read_table`` on its own native path (``spark/parquet``: a fixed list of files for
    Spark's Parquet reader, the data source for the rest), as in a session without the
    jar's catalog: for tests of that path's plans. With the jar, ``read_table`` is the
    catalog's scan (``spark/_catalog_read``; tests/spark/test_spark_catalog.py)."""
    _without_catalog(monkeypatch)


def _without_catalog(monkeypatch) -> None:
    from ducklake_datafusion.spark import _catalog_read

    monkeypatch.setattr(_catalog_read, "_has_catalog", lambda spark: False)


def _fresh_native_scans(monkeypatch, *, mask_join: bool) -> None:
    """Native Spark scans (``read_table``'s own path, not the catalog's) built afresh for
    the test; by the mask join if ``mask_join``."""
    from ducklake_datafusion.common import LRUCache
    from ducklake_datafusion.spark.parquet import _scan

    _without_catalog(monkeypatch)
    monkeypatch.setattr(_scan, "_built", LRUCache(_scan._BUILT_MAX))
    if mask_join:
        monkeypatch.setattr(_scan, "has_reader", lambda spark: False)


def _connector_session(spark, jar: str, store: str):
    """The shared Spark session, when its jars hold ``jar`` (skip, or fail in CI, if the
    connectors could not be had)."""
    jars, why = connector_jars()
    if jars is not None and jar not in jars:
        why = f"{jar} is not among the jars ({jars[:300]})"
        jars = None
    if jars is None:
        if _in_ci():
            pytest.fail(f"Spark's {store} connector is needed in CI: {why}")
        pytest.skip(f"Spark's {store} connector: {why}")
    return spark


@pytest.fixture
def s3a(spark):
    """The shared Spark session, with the S3A connector (hadoop-aws)."""
    return _connector_session(spark, "hadoop-aws", "S3A")


@pytest.fixture
def gcs_spark(spark):
    """The shared Spark session, with Google's gcs-connector."""
    return _connector_session(spark, "gcs-connector", "GCS")


@pytest.fixture
def abfs_spark(spark):
    """The shared Spark session, with hadoop-azure (ABFS)."""
    return _connector_session(spark, "hadoop-azure", "ABFS")


# The tests' JVMs run many short jobs on small data, where the JIT's second tier and a
# parallel collector cost more than they gain (measured: docs/development.md, Times).
TEST_JVM_OPTIONS = os.environ.get(
    "DUCKLAKE_TEST_JVM_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
)
# Every other JVM a test starts (Spark drivers and executors in processes of their own, a
# standalone cluster's master and workers, spark-sql, Spark Connect's server, Maven) runs
# the same way: a short-lived JVM spends a third less CPU without C2's compiles (measured:
# the cluster tests' processes 138 s of CPU with the JVM's defaults, 92 s so).
os.environ.setdefault("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One real local[2] SparkSession (UI off) for the whole run; building it costs ~8 s."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs a Java runtime (java on PATH or JAVA_HOME)")
    # Executors' Python workers must run this interpreter (the venv with this package).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from ducklake_datafusion.spark import register_spark
    from ducklake_datafusion.spark._core._versions import has_data_source

    builder = SparkSession.builder
    jars, _ = connector_jars()
    # The package's jar: deletes applied inside Spark's reader (spark/parquet/_deleted_rows.py;
    # tests/spark/test_spark_native.py also reads every lake through the mask join without it).
    jars = ",".join(filter(None, [package_spark_jar(), jars]))
    if jars:  # object stores read by Spark's own reader (test_spark_s3, test_spark_stores)
        builder = builder.config("spark.jars", jars)
    if package_spark_jar() is not None:  # ducklake_table_changes (tests/spark/test_spark_catalog)
        builder = builder.config(
            "spark.sql.extensions", "io.ducklake_datafusion.spark.DuckLakeExtensions"
        )
    session = (
        builder.master("local[2]")
        .appName("ducklake-datafusion-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")  # results over 1 MB are fetched from it
        .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    if has_data_source():  # pyspark 3.5 / 4.0 read natively only
        register_spark(session)
    yield session
    session.stop()


def _spark_replay_possible() -> bool:
    if os.environ.get("DUCKLAKE_TEST_SPARK_REPLAY", "1") == "0":
        return False
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return False
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(autouse=True)
def _spark_replay(request):
    """Let ``readcheck.check`` replay table states through Spark (``sparkreplay``); the
    Spark session starts only when a check first needs it."""
    if not _spark_replay_possible():
        yield
        return
    sparkreplay.session = lambda: request.getfixturevalue("spark")
    yield
    sparkreplay.session = None
