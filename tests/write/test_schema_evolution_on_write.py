"""Schema evolution on write: ``append(..., schema_mode="merge")`` against DuckDB's twin lake.

The data brings a new column and a new struct field: we append it with
``schema_mode="merge"``; DuckDB, on an identical lake, runs the ``ALTER TABLE ... ADD
COLUMN``s in one transaction and inserts the same rows. The catalog rows, every table at
every snapshot (DuckDB's reads and ours) then agree (``support.ddl_twins``). Without the
mode the new column is refused by name, nothing committed; a column the data lacks stays.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.ddl_twins import assert_ddl_twins_agree
from support.lakes import LakeSpec
from support.twins import twin_lakes

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError

SETUP = [
    "CREATE TABLE lake.main.t (id INTEGER, s STRUCT(x INTEGER), note VARCHAR)",
    "INSERT INTO lake.main.t SELECT i, {'x': i}, 'n' || i FROM range(20) r(i)",
]
NEW_ROWS = pa.table(
    {
        "id": pa.array(range(100, 130), pa.int32()),
        "S": pa.array(  # (names match case-insensitively, as DuckDB's)
            [{"x": i, "y": i * 10} for i in range(30)],
            pa.struct([("x", pa.int32()), ("y", pa.int64())]),
        ),
        "label": [f"l{i}" for i in range(30)],
    }
)
DUCKDB_SAME = [
    (
        "BEGIN; ALTER TABLE lake.main.t ADD COLUMN s.y BIGINT; "
        "ALTER TABLE lake.main.t ADD COLUMN label VARCHAR; COMMIT"
    ),
    (
        "INSERT INTO lake.main.t (id, s, label) "
        "SELECT 100 + i, {'x': i, 'y': i * 10}, 'l' || i FROM range(30) r(i)"
    ),
]


@pytest.mark.parametrize(
    "spec", [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres", "mysql")], ids=str
)
def test_an_append_that_brings_columns_adds_them_as_duckdb_does(make_lake, spec):
    ours, theirs = twin_lakes(make_lake, spec, SETUP)
    first = ours.snapshot_id() + 1
    for statement in DUCKDB_SAME:
        theirs.sql(statement)
    theirs.detach()
    catalog = DuckLakeCatalog(**ours.reader_args())
    catalog.table("main", "t").append(NEW_ROWS, schema_mode="merge")
    catalog.close()
    assert_ddl_twins_agree(ours, theirs, first=first)


def test_without_the_mode_a_new_column_is_refused_and_nothing_commits(make_lake):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)[:1]
    last = ours.snapshot_id()
    catalog = DuckLakeCatalog(**ours.reader_args())
    with pytest.raises(InvalidOptionError, match="'S'|'label'"):
        catalog.table("main", "t").append(NEW_ROWS)
    with pytest.raises(InvalidOptionError, match="schema_mode"):
        catalog.table("main", "t").append(NEW_ROWS, schema_mode="overwrite")
    catalog.close()
    assert ours.snapshot_id() == last


def test_a_merge_with_nothing_new_is_one_append(make_lake):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)
    first = ours.snapshot_id() + 1
    theirs.sql("INSERT INTO lake.main.t (id) SELECT 200 + i FROM range(15) r(i)")
    theirs.detach()
    catalog = DuckLakeCatalog(**ours.reader_args())
    rows = pa.table({"id": pa.array(range(200, 215), pa.int32())})
    catalog.table("main", "t").append(rows, schema_mode="merge")
    catalog.close()
    assert_ddl_twins_agree(ours, theirs, first=first)
