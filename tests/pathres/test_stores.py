"""Lakes on Google Cloud Storage (fake-gcs-server) and Azure (Azurite), read live.

The ``duckdb-gcs`` and ``sqlite-azure`` cells of the matrix run every matrix test (deletes,
inlined rows, schema evolution, time travel, the change feed) against the emulators; this
module checks what only these stores have: that the files really are read from the store
(by the Rust scan's own store and by the exact path), the CLI with
the documented storage options, and the typed errors, which must never carry a secret.
"""

from __future__ import annotations

import json
import traceback

import pytest
from datafusion import SessionContext
from support.cli import run_cli
from support.lakes import LakeSpec, assert_same_rows
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog, errors, register

STORE_SPECS = [LakeSpec("duckdb", "gcs"), LakeSpec("sqlite", "azure")]
DATA_ERRORS = (errors.StorageError, errors.DataFileMissingError, errors.DeleteFileError)


@pytest.fixture(params=STORE_SPECS, ids=lambda s: s.id)
def store_lake(request, make_lake):
    """Files of two layouts with deletes in each, inlined rows and an inlined delete."""
    lake = make_lake(request.param, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'v' || i FROM range(500) r(i)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO name")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 3")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'w' || i, i % 4 FROM range(500, 1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 9 = 0")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined', 9), (5001, 'gone', 1)")
    lake.sql("DELETE FROM lake.main.t WHERE id = 5001")
    return lake


def _explain(lake, sql: str, **kwargs) -> str:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())


def _data_file(lake) -> str:
    """The store path of one data file of main.t (not a delete file)."""
    return _file_tasks(lake)[0].file.url


def _file_tasks(lake) -> list:
    catalog = DuckLakeCatalog(**lake.reader_args())
    return [t for t in catalog.table("main", "t").scan_plan().tasks if hasattr(t, "file")]


def test_files_are_read_from_the_store_on_every_path(store_lake):
    scheme = store_lake.mirror.data_path.split("://", 1)[0] + "://"
    tasks = _file_tasks(store_lake)
    assert len(tasks) == 2 and all(t.file.url.startswith(scheme) for t in tasks)
    deletes = [d.file.url for t in tasks if t.deletes for d in t.deletes.files]
    assert len(deletes) == 2 and all(url.startswith(scheme) for url in deletes)
    # the Rust scan reads GCS and Azure with its own store
    plan = _explain(store_lake, "SELECT * FROM lake.main.t")
    assert "DuckLakeScanExec" in plan and "DatasetExec" not in plan, plan
    check(store_lake, "SELECT * FROM lake.main.t")  # Rust, then exact, each against DuckDB
    check(store_lake, "SELECT extra, count(*) AS n, max(name) AS m FROM lake.main.t GROUP BY 1")
    check(store_lake, "SELECT id, name FROM lake.main.t WHERE id BETWEEN 495 AND 505")
    for snapshot in range(2, store_lake.snapshot_id() + 1):
        check(store_lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def _cli_args(lake) -> tuple[str, list[str]]:
    """The catalog, and ``--data-path`` plus one ``-s key=value`` per storage option."""
    args = lake.reader_args()
    flags = ["--data-path", args["data_path"]]
    for key, value in args["storage_options"].items():
        flags += ["-s", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    return args["metadata"], flags


def _rows(done) -> list[tuple]:
    """The CLI's JSON lines as sorted value tuples."""
    assert done.returncode == 0, done.stderr
    return sorted(tuple(json.loads(line).values()) for line in done.stdout.splitlines())


def _reference_rows(lake, sql: str, snapshot: int | None = None) -> list[tuple]:
    return sorted(tuple(r.values()) for r in lake.reference(sql, snapshot=snapshot).to_pylist())


def test_cli_reads_the_store(store_lake):
    """sql (deletes, inlined rows, a renamed and an added column), --snapshot and changes,
    with the storage options as -s flags, then from DUCKLAKE_STORAGE_OPTIONS."""
    metadata, flags = _cli_args(store_lake)
    sql = "SELECT id, name, extra FROM lake.main.t WHERE id % 7 = 1"
    done = run_cli("sql", metadata, sql, "-f", "jsonl", *flags)
    assert _rows(done) == _reference_rows(store_lake, sql)
    old = "SELECT * FROM lake.main.t WHERE id % 7 = 1"  # before extra was added
    done = run_cli("sql", metadata, old, "-f", "jsonl", "--snapshot", "3", *flags)
    assert _rows(done) == _reference_rows(store_lake, old, snapshot=3)
    last = store_lake.snapshot_id()
    done = run_cli("changes", metadata, "main.t", "2", str(last), "-f", "jsonl", *flags)
    changes = f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', 2, {last})"
    assert _rows(done) == _reference_rows(store_lake, changes)
    env = {"DUCKLAKE_STORAGE_OPTIONS": json.dumps(store_lake.reader_args()["storage_options"])}
    count = "SELECT count(*) AS n FROM lake.main.t"
    done = run_cli("sql", metadata, count, "-f", "jsonl", "--data-path", flags[1], env=env)
    assert _rows(done) == _reference_rows(store_lake, count)


# ------------------------------------------------------------------------------------------
# Errors: typed, naming the table (and file), never a secret


def _assert_no_secret(error: BaseException, *secrets: str) -> None:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    for secret in secrets:
        assert secret not in text, text


def _read_all_ways(lake, **catalog_kwargs):
    """Yield the error of each read path: the table API, then SQL through register() on
    the Rust scan and the exact path, each as our class (``errors.raised_as_ours``)."""
    args = {**lake.reader_args(), **catalog_kwargs}
    with pytest.raises(DATA_ERRORS) as info:
        DuckLakeCatalog(**args).table("main", "t").to_arrow()
    yield info.value
    for native in (True, False):
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(**args, native=native))
        with pytest.raises(DATA_ERRORS) as sql_info, errors.raised_as_ours():
            ctx.sql("SELECT sum(id) FROM lake.main.t").to_arrow_table()
        yield sql_info.value


def test_azure_wrong_key(make_lake):
    import base64

    lake = make_lake(LakeSpec("sqlite", "azure"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
    good = lake.reader_args()
    assert DuckLakeCatalog(**good).table("main", "t").to_arrow().num_rows == 100
    wrong = base64.b64encode(b"definitely-the-wrong-account-key-0123456789").decode()
    options = dict(good["storage_options"], account_key=wrong)
    for error in _read_all_ways(lake, storage_options=options):
        text = str(error)
        assert isinstance(error, errors.StorageError), text
        assert "main.t" in text and "access denied" in text.lower(), text
        _assert_no_secret(error, wrong)


def test_azure_sas_token_never_shown(make_lake):
    lake = make_lake(LakeSpec("sqlite", "azure"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
    options = dict(lake.reader_args()["storage_options"])
    del options["account_key"]
    token = "sv=2024-08-04&ss=b&srt=sco&sp=r&se=2030-01-01&sig=NotARealSignature0123456789%3D"
    options["sas_token"] = token
    for error in _read_all_ways(lake, storage_options=options):
        assert "main.t" in str(error)
        _assert_no_secret(error, token, "NotARealSignature0123456789")


@pytest.mark.parametrize("spec", STORE_SPECS, ids=lambda s: s.id)
def test_missing_bucket_or_container(make_lake, spec):
    lake = make_lake(spec)
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
    scheme = lake.mirror.data_path.split("://", 1)[0]
    secret = lake.reader_args()["storage_options"].get("account_key")
    for error in _read_all_ways(lake, data_path=f"{scheme}://no-such-bucket-dl/x/"):
        text = str(error)
        assert "no-such-bucket-dl" in text and "main.t" in text, text
        assert isinstance(error, DATA_ERRORS), text
        if secret:
            _assert_no_secret(error, secret)


def test_gcs_token_never_shown(make_lake):
    """A bearer token given for GCS (fake-gcs-server accepts any) stays out of errors."""
    lake = make_lake(LakeSpec("duckdb", "gcs"))
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
    options = dict(lake.reader_args()["storage_options"], anonymous=False)
    token = "ya29.NotARealGoogleAccessToken0123456789"
    options["google_service_account_token"] = token
    args = dict(lake.reader_args(), storage_options=options)
    assert DuckLakeCatalog(**args).table("main", "t").to_arrow().num_rows == 100
    for error in _read_all_ways(lake, storage_options=options, data_path="gs://no-such-dl/x/"):
        assert "no-such-dl" in str(error)
        _assert_no_secret(error, token)


def test_missing_object(store_lake):
    url = _data_file(store_lake)
    name = url.rsplit("/", 1)[-1]
    relative = url[len(store_lake.mirror.data_path) :]
    store_lake.mirror.fs.delete_file(store_lake.mirror.object(relative))
    secret = store_lake.storage_options.get("account_key")
    for error in _read_all_ways(store_lake):
        text = str(error)
        assert isinstance(error, errors.DataFileMissingError), text
        assert name in text and "main.t" in text and "snapshot" in text, text
        if secret:
            _assert_no_secret(error, secret)


@pytest.mark.parametrize("form", ["abfss://{c}@{a}.dfs.core.windows.net/{p}/", "azure://{c}/{p}/"])
def test_other_azure_url_forms(make_lake, form):
    """``abfss://container@account.dfs.core.windows.net/`` (the account from the URL) and
    ``azure://`` read the same objects on Azurite."""
    lake = make_lake(LakeSpec("sqlite", "azure"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id, 'x' || range AS s FROM range(300)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 4 = 0")
    args = lake.reader_args()
    container, prefix = lake.mirror.prefix.split("/", 1)
    options = dict(args["storage_options"])
    account = options.pop("account_name") if form.startswith("abfss") else options["account_name"]
    url = form.format(c=container, a=account, p=prefix)
    expected = lake.reference("SELECT * FROM lake.main.t")
    for native in (True, False):
        catalog = DuckLakeCatalog(
            args["metadata"], data_path=url, storage_options=options, native=native
        )
        ctx = SessionContext()
        register(ctx, "lake", catalog)
        assert_same_rows(ctx.sql("SELECT * FROM lake.main.t").to_arrow_table(), expected)
