"""Files that are not what the catalog says give a typed error, never a wrong answer.

Each test damages or swaps one file of a lake built by the reference writer, the way a bad
restore, a stray copy or a colliding upload would, and reads it through SQL. Files are
replaced with *valid* Parquet, so only a check against the catalog can notice.
"""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import assert_same_rows, one_deleted_one_clean
from support.readcheck import error_reading_fifo, ours

from ducklake_datafusion import DuckLakeCatalog, errors


@pytest.fixture
def lake(make_lake):
    """Two data files: the first with a delete file (per-file path), the second clean."""
    lake = make_lake(inline_limit=0)
    one_deleted_one_clean(lake)
    return lake


def _files(lake):
    """(data file with deletes, clean data file, delete file) on local disk."""
    catalog = DuckLakeCatalog(**lake.reader_args())
    rows = catalog.table("main", "t").scan_plan().tasks
    with_deletes = next(t for t in rows if t.deletes is not None)
    clean = next(t for t in rows if t.deletes is None)
    urls = (with_deletes.file.url, clean.file.url, with_deletes.deletes.files[0].file.url)
    return tuple(url.removeprefix("file://") for url in urls)


def _error(lake, sql: str, error: type[errors.DuckLakeError], *names: str) -> str:
    with pytest.raises(error) as info, errors.raised_as_ours():
        ours(lake, sql)
    text = str(info.value)
    for name in names:
        assert name in text, text
    return text


def _rewrite(path: str, table: pa.Table) -> None:
    """Replace a file in place (same name), as a restore of the wrong file would."""
    pq.write_table(table, path)


@pytest.mark.parametrize("which", ["clean", "with_deletes"])
def test_data_file_with_fewer_rows(lake, which):
    with_deletes, clean, _ = _files(lake)
    path = clean if which == "clean" else with_deletes
    original = pq.read_table(path)
    _rewrite(path, original.slice(0, 500))  # valid Parquet, field ids kept, half the rows
    # (a bare count(*) is answered from the catalog, as DuckDB answers it, and opens no file)
    for sql in ("SELECT count(s) FROM lake.main.t", "SELECT sum(id) FROM lake.main.t"):
        _error(lake, sql, errors.DataFileCorruptError, os.path.basename(path), "main.t", "1000")


@pytest.mark.parametrize("which", ["clean", "with_deletes"])
def test_data_file_without_field_ids(lake, which):
    """Other column names and no field ids: never NULLs, never matched by position."""
    with_deletes, clean, _ = _files(lake)
    path = clean if which == "clean" else with_deletes
    original = pq.read_table(path)
    plain = pa.table({"a": original.column(0), "b": original.column(1)})  # no field ids
    _rewrite(path, plain)
    text = _error(lake, "SELECT * FROM lake.main.t", errors.DataFileCorruptError)
    assert os.path.basename(path) in text and "field ids" in text


def test_current_layout_file_missing_a_column(lake):
    _, clean, _ = _files(lake)
    original = pq.read_table(clean)
    _rewrite(clean, original.select([0]))  # id only, with its field id
    _error(lake, "SELECT s FROM lake.main.t", errors.DataFileCorruptError, "'s'", "field id")


def test_renamed_columns_with_field_ids_read_by_id(lake):
    """Same rows and field ids under other names: read by field id, equal to DuckDB.

    DuckDB's answers are taken first: it refuses the rewritten file (its footer length
    differs from the catalog's), while the rows it holds are the same.
    """
    queries = (
        "SELECT * FROM lake.main.t",
        "SELECT count(*) AS n, max(s) AS m FROM lake.main.t WHERE id > 1500",
    )
    expected = [lake.reference(sql) for sql in queries]
    _, clean, _ = _files(lake)
    original = pq.read_table(clean)
    renamed = original.rename_columns(["other_id", "other_s"])
    fields = [
        renamed.schema.field(i).with_metadata(original.schema.field(i).metadata) for i in range(2)
    ]
    _rewrite(clean, renamed.cast(pa.schema(fields)))
    for sql, want in zip(queries, expected):
        assert_same_rows(ours(lake, sql), want)


def test_delete_file_replaced_by_an_empty_one(lake):
    """An empty (valid) delete file would bring the deleted rows back."""
    _, _, delete_path = _files(lake)
    original = pq.read_table(delete_path)
    _rewrite(delete_path, original.slice(0, 0))
    _error(
        lake,
        "SELECT count(*) FROM lake.main.t",
        errors.DeleteFileError,
        os.path.basename(delete_path),
        "holds 0 positions but the catalog records 10",
    )


def test_delete_file_of_another_data_file(lake):
    _, _, delete_path = _files(lake)
    original = pq.read_table(delete_path)
    positions = pa.array([5_000 + i for i in range(original.num_rows)], pa.int64())
    moved = original.set_column(1, original.schema.field(1), positions)
    _rewrite(delete_path, moved)
    _error(lake, "SELECT * FROM lake.main.t", errors.DeleteFileError, "outside the data file")


def test_missing_delete_file_is_a_delete_file_error(lake):
    _, _, delete_path = _files(lake)
    os.remove(delete_path)
    _error(lake, "SELECT * FROM lake.main.t", errors.DeleteFileError, os.path.basename(delete_path))


@pytest.mark.parametrize("kind", ["FIFO", "directory"])
@pytest.mark.parametrize("native", [True, False], ids=["native", "exact"])
@pytest.mark.parametrize("which", ["clean", "with_deletes", "delete_file"])
def test_fifo_or_directory_instead_of_a_file(lake, which, native, kind):
    """Opening a FIFO blocks forever; it is refused before any open, as a directory is,
    with an error naming the file, the table and the snapshot, on both paths."""
    with_deletes, clean, delete_path = _files(lake)
    path = {"clean": clean, "with_deletes": with_deletes, "delete_file": delete_path}[which]
    os.remove(path)
    os.mkfifo(path) if kind == "FIFO" else os.mkdir(path)
    # raised at planning, or inside DataFusion's text
    text = error_reading_fifo(lake, "SELECT * FROM lake.main.t", path, native=native)
    expected = errors.DeleteFileError if which == "delete_file" else errors.DataFileCorruptError
    assert expected.__name__ in text and kind in text and os.path.basename(path) in text, text
    assert "main.t" in text and "snapshot" in text, text


def test_untouched_lake_still_reads(lake):
    """The checks cost no false alarm on the reference writer's own files."""
    assert glob.glob(os.path.join(lake.data_path, "**", "*.parquet"), recursive=True)
    for sql in (
        "SELECT * FROM lake.main.t",
        "SELECT count(*) AS n FROM lake.main.t WHERE id > 990",
    ):
        assert_same_rows(ours(lake, sql), lake.reference(sql))
