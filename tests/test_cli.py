"""The command-line tool, run as a subprocess, compared with DuckDB's answers."""

from __future__ import annotations

import csv
import io
import json
import os
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


def test_delete_and_update_statements_change_the_lake(lake):
    """``sql`` runs DELETE, UPDATE and MERGE through the row-change core; DuckDB reads the
    rows."""
    done = run_cli("sql", lake.metadata, "DELETE FROM lake.main.t WHERE id % 3 = 0", "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["count"] == 30
    statement = "UPDATE lake.main.t SET s = upper(s) WHERE id IN (SELECT id FROM lake.main.t "
    done = run_cli("sql", lake.metadata, statement + "WHERE id > 95)", "-f", "jsonl")
    assert json.loads(done.stdout)["count"] == sum(1 for i in range(96, 100) if i % 3)
    got = lake.reference("SELECT id, s FROM lake.main.t WHERE id > 90 ORDER BY id").to_pylist()
    assert got == [
        {"id": i, "s": ("X" if i > 95 else "x") + str(i)} for i in range(91, 100) if i % 3
    ]
    merge = (
        "MERGE INTO lake.main.t USING (SELECT * FROM (VALUES (97, 'm'), (500, 'new')) AS v(id, s)) "
        "AS src ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN "
        "INSERT (id, s) VALUES (src.id, src.s)"
    )
    done = run_cli("sql", lake.metadata, merge, "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    assert {k: json.loads(done.stdout)[k] for k in ("updated", "inserted")} == {
        "updated": 1,
        "inserted": 1,
    }
    got = lake.reference("SELECT id, s FROM lake.main.t WHERE id IN (97, 500) ORDER BY id")
    assert got.to_pylist() == [{"id": 97, "s": "m"}, {"id": 500, "s": "new"}]


def test_inspection_commands(lake):
    assert "| t " in run_cli("tables", lake.metadata).stdout
    snapshots = run_cli("snapshots", lake.metadata, "-f", "jsonl").stdout.splitlines()
    expected = lake.reference(
        "SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY snapshot_id DESC"
    )
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
        (("sql", "{lake}", "SELEC 1"), 7, "DataFusionError"),
        (("sql", "{lake}", "SELECT nope FROM lake.main.t"), 7, "DataFusionError"),
        (("sql", "{missing}", "SELECT 1"), 3, "CatalogNotFoundError"),
        (
            ("sql", "{lake}", "SELECT * FROM ducklake_table_changes('lake', 'main', 't', 1, 99)"),
            4,
            "SnapshotNotFoundError",
        ),
        (("changes", "{lake}", "main.t", "1", "99"), 4, "SnapshotNotFoundError"),
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


def test_snapshots_newest_first(lake):
    """The aligned table shows the newest snapshots (``--max-rows``), not the oldest."""
    newest = (
        lake.reference(
            "SELECT snapshot_id, changes FROM ducklake_snapshots('lake') ORDER BY snapshot_id DESC"
        )
        .column("snapshot_id")
        .to_pylist()
    )
    assert len(newest) >= 3
    done = run_cli("snapshots", lake.metadata, "--max-rows", "2")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines()[3:5]]
    assert rows == [str(i) for i in newest[:2]], done.stdout
    assert done.stdout.rstrip().endswith(f"{len(newest)} rows (2 shown)")
    done = run_cli("snapshots", lake.metadata, "--max-rows", "0")
    shown = [line.split("|")[1].strip() for line in done.stdout.splitlines()[3:-2]]
    assert shown == [str(i) for i in newest]


def test_a_missing_catalog_fails_before_any_sql(tmp_path):
    missing = str(tmp_path / "none.ducklake")
    for args in (("sql", missing, "SELECT 1 AS one"), ("snapshots", missing)):
        done = run_cli(*args)
        assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
        assert done.stderr.startswith("CatalogNotFoundError: ") and "none.ducklake" in done.stderr
        assert done.stdout == ""


def test_a_damaged_file_prints_our_class_and_code(lake):
    """On the Rust scan (the default) DataFusion carries the error as text; the CLI prints
    our class, its message (file, table, snapshot) and its exit code."""
    snapshot = lake.reference("SELECT max(snapshot_id) AS s FROM lake.snapshots()")["s"][0]
    files = lake.reference("SELECT data_file FROM ducklake_list_files('lake', 't')")
    path = files.column("data_file")[0].as_py()
    os.remove(path)
    done = run_cli("sql", lake.metadata, "SELECT sum(id) FROM lake.main.t")
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("DataFileMissingError: data file "), done.stderr
    assert os.path.basename(path) in done.stderr
    assert f"main.t (snapshot {snapshot.as_py()})" in done.stderr
    assert "DataFusion error" not in done.stderr and "FFI" not in done.stderr


@pytest.mark.parametrize(
    "query, name",
    [
        ("SELECT count(*) FROM main.t", "lake"),
        ("SELECT count(*) FROM t", "lake"),
        ("SELECT count(*) FROM other.main.t", "lake"),
        ("SELECT count(*) FROM main.t", "dl"),
    ],
)
def test_an_unqualified_table_suggests_the_lake_prefix(lake, query, name):
    done = run_cli("sql", lake.metadata, query, "--name", name)
    assert done.returncode == 7, done.stderr
    assert done.stderr.startswith("DataFusionError: Error during planning: table "), done.stderr
    assert f"the lake is the catalog '{name}': write {name}.main.t" in done.stderr
    fixed = run_cli("sql", lake.metadata, f"SELECT count(*) AS n FROM {name}.main.t", "--name",
                    name, "-f", "jsonl")  # fmt: skip
    expected = lake.reference("SELECT count(*) AS n FROM lake.main.t").column("n")[0].as_py()
    assert json.loads(fixed.stdout)["n"] == expected


def test_an_unknown_table_lists_nothing_wrong(lake):
    done = run_cli("sql", lake.metadata, "SELECT * FROM main.nope")
    assert done.returncode == 7
    assert "lake.<schema>.<table>" in done.stderr and "write lake" not in done.stderr


def test_changes_end_defaults_to_the_latest_snapshot(lake):
    lake.sql("INSERT INTO lake.main.t VALUES (500, 'late', [1])")
    lake.sql("UPDATE lake.main.t SET s = 'changed' WHERE id = 50")
    latest = lake.reference("SELECT max(snapshot_id) AS s FROM lake.snapshots()")["s"][0]
    done = run_cli("changes", lake.metadata, "main.t", "3", "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    expected = lake.reference(
        "SELECT snapshot_id, rowid, change_type, s FROM "
        f"ducklake_table_changes('lake', 'main', 't', 3, {latest.as_py()})"
    )
    got = [json.loads(x) for x in done.stdout.splitlines()]
    assert sorted((r["snapshot_id"], r["rowid"], r["change_type"], r["s"]) for r in got) == sorted(
        zip(*(expected.column(c).to_pylist() for c in expected.column_names))
    )
    assert any(r["snapshot_id"] == latest.as_py() for r in got)


def test_files_prints_whole_paths(lake):
    """In the aligned table too: a path is what a user copies."""
    expected = lake.reference(
        "SELECT data_file, delete_file FROM ducklake_list_files('lake', 't')"
    ).to_pylist()
    done = run_cli("files", lake.metadata, "main.t")
    assert done.returncode == 0, done.stderr
    for row in expected:
        for path in row.values():
            assert len(path) > 60  # long enough that the table used to clip it
            assert path in done.stdout, done.stdout


def test_maintenance_commands_run_duckdbs_functions(lake):
    """The maintenance commands change the lake as DuckDB's functions do and print DuckDB's
    result rows; DuckDB reads the same rows after each."""
    for low in (100, 110, 120):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 'x' || i, [i] FROM range({low}, {low + 10}) r(i)"
        )
    expected = lake.reference("SELECT * FROM lake.main.t")
    first = lake.snapshot_id()
    done = run_cli("merge-adjacent-files", lake.metadata, "main.t", "-f", "jsonl", "--message", "m")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows == [
        {"schema_name": "main", "table_name": "t", "files_processed": 3, "files_created": 1}
    ]
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), expected)
    message = lake.reference(
        "SELECT commit_message FROM ducklake_snapshots('lake') ORDER BY snapshot_id DESC LIMIT 1"
    )
    assert message.column(0).to_pylist() == ["m"]
    done = run_cli(
        "expire-snapshots", lake.metadata, "--versions", f"2,{first}", "--dry-run", "-f", "jsonl"
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["snapshot_id"] for line in done.stdout.splitlines()] == [2, first]
    done = run_cli("checkpoint", lake.metadata, "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    steps = [json.loads(line)["operation"] for line in done.stdout.splitlines()]
    assert steps[0] == "flush_inlined_data" and steps[-1] == "delete_orphaned_files"
    done = run_cli("cleanup-old-files", lake.metadata, "--older-than", "soon")
    assert done.returncode == 2 and "is neither an ISO time nor an age" in done.stderr
    done = run_cli("cleanup-old-files", lake.metadata, "--all", "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3  # the merge's sources
    assert_same_rows(lake.reference("SELECT * FROM lake.main.t"), expected)
