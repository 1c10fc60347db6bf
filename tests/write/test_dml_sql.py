"""``ducklake_datafusion.sql``: DELETE and UPDATE statements in a DataFusion session.

The statements reach the row-change core with their conditions whole, evaluated in the
user's session (its own tables and subqueries), and DuckDB runs the same statements on a
twin lake: every snapshot, the change feed and the catalog rows agree (``test_deletes``).
A ``DELETE`` whose condition is an ``IN`` subquery deletes exactly those rows
(apache/datafusion#24654 deleted every row); other statements are DataFusion's.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec
from support.writes import duckdb_reads
from test_deletes import _catalog, _twins, assert_twins_agree

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import InvalidOptionError, TableNotFoundError

STATEMENTS = [
    "DELETE FROM lake.main.t WHERE id IN (SELECT id FROM lake.main.t WHERE id % 13 = 0)",
    "UPDATE lake.main.t AS u SET v = u.v + 0.5, grp = 'x,' || grp WHERE u.id % 11 = 1",
    "DELETE FROM lake.main.t WHERE grp = 'g9';",
    (
        "UPDATE lake.main.t SET tags = [grp] WHERE id IN (SELECT id + 1 FROM lake.main.t "
        "WHERE id % 97 = 0)"
    ),
]


def test_statements_run_as_duckdb_runs_them(make_lake):
    ours, theirs = _twins(make_lake, LakeSpec("duckdb", "local"))
    for statement in STATEMENTS:
        theirs.sql(statement)
        theirs.detach()
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
        result = ducklake_datafusion.sql(ctx, statement).to_arrow_table().to_pylist()
        assert result[0]["snapshot_id"] == theirs.snapshot_id()
        assert result[0]["count"] > 0
    assert_twins_agree(ours, theirs)


def test_the_session_s_own_tables_and_other_statements(make_lake):
    ours, theirs = _twins(make_lake, LakeSpec("duckdb", "local"))
    gone = pa.table({"id": pa.array([3, 30, 300, 3000], pa.int64())})
    theirs.sql("DELETE FROM lake.main.t WHERE id IN (3, 30, 300, 3000)")
    theirs.detach()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
    ctx.register_record_batches("gone", [gone.to_batches()])
    done = ducklake_datafusion.sql(ctx, "DELETE FROM t WHERE id IN (SELECT id FROM gone)")
    assert done.to_arrow_table().column("count").to_pylist() == [3]
    assert_twins_agree(ours, theirs)
    assert ducklake_datafusion.sql(ctx, "SELECT count(*) AS n FROM gone").to_pylist() == [{"n": 4}]
    before = _catalog(ours)
    with pytest.raises(TableNotFoundError, match="missing"):
        ducklake_datafusion.sql(ctx, "DELETE FROM lake.main.missing WHERE true")
    with pytest.raises(InvalidOptionError, match="SET"):
        ducklake_datafusion.sql(ctx, "UPDATE lake.main.t WHERE id = 1")
    assert _catalog(ours) == before
    assert duckdb_reads(ours, "SELECT count(*) AS n FROM lake.main.t").num_rows == 1
