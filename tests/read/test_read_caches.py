"""Per-process caches of immutable files: parsed footers and decoded delete files.

DuckLake never rewrites a data or delete file in place, so both are keyed by URL and
size. A second query of the same files must neither parse a footer nor decode a delete
file again, and must still agree with DuckDB, here on every catalog x storage cell.
"""

from __future__ import annotations

import glob

import pytest
from support.lakes import assert_same_rows
from support.readcheck import check

from ducklake_datafusion.read import _deletes, _footers


@pytest.fixture
def lake(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER, s VARCHAR)")
    for part in range(3):
        lake.sql(
            "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(?, ?) r(i)",
            [part * 100, (part + 1) * 100],
        )
    lake.sql("DELETE FROM lake.main.t WHERE k % 9 = 4")  # a delete file for every data file
    return lake


def _count_calls(monkeypatch, owner, name) -> list:
    calls: list = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_second_query_reads_no_footer_and_decodes_no_delete_file(lake, monkeypatch):
    _footers.parsed_fragments.clear()
    _deletes.decoded_deletes.clear()
    footers = _count_calls(monkeypatch, _footers.parsed_fragments, "put")
    decoded = _count_calls(monkeypatch, _deletes, "_decode")
    sql = "SELECT k, s FROM lake.main.t WHERE k > 50"
    check(lake, sql)
    assert len(footers) == 3 and len(decoded) == 3, (footers, decoded)
    check(lake, sql)
    check(lake, "SELECT count(*) AS n FROM lake.main.t")
    assert len(footers) == 3 and len(decoded) == 3, "a cached file was read again"
    lake.sql("DELETE FROM lake.main.t WHERE k = 7")  # a new delete file for one data file
    check(lake, sql)
    check(lake, "SELECT count(*) AS n FROM lake.main.t")
    assert len(decoded) == 4 and len(footers) == 3


def test_a_new_lake_version_reads_no_footer_of_known_files(make_lake, monkeypatch):
    """A commit makes a new lake version, so the native scan is rebuilt: files checked
    before are only stat-ed (no footer read, even after the footer cache dropped them),
    with DuckDB's answers on every path; a known file since replaced by a FIFO is still
    refused before any open, naming the file, the table and the snapshot."""
    import os

    from support.readcheck import error_reading_fifo, ours

    lake = make_lake(inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER, s VARCHAR)")
    for part in range(3):
        lake.sql(
            "INSERT INTO lake.main.t SELECT i, 's' || i FROM range(?, ?) r(i)",
            [part * 100, (part + 1) * 100],
        )
    sql = "SELECT count(*) AS n, sum(k)::BIGINT AS sk, max(s) AS ms FROM lake.main.t"
    check(lake, sql)
    _footers.parsed_fragments.clear()  # as when a table has more files than the cache
    footers = _count_calls(monkeypatch, _footers.parsed_fragments, "put")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'inlined')")  # same files, new version
    assert_same_rows(ours(lake, sql), lake.reference(sql))  # the Rust scan, rebuilt
    assert footers == [], "a footer of a known file was read again"

    path = min(glob.glob(os.path.join(lake.data_path, "**", "*.parquet"), recursive=True))
    os.remove(path)
    os.mkfifo(path)
    lake.sql("INSERT INTO lake.main.t VALUES (1001, 'inlined')")
    text = error_reading_fifo(lake, sql, path)
    assert "DataFileCorruptError" in text and "FIFO" in text, text
    assert os.path.basename(path) in text and "main.t" in text and "snapshot" in text, text
