"""After a commit, a table's files are refreshed from the rows that changed, not re-read.

One catalog object stays open across a history of every kind of commit (inserts, deletes,
an update, inlined rows and their flush, compaction, a schema change, expiry, and a
catalog replaced by an older copy of itself) while every step is queried. After each
commit its plan must equal the plan of a catalog opened afresh (same files, deletes,
inlined rows; with and without a pruning filter, the filtered plan also from a catalog's
first cut) and its answers DuckDB's, on every catalog database; and the refresh must
really have run where it applies.
"""

from __future__ import annotations

import logging
import shutil

import pyarrow.compute as pc
import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec, assert_same_rows
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog, register

CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres", "mysql")]
REFRESHED = "files refreshed"


_FILTER = pc.field("k") >= 2500


def _plans(catalog) -> tuple:
    table = catalog.table("main", "t")
    return table.scan_plan().tasks, table.scan_plan(filter=_FILTER).tasks


def _same_plans(warm, lake) -> None:
    fresh = DuckLakeCatalog(**lake.reader_args())
    assert _plans(warm) == _plans(fresh)
    # a catalog whose first scan is filtered plans from the catalog's first cut
    cut = DuckLakeCatalog(**lake.reader_args()).table("main", "t").scan_plan(filter=_FILTER)
    full = warm.table("main", "t").scan_plan(filter=_FILTER)
    assert (cut.tasks, cut.stats) == (full.tasks, full.stats)


def _warm_answer(warm, lake, sql: str) -> None:
    """The open catalog's SQL answer (its refreshed memo) against DuckDB's."""
    ctx = SessionContext()
    register(ctx, "lake", warm)
    assert_same_rows(ctx.sql(sql).to_arrow_table(), lake.reference(sql))


def _history(lake, replace):
    """The commits, one per step (yields a name for each)."""
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(1000, 2000) r(i)")
    yield "insert a file"
    lake.sql("DELETE FROM lake.main.t WHERE k % 10 = 3")
    yield "delete from every file"
    lake.sql("UPDATE lake.main.t SET s = 'u' WHERE k BETWEEN 1500 AND 1510")
    yield "update"
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined'), (5001, 'inlined')")
    yield "inlined rows"
    lake.sql("DELETE FROM lake.main.t WHERE k = 17")
    yield "an inlined delete"
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    yield "flush"
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(2000, 3000) r(i)")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    yield "compaction"
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 2500 AND 2600")
    yield "delete after compaction"
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")
    yield "schema change"
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i FROM range(3000, 3500) r(i)")
    yield "insert after the schema change"
    first = lake.snapshot_id() - 6
    lake.sql(f"CALL ducklake_expire_snapshots('lake', versions => [{first}, {first + 1}])")
    yield "expiry"
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i FROM range(4000, 4100) r(i)")
    yield "insert after expiry"
    if replace is not None:
        replace()
        yield "catalog replaced by an older copy"
        lake.sql("DELETE FROM lake.main.t WHERE k < 100")
        yield "delete after the replacement"


@pytest.mark.parametrize("spec", CATALOGS, ids=lambda s: s.id)
def test_every_commit_kind_refreshes_to_the_plan_of_a_fresh_catalog(make_lake, spec, caplog):
    lake = make_lake(spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    for start in range(0, 1000, 250):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 's' || i FROM range({start}, {start + 250}) r(i)"
        )
    replace = None
    if spec.catalog in ("duckdb", "sqlite"):  # a file catalog can be swapped for a copy
        path = lake.reader_args("1.0")["metadata"].removeprefix("sqlite:")  # the writer's
        lake.detach()
        shutil.copy(path, path + ".old")

        def replace():
            lake.detach()
            shutil.copy(path + ".old", path)

    warm = DuckLakeCatalog(**lake.reader_args())
    _same_plans(warm, lake)
    refreshed = 0
    with caplog.at_level(logging.DEBUG, logger="ducklake_datafusion"):
        for step in _history(lake, replace):
            caplog.clear()
            _same_plans(warm, lake)
            refreshed += any(REFRESHED in r.getMessage() for r in caplog.records)
            _warm_answer(warm, lake, "SELECT * FROM lake.main.t")
            check(lake, "SELECT count(*) AS n, max(s) AS s FROM lake.main.t WHERE k >= 2500")
    assert refreshed >= 6, refreshed  # inserts, deletes, update, inlined rows, flush, ...
