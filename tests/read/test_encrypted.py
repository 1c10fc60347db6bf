"""Encrypted lakes (``ATTACH ... (ENCRYPTED)``) read like any other, compared with DuckDB.

pyarrow cannot decrypt DuckDB's encrypted Parquet files, so they are read through
DuckDB's reader (``read/_encrypted.py``); every other step is the common one.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from support.histories import write_encrypted_history
from support.lakes import LakeSpec, assert_same_rows
from support.readcheck import check, ours

from ducklake_datafusion import DuckLakeCatalog


def test_encrypted_lake(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=5, encrypted=True)
    write_encrypted_history(lake)
    last = lake.snapshot_id()
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT id, s2, w FROM lake.main.t WHERE id > 990 AND id < 1010")
    check(lake, "SELECT count(*) AS n FROM lake.main.t")
    for snapshot in (2, 4, 6, last - 1):
        check(lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def test_files_are_really_encrypted_and_keys_stay_secret(make_lake):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0, encrypted=True)
    lake.sql("CREATE TABLE lake.main.t AS SELECT i AS id FROM range(100) r(i)")
    lake.sql("CREATE TABLE lake.main.u AS SELECT i AS id FROM range(10) r(i)")
    catalog = DuckLakeCatalog(**lake.reader_args())
    task = catalog.table("main", "t").scan_plan().tasks[0]
    other = catalog.table("main", "u").scan_plan().tasks[0]
    assert task.encryption_key and task.encryption_key not in repr(task)
    path = task.file.url.removeprefix("file://")
    with pytest.raises(Exception, match="encrypt"):
        pq.ParquetFile(path)  # pyarrow cannot read it, which is why DuckDB decrypts

    import duckdb

    con = duckdb.connect(lake.metadata)  # our own test lake: give t's file u's key
    con.execute(
        "UPDATE ducklake_data_file SET encryption_key = ? WHERE data_file_id = ?",
        [other.encryption_key, task.data_file_id],
    )
    con.close()
    with pytest.raises(Exception) as info:
        ours(lake, "SELECT sum(id) AS s FROM lake.main.t")
    text = str(info.value)
    assert "DataFileCorruptError" in text and "cannot be decrypted" in text
    assert other.encryption_key not in text and task.encryption_key not in text
    assert_same_rows(
        ours(lake, "SELECT * FROM lake.main.u"), lake.reference("SELECT * FROM lake.main.u")
    )


def test_renamed_struct_field_in_an_old_encrypted_file_is_refused(make_lake):
    """Below the top level DuckDB's reader matches by name: refuse instead of guessing."""
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0, encrypted=True)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, st STRUCT(a INTEGER))")
    lake.sql("INSERT INTO lake.main.t VALUES (1, {'a': 1})")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN st.a TO b")
    check(lake, "SELECT id FROM lake.main.t")  # the struct not read: fine
    with pytest.raises(Exception) as info:
        ours(lake, "SELECT st FROM lake.main.t")
    assert "UnsupportedFeatureError" in str(info.value) and "['st']" in str(info.value)
