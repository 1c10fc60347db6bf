"""Per-process caches of immutable files: parsed footers and decoded delete files.

DuckLake never rewrites a data or delete file in place, so both are keyed by URL and
size. A second query of the same files must neither parse a footer nor decode a delete
file again, and must still agree with DuckDB, here on every catalog x storage cell.
"""

from __future__ import annotations

import pytest
from readcheck import check

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
