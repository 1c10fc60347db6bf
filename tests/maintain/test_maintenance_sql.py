"""DuckDB's maintenance functions as DataFusion SQL: ``ducklake_datafusion.sql(ctx, "CALL
ducklake_merge_adjacent_files('lake', 't')")`` and the others, with DuckDB's arguments
(named ones evaluated by DataFusion: ``now()``, lists, intervals) and DuckDB's result
columns, compared with DuckDB running the same ``CALL`` on a twin lake."""

from __future__ import annotations

import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec
from support.twins import assert_twins_agree, twin_lakes

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import InvalidOptionError

SETUP = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
    *(
        f"INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] "
        f"FROM range({low}, {low + 50}) r(i)"
        for low in range(0, 300, 50)
    ),
    "DELETE FROM lake.main.t WHERE id = 60",
]


def _session(lake):
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    return ctx


def _rows(frame) -> list[dict]:
    return frame.to_arrow_table().to_pylist()


def test_calls_match_duckdbs_on_a_twin_lake(make_lake):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)
    statements = [
        "CALL ducklake_merge_adjacent_files('lake', 't', max_compacted_files => 1 + 0)",
        "CALL ducklake_merge_adjacent_files('lake')",
        "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0)",
        "CALL ducklake_expire_snapshots('lake', versions => [2, 3], dry_run => true)",
        "CALL ducklake_expire_snapshots('lake', versions => [2, 3])",
        "CALL ducklake_cleanup_old_files('lake', cleanup_all => true, dry_run => true)",
    ]
    for statement in statements:
        relation = theirs.sql(statement)
        names = [d[0] for d in relation.description]
        theirs_rows = [dict(zip(names, row)) for row in relation.fetchall()]
        theirs.detach()
        ours_rows = _rows(ducklake_datafusion.sql(_session(ours), statement))
        if "cleanup" in statement:  # (file names differ between the twins)
            ours_rows = [len(r["path"]) for r in ours_rows]
            theirs_rows = [len(r["path"]) for r in theirs_rows]
        elif "expire" in statement:
            ours_rows = [r["snapshot_id"] for r in ours_rows]
            theirs_rows = [r["snapshot_id"] for r in theirs_rows]
        assert ours_rows == theirs_rows, statement
    assert_twins_agree(ours, theirs, first=4)


def test_expiry_by_time_from_sql(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)[:1]
    last = ours.snapshot_id()
    ctx = _session(ours)
    expired = _rows(
        ducklake_datafusion.sql(ctx, "CALL ducklake_expire_snapshots('lake', older_than => now())")
    )
    assert [r["snapshot_id"] for r in expired] == list(range(last))
    assert set(expired[0]) == {
        "snapshot_id",
        "snapshot_time",
        "schema_version",
        "changes",
        "author",
        "commit_message",
        "commit_extra_info",
    }
    orphans = ducklake_datafusion.sql(
        ctx, "CALL ducklake_delete_orphaned_files('lake', older_than => now() - INTERVAL '1 day')"
    )
    assert _rows(orphans) == []


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("CALL ducklake_merge_adjacent_files('elsewhere')", "not a lake registered"),
        ("CALL ducklake_merge_adjacent_files('lake', max_files => 1)", "no argument"),
        ("CALL ducklake_expire_snapshots('lake', 't')", "takes the lake's name"),
        ("CALL ducklake_cleanup_old_files('lake', older_than => nonsense(1))", "nonsense"),
    ],
)
def test_bad_calls_are_refused_by_name(make_lake, statement, message):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP[:2])[:1]
    with pytest.raises(InvalidOptionError, match=message):
        ducklake_datafusion.sql(_session(ours), statement)


INLINED = [
    "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
    *(
        f"INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i / 2, ['x' || i] "
        f"FROM range({low}, {low + 5}) r(i)"
        for low in range(0, 30, 5)
    ),
    "DELETE FROM lake.main.t WHERE id = 7",
    "UPDATE lake.main.t SET v = -1 WHERE id = 12",
    "INSERT INTO lake.main.t SELECT i, 'big', i, [] FROM range(100, 160) r(i)",  # a file
    *(
        f"INSERT INTO lake.main.t SELECT i, 'g', i, [] FROM range({low}, {low + 40}) r(i)"
        for low in (200, 240)
    ),
]


def test_flush_and_checkpoint_match_duckdbs_on_a_twin_lake(make_lake):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), INLINED, inline_limit=20)
    for statement in ("CALL ducklake_flush_inlined_data('lake')", "CHECKPOINT lake"):
        before = ours.snapshot_id()
        relation = theirs.sql(statement)
        theirs_rows = relation.fetchall() if relation is not None else []
        theirs.detach()
        ours_rows = _rows(ducklake_datafusion.sql(_session(ours), statement))
        if "flush" in statement:
            assert [tuple(r.values()) for r in ours_rows] == theirs_rows
            assert theirs_rows and theirs_rows[0][2] > 0
        else:
            steps = {r["operation"]: r["count"] for r in ours_rows}
            assert steps["merge_adjacent_files"] > 0
        assert ours.snapshot_id() > before
    assert_twins_agree(ours, theirs, file_ids=False)
