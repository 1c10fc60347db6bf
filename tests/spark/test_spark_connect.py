"""Spark Connect: a real Connect server started from pyspark's own jars, clients as users run them.

The server is configured as a cluster operator would (the package's jar, the change-feed
extension, its Python workers' interpreter); clients run in their own processes (a Connect
session cannot share a process with a classic one), set a DuckLake catalog in their session
and read through SQL and through the package's Python helpers. Every answer is compared
with DuckDB's at the same snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from support.lakes import deleting_history

pytest.importorskip("pyspark")
pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")

from ducklake_datafusion.spark._core._versions import pyspark_at_least

pytestmark = pytest.mark.spark

if not pyspark_at_least(4, 0):
    pytest.skip("the Connect server ships with pyspark 4.0+", allow_module_level=True)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
EXTENSIONS = "io.ducklake_datafusion.spark.DuckLakeExtensions"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(jar: str, workers_python: str, tmp_path) -> tuple[subprocess.Popen, str]:
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": home, "PYSPARK_PYTHON": workers_python}
    for key in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "PYSPARK_DRIVER_PYTHON"):
        env.pop(key, None)
    log = open(tmp_path / f"connect-{port}.log", "w")  # noqa: SIM115 -- closed with the server
    server = subprocess.Popen(
        [
            os.path.join(home, "bin", "spark-submit"),
            "--class",
            SERVER_CLASS,
            "--master",
            "local[2]",
            "--jars",
            jar,
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.sql.extensions={EXTENSIONS}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.session.timeZone=UTC",
            "--conf",
            f"spark.local.dir={tmp_path}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    server.log = log
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"the Connect server exited: {(tmp_path / log.name).read_text()[-3000:]}"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return server, f"sc://127.0.0.1:{port}"
        time.sleep(0.5)
    server.kill()
    raise AssertionError("the Connect server did not listen within 180 s")


def _stop(server) -> None:
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
    server.log.close()


@pytest.fixture(scope="module")
def connect_server(spark_package_jar, tmp_path_factory):
    """A Connect server whose Python workers run this interpreter."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    server, url = _start_server(spark_package_jar, sys.executable, tmp_path_factory.mktemp("sc"))
    yield url
    _stop(server)


# A client process: sets the catalog, runs what the test asks, prints JSON answers.
_CLIENT = r"""
import json, sys
from pyspark.sql import SparkSession
url, metadata, python, asks = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = SparkSession.builder.remote(url).getOrCreate()
spark.conf.set("spark.sql.catalog.lake", "io.ducklake_datafusion.spark.DuckLakeCatalog")
spark.conf.set("spark.sql.catalog.lake.metadata", metadata)
spark.conf.set("spark.sql.catalog.lake.python", python)
from ducklake_datafusion.spark import read_changes, read_stream, read_table, register_spark, write_table
answers = {}
def rows(frame):
    return sorted(json.loads(json.dumps([list(r) for r in frame.collect()], default=str)))
for name, ask in asks.items():
    try:
        if ask["kind"] == "sql":
            answers[name] = rows(spark.sql(ask["sql"]))
        elif ask["kind"] == "read_table":
            frame = read_table(spark, metadata, "main.t", **ask.get("kw", {}))
            if ask.get("filter"):
                frame = frame.where(ask["filter"])
            answers[name] = rows(frame.selectExpr(*ask["select"]))
            if ask.get("plan"):
                answers[name + " plan"] = frame._explain_string()
        elif ask["kind"] == "read_changes":
            frame = read_changes(spark, metadata, "main.t", ask["start"], ask["end"])
            answers[name] = rows(frame.selectExpr(*ask["select"]))
        elif ask["kind"] == "write_table":
            write_table(spark.sql(ask["sql"]), metadata, ask["table"], mode=ask["mode"])
            answers[name] = []
        elif ask["kind"] == "stream":
            if ask.get("helper"):
                reader = read_stream(spark, metadata, "main.t", **ask.get("kw", {}))
            else:
                reader = spark.readStream.table(ask["source"])
            query = (reader.writeStream.option("checkpointLocation", ask["checkpoint"])
                     .trigger(availableNow=True).toTable(ask["target"]))
            query.awaitTermination()
            answers[name] = []
        elif ask["kind"] == "format":
            register_spark(spark)
            frame = spark.read.format("ducklake").option("metadata", metadata).load("main.t")
            answers[name] = rows(frame.selectExpr(*ask["select"]))
    except Exception as exc:
        answers[name] = {"error": type(exc).__name__, "message": str(exc)[:2000]}
print("ANSWERS " + json.dumps(answers))
"""


def _client(url: str, metadata: str, asks: dict, tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT, url, metadata, sys.executable, json.dumps(asks)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("ANSWERS ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("ANSWERS ") :])


def _expected(lake, sql: str) -> list:
    table = lake.reference(sql)
    return sorted(
        json.loads(json.dumps([list(r.values()) for r in table.to_pylist()], default=str))
    )


def test_the_catalog_serves_connect_clients(connect_server, make_lake, tmp_path):
    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    last = lake.snapshot_id()
    metadata = lake.reader_args()["metadata"]
    asks, expected = {}, {}
    for snapshot in range(2, last + 1):
        asks[f"v{snapshot}"] = {
            "kind": "sql",
            "sql": f"SELECT g, count(*), sum(k) FROM lake.main.t VERSION AS OF {snapshot} GROUP BY g",
        }
        expected[f"v{snapshot}"] = _expected(
            lake,
            f"SELECT g, count(*), sum(k)::BIGINT FROM lake.main.t AT (VERSION => {snapshot}) GROUP BY g",
        )
    asks["rows"] = {"kind": "sql", "sql": "SELECT * FROM lake.main.t WHERE k BETWEEN 1490 AND 1570"}
    expected["rows"] = _expected(lake, "SELECT * FROM lake.main.t WHERE k BETWEEN 1490 AND 1570")
    asks["changes"] = {
        "kind": "sql",
        "sql": f"SELECT snapshot_id, rowid, change_type, k FROM ducklake_table_changes('lake.main.t', 3, {last})",
    }
    expected["changes"] = _expected(
        lake,
        f"SELECT snapshot_id, rowid, change_type, k FROM ducklake_table_changes('lake', 'main', 't', 3, {last})",
    )
    asks["namespaces"] = {"kind": "sql", "sql": "SHOW NAMESPACES IN lake"}
    expected["namespaces"] = _expected(
        lake, "SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'lake'"
    )
    assert _client(connect_server, metadata, asks, tmp_path) == expected


def test_connect_clients_write_through_the_catalog(connect_server, make_lake, tmp_path):
    """``CREATE TABLE AS``, ``INSERT INTO``, ``write_table``, then ``DELETE``, ``UPDATE`` and
    ``MERGE INTO``, from a Connect client: the server's executors write, its driver commits;
    DuckDB reads back what the client reads."""
    lake = make_lake(inline_limit=0)
    deleting_history(lake)
    metadata = lake.reader_args()["metadata"]
    asks = {
        "ctas": {
            "kind": "sql",
            "sql": "CREATE TABLE lake.main.c AS SELECT k, s FROM lake.main.t WHERE k < 100",
        },
        "insert": {
            "kind": "sql",
            "sql": "INSERT INTO lake.main.c SELECT k, s FROM lake.main.t "
            "WHERE k BETWEEN 1000 AND 1010",
        },
        "append": {
            "kind": "write_table",
            "table": "main.c",
            "mode": "append",
            "sql": "SELECT k, s FROM lake.main.t WHERE k = 1500",
        },
        # the row-level statements, rewritten by the server's analyzer
        "delete": {"kind": "sql", "sql": "DELETE FROM lake.main.c WHERE k BETWEEN 1000 AND 1004"},
        "update": {"kind": "sql", "sql": "UPDATE lake.main.c SET s = 'u' WHERE k < 10"},
        "merge": {
            "kind": "sql",
            "sql": "MERGE INTO lake.main.c AS c USING (SELECT k, 'm' AS s FROM lake.main.t "
            "WHERE k IN (5, 1600, 1601)) AS src ON c.k = src.k "
            "WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT *",
        },
        "after": {"kind": "sql", "sql": "SELECT * FROM lake.main.c"},
    }
    # a maintenance procedure, run by the server's catalog
    asks["compact"] = {"kind": "sql", "sql": "CALL lake.system.merge_adjacent_files(table => 'c')"}
    asks["compacted"] = {"kind": "sql", "sql": "SELECT * FROM lake.main.c"}
    got = _client(connect_server, metadata, asks, tmp_path)
    merged = (
        lake.reference(
            "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_snapshot_changes "
            "WHERE changes_made LIKE 'merge_adjacent:%'"
        )
        .column(0)[0]
        .as_py()
    )
    assert [row[:2] for row in got["compact"]] == ([["main", "c"]] if merged else []), got
    assert got["ctas"] == got["insert"] == got["append"] == []
    assert "error" not in got["delete"] and "error" not in got["merge"], got
    written = _expected(lake, "SELECT * FROM lake.main.c")
    assert got["after"] == written
    assert written == _expected(
        lake,
        "SELECT k, CASE WHEN k IN (5, 1600, 1601) THEN 'm' WHEN k < 10 THEN 'u' ELSE s END "
        "FROM lake.main.t WHERE k < 100 OR k BETWEEN 1005 AND 1010 OR k IN (1600, 1601)",
    )


def test_the_python_helpers_work_under_connect(connect_server, make_lake, tmp_path):
    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    metadata = lake.reader_args()["metadata"]
    whole = ["k", "g", "s"]
    asks = {
        "native": {"kind": "read_table", "select": whole},
        "source": {"kind": "read_table", "kw": {"native": False}, "select": whole},
        "where": {"kind": "read_table", "kw": {"where": "k < 200"}, "select": whole},
        "snapshot": {"kind": "read_table", "kw": {"snapshot": 4}, "select": whole},
        "changes": {
            "kind": "read_changes",
            "start": 3,
            "end": 6,
            "select": ["snapshot_id", "rowid", "change_type", "k"],
        },
        "format": {"kind": "format", "select": whole},
    }
    got = _client(connect_server, metadata, asks, tmp_path)
    latest = _expected(lake, "SELECT k, g, s FROM lake.main.t")
    assert got["native"] == latest
    assert got["source"] == latest
    assert got["format"] == latest
    assert got["where"] == _expected(lake, "SELECT k, g, s FROM lake.main.t WHERE k < 200")
    assert got["snapshot"] == _expected(lake, "SELECT k, g, s FROM lake.main.t AT (VERSION => 4)")
    assert got["changes"] == _expected(
        lake,
        "SELECT snapshot_id, rowid, change_type, k FROM ducklake_table_changes('lake', 'main', 't', 3, 6)",
    )


def test_read_table_where_prunes_files_under_connect(connect_server, make_lake, tmp_path):
    """Under Connect, ``read_table`` is the server's catalog scan too: a filter on its
    DataFrame leaves out the files whose statistics cannot match."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    for i in range(10):  # snapshots 2..11; file i holds k in [1000 i, 1000 i + 999]
        lake.sql(
            f"INSERT INTO lake.main.t SELECT j, {i}, 's' || j FROM range({1000 * i}, {1000 * i + 1000}) r(j)"
        )
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 5100 AND 5199")
    whole = ["k", "g", "s"]
    asks = {
        "range": {"kind": "read_table", "filter": "k BETWEEN 5050 AND 5300", "select": whole},
        "pinned": {"kind": "read_table", "kw": {"snapshot": 3}, "filter": "k >= 1500"},
    }
    asks["range"]["plan"] = asks["pinned"]["plan"] = True
    asks["pinned"]["select"] = whole
    got = _client(connect_server, lake.reader_args()["metadata"], asks, tmp_path)
    assert got["range"] == _expected(
        lake, "SELECT k, g, s FROM lake.main.t WHERE k BETWEEN 5050 AND 5300"
    )
    assert "files: 1 read by Spark, 9 pruned of 10 live" in got["range plan"], got["range plan"]
    assert got["pinned"] == _expected(
        lake, "SELECT k, g, s FROM lake.main.t AT (VERSION => 3) WHERE k >= 1500"
    )
    assert "snapshot 3 [files: 1 read by Spark, 1 pruned of 2 live" in got["pinned plan"]


def test_workers_without_the_package_give_our_error_under_connect(
    spark_package_jar, make_lake, tmp_path
):
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare is None or bare == sys.executable:
        pytest.skip("no interpreter without the package to run Spark's workers with")
    probe = subprocess.run(
        [bare, "-c", "import ducklake_datafusion"], capture_output=True, check=False
    )
    if probe.returncode == 0:
        pytest.skip(f"{bare} has the package")
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 1, 'a')")
    server, url = _start_server(spark_package_jar, bare, tmp_path)
    try:
        got = _client(
            url,
            lake.reader_args()["metadata"],
            {"format": {"kind": "format", "select": ["k"]}},
            tmp_path,
        )
    finally:
        _stop(server)
    assert got["format"]["error"] == "MissingDependencyError", got
    assert "PYSPARK_PYTHON" in got["format"]["message"]


def test_connect_clients_stream_from_the_lake_into_the_lake(connect_server, make_lake, tmp_path):
    """A Connect client streams the lake's table into another table of the lake (the
    table's rows, then what a later snapshot inserts), and with ``read_stream``: DuckDB reads
    every row exactly once."""
    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    metadata = lake.reader_args()["metadata"]
    start = lake.snapshot_id() + 1
    checkpoint = str(tmp_path / "checkpoint")
    stream = {
        "kind": "stream",
        "source": "lake.main.t",
        "target": "lake.main.copy",
        "checkpoint": checkpoint,
    }
    asks = {
        "first": stream,
        "insert": {"kind": "sql", "sql": "INSERT INTO lake.main.t VALUES (9000, 1, 'late')"},
        "again": stream,
        "helper": {
            "kind": "stream",
            "helper": True,
            "kw": {"starting_version": start},
            "target": "lake.main.late",
            "checkpoint": str(tmp_path / "helper-checkpoint"),
        },
    }
    got = _client(connect_server, metadata, asks, tmp_path)
    assert got == {"first": [], "insert": [], "again": [], "helper": []}
    assert _expected(lake, "SELECT * FROM lake.main.copy") == _expected(
        lake, "SELECT * FROM lake.main.t"
    )
    assert _expected(lake, "SELECT * FROM lake.main.late") == [[9000, 1, "late"]]
