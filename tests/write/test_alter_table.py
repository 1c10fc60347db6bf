"""Schema changes against twin lakes: DuckDB makes the same change on an identical lake.

Each case builds two lakes with the same DuckDB statements (a table with a struct, a list,
a float, a decimal, rows in two files and a delete file; a partitioned table; a view; a
second schema), makes a change through our Python API or our DataFusion SQL route on one
and runs DuckDB's statement on the other, then checks (``support.ddl_twins``): the catalog
rows equal DuckDB's (``ducklake_column`` rows ended and begun, ``ducklake_table``, partitionings,
``ducklake_schema``, ``ducklake_schema_versions``, the snapshot's ``schema_version`` and
``next_catalog_id``, ``changes_made``, partitioning, views, files, tags, statistics; uuids
and file paths aside), DuckDB reads every table at every snapshot the same on both (the
files written before the change among them) and our readers read what DuckDB reads. Then
DuckDB writes into the changed table on both (``INSERT ... SELECT`` and ``DEFAULT
VALUES``), and we append after that on both (after our change on one, after DuckDB's own
on the other), and both still agree.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.ddl_twins import assert_ddl_twins_agree, live_tables
from support.lakes import LakeSpec
from support.mysql_lakes import duckdb_writes_directly
from support.twins import twin_lakes
from support.writes import duckdb_reads

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.catalog import (
    AddColumn,
    DropColumn,
    RenameColumn,
    SetColumnType,
    SetDefault,
    parse_type,
)
from ducklake_datafusion.errors import UnsupportedFeatureError

SETUP = [
    (
        "CREATE TABLE lake.main.t (id INTEGER, name VARCHAR, f FLOAT, m DECIMAL(9,2), "
        "s STRUCT(x INTEGER, y VARCHAR), l INTEGER[], p VARCHAR)"
    ),
    (
        "INSERT INTO lake.main.t SELECT i, 'n' || i, i / 4, i / 8, {'x': i, 'y': 'y' || i}, "
        "[i, i + 1], 'p' || (i % 3) FROM range(50) r(i)"
    ),
    "INSERT INTO lake.main.t VALUES (100, NULL, NULL, NULL, NULL, NULL, 'p0')",
    "DELETE FROM lake.main.t WHERE id % 7 = 0",
    "CREATE TABLE lake.main.k (id INTEGER, grp VARCHAR)",
    "ALTER TABLE lake.main.k SET PARTITIONED BY (grp)",
    "INSERT INTO lake.main.k VALUES (1, 'a'), (2, 'b')",
    "CREATE VIEW lake.main.v AS SELECT id FROM lake.main.t",
    "CREATE SCHEMA lake.other",
    "CREATE TABLE lake.other.o (a INTEGER)",
]


def _sql(statement):
    """A step made by our DataFusion SQL route with DuckDB's own statement text."""
    return statement, None


def _py(statement, call):
    """A step made by our Python API (``call(lake)``) where DuckDB runs ``statement``."""
    return statement, call


# case -> steps (DuckDB's statement, our way of making it), the table written after
CASES = {
    "add_column_default_py": [
        _py(
            "ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42",
            lambda lake: lake.add_column("t", "c", "INTEGER", default=42),
        )
    ],
    "add_column_text_default": [
        _sql("ALTER TABLE lake.main.t ADD COLUMN d VARCHAR DEFAULT 'it''s'")
    ],
    "add_column_arrow_types": [
        _py(
            "ALTER TABLE lake.main.t ADD COLUMN ts TIMESTAMP DEFAULT '2024-01-01'",
            lambda lake: lake.add_column("t", "ts", pa.timestamp("us"), default="2024-01-01"),
        ),
        _py(
            "ALTER TABLE lake.main.t ADD COLUMN dd DECIMAL(9,2) DEFAULT 1.5",
            lambda lake: lake.add_column(
                "t", "dd", pa.decimal128(9, 2), default=decimal.Decimal("1.5")
            ),
        ),
        _py(
            "ALTER TABLE lake.main.t ADD COLUMN tags VARCHAR[]",
            lambda lake: lake.add_column("t", "tags", pa.list_(pa.string())),
        ),
    ],
    "add_nested_column": [
        _sql("ALTER TABLE lake.main.t ADD COLUMN st STRUCT(a INTEGER, b VARCHAR[])")
    ],
    "add_struct_field": [_sql("ALTER TABLE lake.main.t ADD COLUMN s.z BIGINT DEFAULT 7")],
    "drop_column": [_sql("ALTER TABLE lake.main.t DROP COLUMN name")],
    "drop_struct_field_py": [
        _py(
            "ALTER TABLE lake.main.t DROP COLUMN s.y",
            lambda lake: lake.drop_column("t", ("s", "y")),
        )
    ],
    "drop_then_add_same_name": [
        _sql("ALTER TABLE lake.main.t DROP COLUMN p"),
        _sql("ALTER TABLE lake.main.t ADD COLUMN p INTEGER DEFAULT 3"),
    ],
    "rename_column": [_sql("ALTER TABLE lake.main.t RENAME COLUMN name TO label")],
    "rename_struct_field": [_sql("ALTER TABLE lake.main.t RENAME s.x TO x2")],
    "rename_struct_py": [
        _py(
            "ALTER TABLE lake.main.t RENAME s TO s2",
            lambda lake: lake.rename_column("t", "s", "s2"),
        )
    ],
    "widen_integer": [_sql("ALTER TABLE lake.main.t ALTER COLUMN id TYPE BIGINT")],
    "widen_float_py": [
        _py(
            "ALTER TABLE lake.main.t ALTER COLUMN f TYPE DOUBLE",
            lambda lake: lake.alter_column_type("t", "f", pa.float64()),
        )
    ],
    "widen_decimal": [_sql("ALTER TABLE lake.main.t ALTER COLUMN m TYPE DECIMAL(18,3)")],
    "integer_to_double": [_sql("ALTER TABLE lake.main.t ALTER COLUMN id TYPE DOUBLE")],
    "integer_to_decimal": [_sql("ALTER TABLE lake.main.t ALTER COLUMN id TYPE DECIMAL(18,2)")],
    "widen_list_element": [_sql("ALTER TABLE lake.main.t ALTER COLUMN l TYPE BIGINT[]")],
    "evolve_struct_type": [
        _sql("ALTER TABLE lake.main.t ALTER COLUMN s TYPE STRUCT(x BIGINT, z INTEGER)")
    ],
    "defaults": [
        _sql("ALTER TABLE lake.main.t ALTER COLUMN name SET DEFAULT 'anon'"),
        _py(
            "ALTER TABLE lake.main.t ALTER COLUMN id SET DEFAULT 42 + 1",
            lambda lake: lake.set_default("t", "id", "42 + 1", sql=True),
        ),
        _sql("ALTER TABLE lake.main.t ALTER COLUMN name DROP DEFAULT"),
    ],
    "not_null": [
        _py(
            "ALTER TABLE lake.main.t ALTER COLUMN p SET NOT NULL",
            lambda lake: lake.set_not_null("t", "p"),
        ),
        _sql("ALTER TABLE lake.main.t ALTER COLUMN p DROP NOT NULL"),
    ],
    "several_changes_one_snapshot": [
        _py(
            "BEGIN; ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42; "
            "ALTER TABLE lake.main.t RENAME COLUMN name TO label; "
            "ALTER TABLE lake.main.t ALTER COLUMN c SET DEFAULT 5; "
            "ALTER TABLE lake.main.t ALTER COLUMN id TYPE BIGINT; "
            "ALTER TABLE lake.main.t DROP COLUMN f; COMMIT",
            lambda lake: lake.alter_table(
                "t",
                AddColumn(("c",), parse_type("INTEGER"), "42"),
                RenameColumn(("name",), "label"),
                SetDefault(("c",), "5"),
                SetColumnType(("id",), parse_type("BIGINT")),
                DropColumn(("f",)),
            ),
        )
    ],
    "if_not_exists_changes_nothing": [
        _sql("ALTER TABLE lake.main.t ADD COLUMN IF NOT EXISTS id INTEGER"),
        _sql("ALTER TABLE lake.main.t DROP COLUMN IF EXISTS nope"),
    ],
    "partitioned_table": [_sql("ALTER TABLE lake.main.k ADD COLUMN w DOUBLE DEFAULT 1")],
    "comments": [
        _sql("COMMENT ON TABLE lake.main.t IS 'orders'"),
        _py("COMMENT ON TABLE lake.main.t IS 'it''s'", lambda lake: lake.set_comment("t", "it's")),
        _sql("COMMENT ON COLUMN lake.main.t.name IS 'who'"),
        _py(
            "COMMENT ON COLUMN lake.main.t.id IS 'key'",
            lambda lake: lake.set_comment("t", "key", column="id"),
        ),
        _sql("COMMENT ON TABLE lake.main.t IS NULL"),
    ],
    "partitioning": [
        _sql("ALTER TABLE lake.main.t SET PARTITIONED BY (p)"),
        _py(
            "ALTER TABLE lake.main.t SET PARTITIONED BY (p, bucket(4, id))",
            lambda lake: lake.set_partitioned_by("t", ["p", "bucket(4, id)"]),
        ),
        _sql("ALTER TABLE lake.main.t SET PARTITIONED BY (p, bucket(4, id))"),  # no change
        _sql("ALTER TABLE lake.main.k RESET PARTITIONED BY"),
        _py(
            "ALTER TABLE lake.main.k RESET PARTITIONED BY",
            lambda lake: lake.set_partitioned_by("k", []),
        ),
    ],
}
# the table DuckDB and we write to after the change (None: none)
WRITTEN = {"partitioned_table": "main.k"}


TWINS = [(LakeSpec("duckdb", "local"), case) for case in CASES]
TWINS += [(LakeSpec("sqlite", "local"), case) for case in ("several_changes_one_snapshot",)]
TWINS += [(LakeSpec("sqlite", "local"), case) for case in ("evolve_struct_type", "defaults")]
# PostgreSQL and MySQL: the same rows through their own SQL (types, uuids, quoting)
TWINS += [
    (LakeSpec(catalog, "local"), case)
    for catalog in ("postgres", "mysql")
    for case in ("several_changes_one_snapshot", "evolve_struct_type", "defaults")
]


def make_change(ours, steps) -> None:
    """Our side of ``steps``: each through the Python API or the SQL route."""
    catalog = DuckLakeCatalog(**ours.reader_args())
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    for statement, call in steps:
        if call is None:
            ducklake_datafusion.sql(ctx, statement).collect()
        else:
            call(catalog)
    catalog.close()


def writes_after(ours, theirs, table: str, *, defaults: bool = True) -> None:
    """DuckDB inserts into ``table`` on both twins, then we append on both. On a MySQL
    catalog DuckDB's MySQL extension fails a second INSERT into a table (``mysql_lakes``)
    and any change to a table with a struct: there DuckDB makes a table of one INSERT and
    alters it instead, through its own MySQL attach (its next writes after ours keep ours)."""
    for lake in (ours, theirs):
        if lake.spec.catalog == "mysql":
            duckdb_writes_directly(
                lake,
                [
                    "CREATE TABLE lake.main.later AS SELECT 1 AS a",
                    "ALTER TABLE lake.main.later ADD COLUMN b INTEGER DEFAULT 7",
                ],
            )
            continue
        lake.sql(f"INSERT INTO lake.{table} SELECT * FROM lake.{table} ORDER BY ALL LIMIT 3")
        if defaults:
            lake.sql(f"INSERT INTO lake.{table} DEFAULT VALUES")
        lake.detach()
    rows = duckdb_reads(theirs, f"SELECT * FROM lake.{table} ORDER BY ALL LIMIT 2")
    for lake in (ours, theirs):
        catalog = DuckLakeCatalog(**lake.reader_args())
        catalog.table(*table.split(".")).append(rows)
        catalog.close()


@pytest.mark.parametrize(("spec", "case"), TWINS, ids=[f"{s.id}-{c}" for s, c in TWINS])
def test_a_change_writes_duckdbs_rows(make_lake, spec, case):
    ours, theirs = twin_lakes(make_lake, spec, SETUP)
    # (the snapshots before are the set-up's, DuckDB's on both: the catalog rows, compared
    # whole, show the change left them as they were; reads from the last of them on)
    start = ours.snapshot_id()
    steps = CASES[case]
    for statement, _ in steps:
        theirs.sql(statement)
    theirs.detach()
    make_change(ours, steps)
    assert_ddl_twins_agree(ours, theirs, first=start)
    before = theirs.snapshot_id()
    table = WRITTEN.get(case, "main.t")
    writes_after(ours, theirs, table, defaults=case != "not_null")
    assert_ddl_twins_agree(ours, theirs, first=before)


def test_renamed_and_dropped_tables_and_schemas(make_lake):
    """Table and schema changes, one after another, as DuckDB writes them; DuckDB then
    creates a table in the schema we created and we in the one it created, and writes
    into the renamed table."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)
    steps = [
        _sql("ALTER TABLE lake.main.t RENAME TO t2"),
        _py("DROP TABLE lake.main.k", lambda lake: lake.drop_table("main.k")),
        _sql("CREATE SCHEMA lake.s2"),
        _py('CREATE SCHEMA lake."My Schema"', lambda lake: lake.create_schema("My Schema")),
        _sql("DROP SCHEMA lake.other CASCADE"),
        _py("CREATE SCHEMA lake.gone", lambda lake: lake.create_schema("gone")),
        _sql("DROP SCHEMA lake.gone"),
        _py(
            "ALTER TABLE lake.main.t2 RENAME TO t3",
            lambda lake: lake.rename_table("main.t2", "t3"),
        ),
        _sql("DROP TABLE IF EXISTS lake.main.nothing"),
        _sql("CREATE SCHEMA IF NOT EXISTS lake.s2"),
    ]
    for statement, _ in steps:
        theirs.sql(statement)
    theirs.detach()
    make_change(ours, steps)
    assert_ddl_twins_agree(ours, theirs)
    assert ("main", "t3") in live_tables(ours)
    before = theirs.snapshot_id()
    for lake in (ours, theirs):
        lake.sql("CREATE TABLE lake.s2.n (a INTEGER, b VARCHAR)")
        lake.sql("INSERT INTO lake.s2.n VALUES (1, 'x')")
        lake.detach()
        catalog = DuckLakeCatalog(**lake.reader_args())
        catalog.create_table("My Schema.m", pa.table({"a": [1, 2]}))
        catalog.close()
    writes_after(ours, theirs, "main.t3")
    assert_ddl_twins_agree(ours, theirs, first=before)


INLINED_SETUP = [
    "CREATE TABLE lake.main.t (id INTEGER, name VARCHAR, s STRUCT(x INTEGER), f FLOAT)",
    "INSERT INTO lake.main.t SELECT i, 'n' || i, {'x': i}, i / 2 FROM range(40) r(i)",
    "INSERT INTO lake.main.t VALUES (100, 'inlined', {'x': 1}, 0.5), (101, NULL, NULL, NULL)",
    "DELETE FROM lake.main.t WHERE id = 100",
]
INLINED_STEPS = [
    _sql("ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42"),
    _py(
        "ALTER TABLE lake.main.t RENAME COLUMN name TO label",
        lambda lake: lake.rename_column("t", "name", "label"),
    ),
    _sql("ALTER TABLE lake.main.t ALTER COLUMN label SET DEFAULT 'x'"),
    _sql("ALTER TABLE lake.main.t ALTER COLUMN f TYPE DOUBLE"),
    _sql("ALTER TABLE lake.main.t DROP COLUMN s"),
    _sql("ALTER TABLE lake.main.t SET PARTITIONED BY (label)"),
    _sql("ALTER TABLE lake.main.t RENAME TO u"),
]


@pytest.mark.parametrize(
    "spec", [LakeSpec("duckdb", "local"), LakeSpec("sqlite", "local")], ids=lambda s: s.id
)
def test_changes_of_a_table_with_inlined_rows(make_lake, spec):
    """With DuckDB's data inlining on (its default), a table whose columns change gets a
    new inlined-data table, as DuckDB makes it; DuckDB's small inserts after ours go
    there, its flush reads every schema version, and both twins agree throughout."""
    ours, theirs = twin_lakes(make_lake, spec, INLINED_SETUP, inline_limit=10)
    for statement, _ in INLINED_STEPS:
        theirs.sql(statement)
    theirs.detach()
    make_change(ours, INLINED_STEPS)
    assert_ddl_twins_agree(ours, theirs)
    before = theirs.snapshot_id()
    for lake in (ours, theirs):
        lake.sql("INSERT INTO lake.main.u (id, label) VALUES (200, 'small'), (201, NULL)")
        lake.sql("INSERT INTO lake.main.u DEFAULT VALUES")
        lake.detach()
    assert_ddl_twins_agree(ours, theirs, first=before)
    for lake in (ours, theirs):
        lake.sql("CALL ducklake_flush_inlined_data('lake')")
        lake.detach()
    assert_ddl_twins_agree(ours, theirs, first=before, file_ids=False)


def test_an_append_fills_defaults_as_duckdb_s_insert(make_lake):
    """Columns an append leaves out get their literal defaults, as DuckDB's INSERT fills
    them, and the expression defaults DuckDB writes for constants (a table's ``DEFAULT
    true`` is ``CAST('t' AS BOOLEAN)``); one whose default
    is an expression of the time or a random number is refused by name (nothing
    committed)."""
    changes = [
        "ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42",
        "ALTER TABLE lake.main.t ADD COLUMN ts TIMESTAMP DEFAULT '2024-01-01'",
        "ALTER TABLE lake.main.t ALTER COLUMN name SET DEFAULT 'anon'",
        "ALTER TABLE lake.main.t ALTER COLUMN m SET DEFAULT 1.5",
        (
            "CREATE TABLE lake.main.flags (id INTEGER, on_ BOOLEAN DEFAULT true, "
            "off_ BOOLEAN DEFAULT false)"
        ),
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP + changes)
    theirs.sql("INSERT INTO lake.main.t (id, p) VALUES (900, 'q'), (901, NULL)")
    theirs.sql("INSERT INTO lake.main.flags (id) VALUES (1), (2)")
    theirs.detach()
    catalog = DuckLakeCatalog(**ours.reader_args())
    rows = pa.table({"id": pa.array([900, 901], pa.int32()), "p": ["q", None]})
    catalog.table("main", "t").append(rows)
    catalog.table("main", "flags").append(pa.table({"id": pa.array([1, 2], pa.int32())}))
    catalog.close()
    assert_ddl_twins_agree(ours, theirs, first=theirs.snapshot_id() - 1)
    for lake in (ours, theirs):
        lake.sql("ALTER TABLE lake.main.t ALTER COLUMN f SET DEFAULT random()")
        lake.detach()
    before = ours.snapshot_id()
    catalog = DuckLakeCatalog(**ours.reader_args())
    with pytest.raises(UnsupportedFeatureError, match="'f'.*random()"):
        catalog.table("main", "t").append(rows)
    catalog.close()
    assert ours.snapshot_id() == before
