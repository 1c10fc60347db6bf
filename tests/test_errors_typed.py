"""``except DataFileMissingError`` works around DataFusion calls, on the Rust scan too.

DataFusion hands every error raised while it plans or runs a scan to its caller as its own
plain ``Exception`` (the Rust scan's errors cross ``datafusion-ffi`` as text, the exact
reader's cross Arrow's C stream as text). ``errors.raised_as_ours()`` re-raises the error
of ours that exception carries (``errors.typed``): the object our code raised when it was
raised in Python, else rebuilt from the class name and message in the text.

Each fault is made on a lake the reference writer built, and read on the Rust scan (the
default) and on the exact path; every error class of ``errors.__all__`` is also raised
from the Rust scan's planner on purpose.
"""

from __future__ import annotations

import gc
import os

import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.lakes import one_deleted_one_clean

from ducklake_datafusion import DuckLakeCatalog, errors, register
from ducklake_datafusion.scan import LakeTable

CLASSES = [
    getattr(errors, name)
    for name in errors.__all__
    if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception)
]


@pytest.fixture
def lake(make_lake):
    """Two data files: the first with a delete file, the second clean."""
    lake = make_lake(inline_limit=0)
    one_deleted_one_clean(lake)
    lake.reader_args()
    return lake


def _files(lake) -> tuple[str, str, str]:
    """(data file with deletes, clean data file, delete file) on local disk."""
    rows = DuckLakeCatalog(**lake.reader_args()).table("main", "t").scan_plan().tasks
    with_deletes = next(t for t in rows if t.deletes is not None)
    clean = next(t for t in rows if t.deletes is None)
    urls = (with_deletes.file.url, clean.file.url, with_deletes.deletes.files[0].file.url)
    return tuple(url.removeprefix("file://") for url in urls)


def _snapshot(lake) -> int:
    return lake.reference("SELECT max(snapshot_id) AS s FROM lake.snapshots()")["s"][0].as_py()


def _context(lake, native: bool) -> SessionContext:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), native=native))
    return ctx


def _raised(ctx, sql: str, expected: type[errors.DuckLakeError]):
    """The error ``except expected`` catches around ``sql``, and DataFusion's own text."""
    with pytest.raises(expected) as info, errors.raised_as_ours():
        ctx.sql(sql).collect()
    error = info.value
    raw = error.__context__  # DataFusion's exception, chained by raised_as_ours
    assert raw is not None and not isinstance(raw, errors.DuckLakeError)
    return error, str(raw)


def _damaged(lake, damage: str) -> str:
    data, _, deletes = _files(lake)
    if damage == "missing":
        os.remove(data)
        return data
    if damage == "truncated":
        os.truncate(data, os.path.getsize(data) // 2)
        return data
    if damage == "fewer_rows":  # valid Parquet, half the rows: only the scan's check sees it
        pq.write_table(pq.read_table(data).slice(0, 500), data)
        return data
    with open(deletes, "wb") as handle:
        handle.write(b"garbage")
    return deletes


FAULTS = {
    "missing": errors.DataFileMissingError,
    "truncated": errors.DataFileCorruptError,
    "fewer_rows": errors.DataFileCorruptError,
    "delete_garbage": errors.DeleteFileError,
}


@pytest.mark.parametrize("native", [True, False], ids=["rust", "exact"])
@pytest.mark.parametrize("damage", list(FAULTS))
def test_a_damaged_file_is_caught_as_our_class(lake, damage, native):
    snapshot = _snapshot(lake)
    path = _damaged(lake, damage)
    ctx = _context(lake, native)
    error, raw = _raised(ctx, "SELECT sum(id), max(s) FROM lake.main.t", FAULTS[damage])
    assert type(error) is FAULTS[damage], repr(error)
    message = str(error)
    assert os.path.basename(path) in message and "main.t" in message
    assert f"snapshot {snapshot}" in message
    assert message in raw  # the same text DataFusion carried, nothing added or lost
    assert not message.startswith("DataFusion error")
    if native:
        assert "FFI error" in raw or "Parquet error" in raw, raw  # it did cross the boundary
    if damage == "missing":
        assert isinstance(error, FileNotFoundError)
        # the object our code raised (its OSError the cause) while DataFusion still held it;
        # else one rebuilt from the text, caused by DataFusion's exception
        assert isinstance(error.__cause__, FileNotFoundError) or error.__cause__ is not None


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_file_damaged_after_planning_is_caught_as_our_class(lake, damage):
    """The Rust scan's own checks (no Python error exists: the class is rebuilt from the
    text) find a file damaged after the scan was planned: the second query reuses the
    first one's plan of the unchanged snapshot."""
    snapshot = _snapshot(lake)
    _, clean, _ = _files(lake)
    ctx = _context(lake, native=True)
    sql = "SELECT sum(id), max(s) FROM lake.main.t"
    ctx.sql(sql).collect()
    expected = errors.DataFileMissingError
    if damage == "missing":
        os.remove(clean)
    else:
        os.truncate(clean, os.path.getsize(clean) // 2)
        expected = errors.DataFileCorruptError
    error, raw = _raised(ctx, sql, expected)
    assert type(error) is expected
    assert "Parquet error" in raw and "planning the scan" not in raw, raw  # while reading
    message = str(error)
    assert message in raw and not message.startswith(("DataFusion", "Parquet"))
    assert os.path.basename(clean) in message
    assert f"table main.t (snapshot {snapshot})" in message


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_class_raised_while_the_rust_scan_plans(lake, monkeypatch, cls):
    """Any of our errors raised by the Rust scan's planner comes back as that object, and
    rebuilt (same class, same message) once this process no longer remembers it."""
    snapshot = _snapshot(lake)
    data, _, _ = _files(lake)
    message = (
        f"data file {os.path.basename(data)} of table main.t (snapshot {snapshot}) of "
        f"catalog {lake.metadata}: made on purpose"
    )
    made: list[errors.DuckLakeError] = []

    def planned(self, *args, **kwargs):
        made.append(cls(message))
        raise made[-1]

    monkeypatch.setattr(LakeTable, "scan_plan_and_files", planned)
    ctx = _context(lake, native=True)
    sql = "SELECT sum(id) FROM lake.main.t"
    error, raw = _raised(ctx, sql, cls)
    assert error is made[-1] and type(error) is cls
    assert "planning the scan of main.t" in raw  # the Rust scan's resolver raised it

    with pytest.raises(Exception) as info:
        ctx.sql(sql).collect()  # without the helper: DataFusion's plain Exception
    assert type(info.value) is Exception and f"{cls.__name__}: {message}" in str(info.value)
    errors._recent.clear()  # another process, or one that raised 64 errors since
    rebuilt = errors.typed(info.value)
    assert type(rebuilt) is cls and str(rebuilt) == message and rebuilt is not made[-1]


def test_a_table_function_error_is_caught_as_our_class(lake):
    ctx = _context(lake, native=True)
    last = _snapshot(lake)
    sql = f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', 1, {last + 5})"
    error, _ = _raised(ctx, sql, errors.SnapshotNotFoundError)
    assert f"no snapshot {last + 5}" in str(error)
    errors._recent.clear()
    with pytest.raises(Exception) as info:
        ctx.sql(sql).collect()
    rebuilt = errors.typed(info.value)
    errors._recent.clear()
    assert type(rebuilt) is errors.SnapshotNotFoundError and str(rebuilt) == str(error)


def test_other_errors_pass_unchanged(lake):
    ctx = _context(lake, native=True)
    for sql in ("SELEC 1", "SELECT nope FROM lake.main.t"):
        with pytest.raises(Exception) as info, errors.raised_as_ours():
            ctx.sql(sql).collect()
        assert not isinstance(info.value, errors.DuckLakeError)
        assert errors.typed(info.value) is None
    with pytest.raises(KeyError), errors.raised_as_ours():
        raise KeyError("not ours")


def test_noted_errors_are_bounded_and_keep_nothing_alive(lake):
    """The notes are weak: a failed scan's error (its traceback's frames hold the table
    and catalog) is freed with the query, and the class still comes back from the text."""
    data, _, _ = _files(lake)
    os.remove(data)
    ctx = _context(lake, native=True)
    for _ in range(errors._KEPT + 5):
        with pytest.raises(Exception, match="DataFileMissingError") as info:
            ctx.sql("SELECT * FROM lake.main.t").collect()
    assert len(errors._recent) == errors._KEPT
    gc.collect()
    # Every error but the last query's is freed; that one may stay referenced from outside
    # Python's object graph (no referrer gc can see: the scan's native stream, which holds
    # its failure until the engine drops it), at times past the end of the test.
    assert all(ref() is None for _, _, ref in list(errors._recent)[:-1])
    assert isinstance(errors.typed(info.value), errors.DataFileMissingError)


def test_the_data_frame_adapters_raise_our_class_directly(lake):
    """pandas and Polars read through the exact reader, not DataFusion: no text to undo."""
    from ducklake_datafusion.provider._dataframes import scan_polars, to_pandas, to_polars

    data, _, _ = _files(lake)
    os.remove(data)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    reads = {"to_pandas": lambda: to_pandas(table)}
    try:
        import polars  # noqa: F401
    except ImportError:
        pass
    else:
        reads["to_polars"] = lambda: to_polars(table)
        reads["scan_polars"] = lambda: scan_polars(table).collect()
    for name, read in reads.items():
        with pytest.raises(errors.DataFileMissingError, match="main.t") as info:
            read()
        assert os.path.basename(data) in str(info.value), name
