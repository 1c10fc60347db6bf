"""Bad input gives a typed error that names what is wrong and what to do."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest
from support.readcheck import ours

from ducklake_datafusion import DuckLakeCatalog, errors
from ducklake_datafusion.catalog import ColumnSpec, arrow_type_for


@pytest.fixture
def lake(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'x' || i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 10")
    return lake


def _data_files(lake):
    lake.reader_args()
    files = glob.glob(os.path.join(lake.data_path, "**", "*.parquet"), recursive=True)
    return [f for f in files if not f.endswith("-delete.parquet")], [
        f for f in files if f.endswith("-delete.parquet")
    ]


def test_missing_catalog_file(tmp_path):
    with pytest.raises(errors.CatalogNotFoundError, match="does not exist"):
        DuckLakeCatalog(str(tmp_path / "nope.ducklake")).list_schema_names()


def test_not_a_ducklake_catalog(tmp_path):
    import duckdb

    path = tmp_path / "plain.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE x (a INTEGER)")
    con.close()
    with pytest.raises(errors.NotADuckLakeCatalogError, match="not a DuckLake catalog"):
        DuckLakeCatalog(str(path)).list_schema_names()
    text = tmp_path / "text.ducklake"
    text.write_text("hello")
    with pytest.raises(errors.CatalogError, match="text.ducklake"):
        DuckLakeCatalog(str(text)).list_schema_names()


def test_catalog_without_snapshots(make_lake):
    """A catalog whose ducklake_snapshot table is empty is refused, naming the file."""
    import sqlite3

    from support.lakes import LakeSpec

    lake = make_lake(LakeSpec("sqlite", "local"))
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    args = lake.reader_args()
    path = args["metadata"].removeprefix("sqlite:")
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM ducklake_snapshot")
    name = re.escape(Path(path).name)  # cat.sqlite, or its 1.1 copy (DUCKLAKE_TEST_FORMAT)
    with pytest.raises(
        errors.NotADuckLakeCatalogError, match=rf"{name} has an empty ducklake_snapshot"
    ):
        DuckLakeCatalog(**args).table("main", "t")


def test_unknown_table_and_schema(lake):
    catalog = DuckLakeCatalog(**lake.reader_args())
    with pytest.raises(errors.TableNotFoundError, match=r"main\.nope.*tables at that snapshot: t"):
        catalog.table("main", "nope")
    assert catalog.schema("no_such_schema") is None
    with pytest.raises(Exception, match="nope"):
        ours(lake, "SELECT * FROM lake.main.nope")


def test_missing_snapshot(lake):
    with pytest.raises(errors.SnapshotNotFoundError, match="no snapshot 999"):
        DuckLakeCatalog(**lake.reader_args(), snapshot=999).table("main", "t")


def _text(info) -> str:
    """The error's type and message: raised by the table lookup itself, or raised in a
    scan, carried in DataFusion's text and raised again by ``errors.raised_as_ours``."""
    return f"{type(info.value).__name__}: {info.value}"


def test_deleted_data_file(lake):
    data, _ = _data_files(lake)
    os.remove(data[0])
    with pytest.raises(errors.DataFileMissingError) as info, errors.raised_as_ours():
        ours(lake, "SELECT sum(id) FROM lake.main.t")
    text = _text(info)
    assert "DataFileMissingError" in text and os.path.basename(data[0]) in text
    assert "main.t" in text


def test_truncated_data_file(lake):
    data, _ = _data_files(lake)
    with open(data[0], "r+b") as handle:
        handle.truncate(os.path.getsize(data[0]) // 2)
    with pytest.raises(errors.DataFileError) as info, errors.raised_as_ours():
        ours(lake, "SELECT * FROM lake.main.t")
    text = _text(info)
    assert os.path.basename(data[0]) in text


def test_unreadable_delete_file(lake):
    _, deletes = _data_files(lake)
    assert deletes
    with open(deletes[0], "wb") as handle:
        handle.write(b"garbage")
    with pytest.raises(errors.DeleteFileError) as info, errors.raised_as_ours():
        ours(lake, "SELECT count(*) FROM lake.main.t")
    text = _text(info)
    assert "DeleteFileError" in text and os.path.basename(deletes[0]) in text


def test_unknown_type():
    with pytest.raises(errors.UnsupportedTypeError, match="'v'.*time_ns"):
        arrow_type_for("time_ns", column="v")
    assert ColumnSpec  # the column tree type is public


def test_bad_options(tmp_path):
    with pytest.raises(errors.InvalidOptionError):
        DuckLakeCatalog("")
    with pytest.raises(errors.InvalidOptionError):
        DuckLakeCatalog(str(tmp_path / "x"), snapshot="12")
    with pytest.raises(errors.InvalidOptionError, match="nonsense"):
        DuckLakeCatalog(str(tmp_path / "x"), storage_options={"nonsense": 1})


def test_unsupported_catalog_version(make_lake):
    import duckdb

    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    lake.reader_args()
    if lake.spec.catalog != "duckdb":
        pytest.skip("edits the fixture's own DuckDB catalog file")
    for version, advice in (
        ("0.3", "AUTOMATIC_MIGRATION"),
        ("1.2", "upgrade ducklake-datafusion"),
        ("2.0", "upgrade ducklake-datafusion"),
        ("1.1-dev2", "upgrade ducklake-datafusion"),
    ):
        con = duckdb.connect(lake.metadata)  # our own test lake, never a user's
        con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'version'", [version])
        con.close()
        with pytest.raises(errors.UnsupportedVersionError) as info:
            DuckLakeCatalog(lake.metadata).table("main", "t")
        assert f"version {version!r}" in str(info.value)
        assert "reads 1.0, 1.1-dev1, 1.1 catalogs" in str(info.value)
        assert advice in str(info.value)
