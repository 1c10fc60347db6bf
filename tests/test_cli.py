"""The command-line tool, run as a subprocess, compared with DuckDB's answers."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from support.cli import run_cli
from support.lakes import LakeSpec, assert_same_rows


@pytest.fixture
def lake(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, l INTEGER[])")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'x' || i, [i, i + 1] FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 10")
    lake.reader_args()
    return lake


SQL = "SELECT id, s FROM lake.main.t WHERE id > 90"


def test_sql_formats(lake, tmp_path):
    expected = lake.reference(SQL)
    done = run_cli("sql", lake.metadata, SQL, "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert sorted((int(r["id"]), r["s"]) for r in rows) == sorted(
        zip(expected.column("id").to_pylist(), expected.column("s").to_pylist())
    )
    done = run_cli("sql", lake.metadata, SQL, "-f", "jsonl")
    assert sorted(json.loads(x)["id"] for x in done.stdout.splitlines()) == sorted(
        expected.column("id").to_pylist()
    )
    target = tmp_path / "out.parquet"
    done = run_cli(
        "sql", lake.metadata, "SELECT * FROM lake.main.t", "-f", "parquet", "-O", str(target)
    )
    assert done.returncode == 0, done.stderr
    assert_same_rows(pq.read_table(target), lake.reference("SELECT * FROM lake.main.t"))
    done = run_cli("sql", lake.metadata, SQL)  # the aligned table
    assert done.returncode == 0 and "| id | s" in done.stdout
    assert done.stdout.rstrip().endswith(f"{expected.num_rows} rows")


def test_inspection_commands(lake):
    assert "| t " in run_cli("tables", lake.metadata).stdout
    snapshots = run_cli("snapshots", lake.metadata, "-f", "jsonl").stdout.splitlines()
    expected = lake.reference("SELECT snapshot_id FROM ducklake_snapshots('lake')")
    assert [json.loads(x)["snapshot_id"] for x in snapshots] == expected.column(0).to_pylist()
    described = list(
        csv.DictReader(io.StringIO(run_cli("describe", lake.metadata, "t", "-f", "csv").stdout))
    )
    assert [(r["column_name"], r["column_type"]) for r in described] == [
        ("id", "int32"),
        ("s", "varchar"),
        ("l", "list"),
    ]
    files = [
        json.loads(x)
        for x in run_cli("files", lake.metadata, "main.t", "-f", "jsonl").stdout.splitlines()
    ]
    assert len(files) == 1 and files[0]["record_count"] == 100 and files[0]["delete_file"]
    assert "id: [0, 99]" in files[0]["column_stats"]
    changes = run_cli(
        "changes", lake.metadata, "main.t", "3", "3", "-f", "jsonl"
    ).stdout.splitlines()
    expected = lake.reference(
        "SELECT rowid, change_type FROM ducklake_table_changes('lake', 'main', 't', 3, 3)"
    )
    assert sorted(
        (json.loads(x)["rowid"], json.loads(x)["change_type"]) for x in changes
    ) == sorted(zip(expected.column(0).to_pylist(), expected.column(1).to_pylist()))


@pytest.mark.parametrize(
    "args, code, name",
    [
        (("describe", "{missing}", "t"), 3, "CatalogNotFoundError"),
        (("describe", "{lake}", "nope"), 4, "TableNotFoundError"),
        (
            ("sql", "{lake}", "SELECT * FROM lake.main.t", "--snapshot", "999"),
            4,
            "SnapshotNotFoundError",
        ),
        (("sql", "{lake}", "SELEC 1"), 7, "error"),
        (("tables", "{lake}", "-s", "nonsense=1"), 2, "InvalidOptionError"),
        (("sql", "{lake}", "SELECT 1", "-f", "parquet"), 2, "InvalidOptionError"),
    ],
)
def test_errors_and_exit_codes(lake, tmp_path, args, code, name):
    args = [a.format(lake=lake.metadata, missing=str(tmp_path / "none.ducklake")) for a in args]
    done = run_cli(*args)
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stderr.startswith(f"{name}: "), done.stderr


def test_storage_options_from_the_environment(make_lake, s3):
    lake = make_lake(LakeSpec("sqlite", "s3"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT 42 AS a")
    args = lake.reader_args()
    env = {"DUCKLAKE_STORAGE_OPTIONS": json.dumps(args["storage_options"])}
    done = run_cli("sql", args["metadata"], "SELECT a FROM lake.main.t", "-f", "csv", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["a", "42"]
    flags = [x for k, v in args["storage_options"].items() for x in ("-s", f"{k}={v}")]
    done = run_cli("sql", args["metadata"], "SELECT a FROM lake.main.t", "-f", "csv", *flags)
    assert done.stdout.splitlines() == ["a", "42"]
    assert (
        args["storage_options"]["secret_access_key"]
        not in run_cli("sql", args["metadata"], "SELECT a FROM lake.main.t", *flags[:2]).stderr
    )


def test_python_dash_m(lake):
    done = subprocess.run(
        [sys.executable, "-m", "ducklake_datafusion", "sql", lake.metadata, "SELECT 1 AS one", "-f", "csv"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.splitlines() == ["one", "1"], done.stderr
