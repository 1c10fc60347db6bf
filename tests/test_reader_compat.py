"""Our reader on another duckdb than the reference writer's: lakes written by duckdb 1.5.5
(the reference, whose DuckLake extension has no newer release) read by this package in a
second environment with the newest duckdb (``DUCKLAKE_TEST_READER_PYTHON``, set by
``.ci/run``), where our own use of duckdb differs: DuckDB-file catalogs, DuckDB's casts of
inlined values, and decryption of encrypted files. Each answer is compared with the
reference's for the same lake and snapshot, on both DataFusion paths.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
import support
from support.histories import write_encrypted_history
from support.lakes import LakeSpec, assert_same_rows

READER_PYTHON = os.environ.get("DUCKLAKE_TEST_READER_PYTHON")
JOB = Path(support.__file__).with_name("reader_job.py")
CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]
WIDE = "SELECT id, CAST(h AS VARCHAR) AS h, CAST(u AS VARCHAR) AS u, iv, uu, j, m, st FROM lake.main.ty"

pytestmark = pytest.mark.skipif(
    not READER_PYTHON,
    reason="DUCKLAKE_TEST_READER_PYTHON names no second environment (see .ci/run)",
)


def _types_table(lake) -> None:
    """Inlined values of the types whose conversion goes through duckdb."""
    lake.sql(
        "CREATE TABLE lake.main.ty (id INTEGER, h HUGEINT, u UHUGEINT, iv INTERVAL, uu UUID, "
        "j JSON, m MAP(VARCHAR, DOUBLE), st STRUCT(a INTEGER, t TIMESTAMPTZ)[])"
    )
    lake.sql(
        "INSERT INTO lake.main.ty VALUES (1, -170141183460469231731687303715884105728, "
        "340282366920938463463374607431768211455, INTERVAL '1 year 2 days 3 seconds', "
        "'c74cf600-d666-4407-bd0a-dadb960b8cd4', '{\"a\": [1, 2]}', MAP {'k': 1.5}, "
        "[{'a': 1, 't': TIMESTAMPTZ '2024-01-01 10:00:00+02'}]), (2, NULL, 5, NULL, NULL, "
        "NULL, NULL, NULL)"
    )


@pytest.mark.parametrize("spec", CATALOGS, ids=lambda s: s.id)
def test_lakes_of_the_reference_writer_read_with_the_newest_duckdb(make_lake, tmp_path, spec):
    plain = make_lake(spec, inline_limit=5)
    write_encrypted_history(plain)
    _types_table(plain)
    encrypted = make_lake(spec, inline_limit=5, encrypted=True)
    write_encrypted_history(encrypted)
    queries = {
        "all": "SELECT * FROM lake.main.t",
        "filtered": "SELECT * FROM lake.main.t WHERE id > 990 AND id < 1010",
        "count": "SELECT count(*) AS n FROM lake.main.t",
    }
    reads, expected = [], {}
    for lake_name, lake in (("plain", plain), ("encrypted", encrypted)):
        metadata = lake.reader_args()["metadata"]
        for snapshot in (None, 3, lake.snapshot_id() - 1):
            for query, sql in queries.items():
                for native in (True, False):
                    name = f"{lake_name}-{query}-{snapshot}-{native}"
                    reads.append(
                        {
                            "name": name,
                            "metadata": metadata,
                            "sql": sql,
                            "snapshot": snapshot,
                            "native": native,
                        }
                    )
                    expected[name] = (lake, sql, snapshot)
    for native in (True, False):
        name = f"types-{native}"
        reads.append(
            {
                "name": name,
                "metadata": plain.reader_args()["metadata"],
                "sql": WIDE,
                "native": native,
            }
        )
        expected[name] = (plain, WIDE, None)
    out = tmp_path / "answers"
    out.mkdir()
    job = tmp_path / "spec.json"
    job.write_text(json.dumps({"out": str(out), "reads": reads}))
    done = subprocess.run(
        [READER_PYTHON, str(JOB), str(job)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    versions = json.loads((out / "versions.json").read_text())
    assert not versions["duckdb"].startswith("1.5."), versions  # another duckdb than ours
    for name, (lake, sql, snapshot) in expected.items():
        error = out / f"{name}.error"
        assert not error.exists(), f"{name}: {error.read_text()[:2000]}"
        reference = lake.reference(sql, snapshot=snapshot)
        assert_same_rows(pa.ipc.open_file(out / f"{name}.arrow").read_all(), reference)


# DuckDB 2 writes this catalog file in its own storage format (duckdb 1.5 cannot open it).
_CONVERT = """
import sys, duckdb
con = duckdb.connect()
con.execute(f"ATTACH '{sys.argv[1]}' AS src (READ_ONLY)")
con.execute(f"ATTACH '{sys.argv[2]}' AS dst (STORAGE_VERSION 'latest')")
con.execute("COPY FROM DATABASE src TO dst")
con.execute("DETACH dst")
"""


def test_a_duckdb_2_catalog_file_of_a_1_1_lake(make_lake, tmp_path):
    """A DuckLake 1.1 catalog in a file DuckDB 2 wrote: read with duckdb 2 as DuckDB 1.5
    read the 1.0 lake it came from; with duckdb 1.5, refused saying which duckdb it needs."""
    from support.lake_formats import migrated_copy

    from ducklake_datafusion import DuckLakeCatalog
    from ducklake_datafusion.errors import UnsupportedVersionError

    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=5)
    write_encrypted_history(lake)
    migrated, _ = migrated_copy(lake.reader_args("1.0")["metadata"], None)
    newer = str(tmp_path / "duckdb2.ducklake")
    done = subprocess.run(
        [READER_PYTHON, "-c", _CONVERT, migrated, newer],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with pytest.raises(UnsupportedVersionError, match=r"needs duckdb >= 2 to open"):
        DuckLakeCatalog(newer).table("main", "t")
    sql = "SELECT * FROM lake.main.t"
    reads = [
        {"name": f"{snapshot}-{native}", "metadata": newer, "sql": sql, "snapshot": snapshot,
         "native": native}
        for snapshot in (None, 3)
        for native in (True, False)
    ]  # fmt: skip
    out = tmp_path / "answers"
    out.mkdir()
    job = tmp_path / "spec.json"
    job.write_text(json.dumps({"out": str(out), "reads": reads}))
    done = subprocess.run(
        [READER_PYTHON, str(JOB), str(job)], capture_output=True, text=True, check=False,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    for read in reads:
        error = out / f"{read['name']}.error"
        assert not error.exists(), f"{read['name']}: {error.read_text()[:2000]}"
        got = pa.ipc.open_file(out / f"{read['name']}.arrow").read_all()
        assert_same_rows(got, lake.reference(sql, snapshot=read["snapshot"]))


WRITE_JOB = """
import sys, pyarrow as pa
from ducklake_datafusion import DuckLakeCatalog
catalog = DuckLakeCatalog(sys.argv[1])
catalog.table("main", "t").append(pa.table({"id": pa.array([5000, 5001], pa.int64())}))
"""


def test_a_duckdb_catalog_written_with_the_newest_duckdb_stays_readable_by_duckdb_1_5(make_lake):
    """Our commit to a DuckDB-file catalog from an environment with the newest duckdb keeps
    the file's storage version: the reference (duckdb 1.5.5) opens it and reads our rows."""
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT)")
    lake.sql("INSERT INTO lake.main.t VALUES (1), (2)")
    lake.detach()
    done = subprocess.run(
        [READER_PYTHON, "-c", WRITE_JOB, lake.metadata],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = lake.reference("SELECT id FROM lake.main.t ORDER BY id").column(0).to_pylist()
    assert got == [1, 2, 5000, 5001]
