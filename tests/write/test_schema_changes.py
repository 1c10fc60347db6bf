"""Schema changes: what is refused (by name, as DuckDB refuses it), races, and the SQL route.

* Refusals: each statement DuckDB refuses on the twin lake (the oracle says it is not a
  change to make) is refused by us with a typed error naming the column, table or schema,
  and our lake is left as it was: a narrowing type change, dropping a partition key or
  the last column, renaming onto a taken name, altering a view, an unknown column, a
  non-literal default for a new column, a non-empty schema. The widenings this package
  makes are all ones DuckDB makes, checked pair by pair; one DuckDB makes that it does
  not is refused by name.
* Races: an append planned before an ALTER fails ``CommitConflictError`` (its files never
  recorded under the new columns), and goes through when planned again; an ALTER based
  before an append that committed meanwhile lands, with DuckDB's rows for that order; an
  ALTER racing another ALTER fails typed; threads appending and altering at once each
  land or fail typed, and DuckDB reads every row that landed.
* The SQL route: a session sees a change at once (its next query, ``information_schema``);
  DataFusion's own ``CREATE SCHEMA``/``DROP SCHEMA`` reach the lake.
"""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.ddl_twins import assert_ddl_twins_agree, ddl_catalog
from support.lakes import LakeSpec, assert_same_rows
from support.twins import twin_lakes
from support.writes import duckdb_reads, ours_reads
from test_alter_table import SETUP

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, DuckLakeSessionContext, register
from ducklake_datafusion.catalog import (
    AddColumn,
    AlterTable,
    ColumnType,
    TableRef,
    TableUnchanged,
    Transaction,
    commit,
    parse_type,
)
from ducklake_datafusion.catalog._ddl_types import check_widening
from ducklake_datafusion.errors import (
    CommitConflictError,
    InvalidOptionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

DUCKDB = LakeSpec("duckdb", "local")

# DuckDB's statement, the error we raise, words our message has
REFUSED = [
    ("ALTER TABLE lake.main.t ALTER COLUMN id TYPE SMALLINT", UnsupportedFeatureError, "widening"),
    ("ALTER TABLE lake.main.t ALTER COLUMN m TYPE DECIMAL(4,1)", UnsupportedFeatureError, "widen"),
    ("ALTER TABLE lake.main.t ALTER COLUMN name TYPE INTEGER", UnsupportedFeatureError, "VARCHAR"),
    ("ALTER TABLE lake.main.k DROP COLUMN grp", InvalidOptionError, "partitioned by"),
    ("ALTER TABLE lake.other.o DROP COLUMN a", InvalidOptionError, "only column"),
    ("ALTER TABLE lake.main.t RENAME COLUMN name TO ID", TableExistsError, "'id'"),
    ("ALTER TABLE lake.main.t RENAME s.x TO y", TableExistsError, "'y'"),
    ("ALTER TABLE lake.main.t RENAME TO k", TableExistsError, "'k'"),
    ("ALTER TABLE lake.main.t RENAME TO v", TableExistsError, "'v'"),
    ("ALTER TABLE lake.main.t ADD COLUMN name INTEGER", TableExistsError, "'name'"),
    ("ALTER TABLE lake.main.v ADD COLUMN z INTEGER", UnsupportedFeatureError, "is a view"),
    ("ALTER TABLE lake.main.t DROP COLUMN nope", TableNotFoundError, "'nope'"),
    ("ALTER TABLE lake.main.t ALTER COLUMN nope TYPE BIGINT", TableNotFoundError, "'nope'"),
    ("ALTER TABLE lake.main.t DROP COLUMN s.nope", TableNotFoundError, "'s.nope'"),
    ("ALTER TABLE lake.main.nope ADD COLUMN z INTEGER", TableNotFoundError, "main.nope"),
    ("ALTER TABLE lake.main.t ADD COLUMN z TIMESTAMP DEFAULT now()", InvalidOptionError, "literal"),
    ("ALTER TABLE lake.main.t ADD COLUMN z INTEGER NOT NULL", UnsupportedFeatureError, "constr"),
    ("ALTER TABLE lake.main.t ADD COLUMN z INTEGER DEFAULT 'abc'", InvalidOptionError, "INTEGER"),
    ("ALTER TABLE lake.main.t ADD COLUMN z INTEGER[] DEFAULT [1]", UnsupportedFeatureError, "LIST"),
    ("ALTER TABLE lake.main.t ADD COLUMN id.z INTEGER", InvalidOptionError, "structs only"),
    ("ALTER TABLE lake.main.t ALTER COLUMN name SET NOT NULL", InvalidOptionError, "NULL"),
    ("ALTER TABLE lake.main.t ALTER COLUMN id DROP NOT NULL", InvalidOptionError, "allows NULL"),
    ("ALTER TABLE lake.main.t SET PARTITIONED BY (nope)", InvalidOptionError, "nope"),
    ("DROP TABLE lake.main.nope", TableNotFoundError, "main.nope"),
    ("DROP SCHEMA lake.other", InvalidOptionError, "not empty"),
    ("DROP SCHEMA lake.nope", TableNotFoundError, "'nope'"),
    ("CREATE SCHEMA lake.other", TableExistsError, "'other'"),
]


def _session(lake):
    catalog = DuckLakeCatalog(**lake.reader_args())
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    return catalog, ctx


@pytest.fixture(scope="module")
def refusal_twins(tmp_path_factory):
    """One twin pair for every refusal (a refused change leaves both as they were)."""
    from support.lakes import make_lake

    root = tmp_path_factory.mktemp("refusals")
    lakes = []
    for name in ("ours", "theirs"):
        lake = make_lake(DUCKDB, root, inline_limit=0, name=name)
        for statement in SETUP:
            lake.sql(statement)
        lake.detach()
        lakes.append(lake)
    yield lakes
    for lake in lakes:
        lake.close()


@pytest.mark.parametrize(("statement", "error", "named"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_as_duckdb_refuses(refusal_twins, statement, error, named):
    ours, theirs = refusal_twins
    with pytest.raises(duckdb.Error):
        theirs.sql(statement)
    try:  # some refusals leave DuckDB's transaction aborted
        theirs.sql("ROLLBACK")
    except duckdb.Error:
        pass
    theirs.detach()
    before = ddl_catalog(ours)
    catalog, ctx = _session(ours)
    with pytest.raises(error, match=named):
        ducklake_datafusion.sql(ctx, statement)
    catalog.close()
    assert ddl_catalog(ours) == before == ddl_catalog(theirs)


def test_changes_duckdb_makes_but_we_do_not_are_refused_by_name(refusal_twins):
    ours, _ = refusal_twins
    before = ddl_catalog(ours)
    catalog, _ = _session(ours)
    with pytest.raises(UnsupportedFeatureError, match="INTEGER to FLOAT.*DuckDB makes"):
        catalog.alter_column_type("t", "id", "FLOAT")
    with pytest.raises(UnsupportedFeatureError, match="DATE to TIMESTAMP"):
        check_widening("date", "timestamp", "column d")
    # DuckDB partitions by these; this package's writers could not split rows by them
    with pytest.raises(InvalidOptionError, match="year"):
        catalog.set_partitioned_by("t", ["year(id)"])
    with pytest.raises(UnsupportedFeatureError, match="nested"):
        catalog.set_partitioned_by("t", ["s"])
    catalog.close()
    assert ddl_catalog(ours) == before


NUMBERS = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT"]
NUMBERS += ["UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL(4,1)", "DECIMAL(9,2)"]
NUMBERS += ["DECIMAL(18,3)", "DECIMAL(38,2)", "DATE", "TIMESTAMP", "VARCHAR"]


def test_every_widening_we_make_duckdb_makes(make_lake):
    lake = make_lake(DUCKDB, inline_limit=0)
    made = 0
    for i, source in enumerate(NUMBERS):
        for target in NUMBERS:
            try:
                check_widening(parse_type(source).name, parse_type(target).name, "c")
            except UnsupportedFeatureError:
                continue
            if source == target:
                continue
            lake.sql(f"CREATE TABLE lake.main.w{i} (c {source})")
            lake.sql(f"ALTER TABLE lake.main.w{i} ALTER COLUMN c TYPE {target}")  # DuckDB's too
            lake.sql(f"DROP TABLE lake.main.w{i}")
            made += 1
    assert made > 20


def test_an_append_planned_before_an_alter_fails_typed_then_lands(make_lake):
    ours, theirs = twin_lakes(make_lake, DUCKDB, SETUP)
    rows = pa.table({"id": pa.array([500], pa.int32()), "p": ["late"]})
    catalog, _ = _session(ours)
    with pytest.raises(CommitConflictError, match="altered"), catalog.transaction() as tx:
        tx.table("main", "t").append(rows)  # staged at the snapshot before the ALTER
        catalog.add_column("t", "c", "INTEGER", default=42)
    catalog.table("main", "t").append(rows)  # planned again: the new columns
    catalog.close()
    theirs.sql("ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42")
    theirs.sql("INSERT INTO lake.main.t (id, p) VALUES (500, 'late')")  # c: its default
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs)


def test_an_alter_based_before_an_append_lands(make_lake):
    """DuckDB lets an ALTER commit after an insert it did not see (only an ALTER or a
    drop of the table conflicts with it): the rows are DuckDB's for that order."""
    ours, theirs = twin_lakes(make_lake, DUCKDB, SETUP)
    base = ours.snapshot_id()
    rows = pa.table({"id": pa.array([500], pa.int32())})
    catalog, _ = _session(ours)
    catalog.table("main", "t").append(rows)
    entry = catalog.lake.table("main", "t").entry
    ref = TableRef("main", "t", entry.table_id)
    change = AlterTable(ref, (AddColumn(("c",), ColumnType("int32"), "42"),))
    commit(catalog.backend, Transaction(base, (change,), (TableUnchanged(ref),)))
    other = AlterTable(ref, (AddColumn(("d",), ColumnType("int32")),))
    with pytest.raises(CommitConflictError, match="altered"):  # an ALTER racing an ALTER
        commit(catalog.backend, Transaction(base, (other,), (TableUnchanged(ref),)))
    catalog.close()
    theirs.sql("INSERT INTO lake.main.t (id) VALUES (500)")
    theirs.sql("ALTER TABLE lake.main.t ADD COLUMN c INTEGER DEFAULT 42")
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs)


def test_appends_and_alters_at_once_land_or_fail_typed(make_lake):
    lake = make_lake(LakeSpec("sqlite", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, who VARCHAR)")
    lake.detach()
    landed, failures = [], []

    def work(worker: int) -> None:
        catalog = DuckLakeCatalog(**lake.reader_args())
        for i in range(4):
            try:
                if worker == 0:
                    catalog.add_column("t", f"c{i}", "INTEGER", default=i)
                else:
                    rows = pa.table({"id": [worker * 100 + i], "who": [f"w{worker}"]})
                    catalog.table("main", "t").append(rows)
                    landed.append(worker * 100 + i)
            except CommitConflictError:
                pass
            except Exception as exc:  # noqa: BLE001 - any other failure fails the test
                failures.append(exc)
        catalog.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    read = duckdb_reads(lake, "SELECT id, who FROM lake.main.t")
    assert sorted(read.column("id").to_pylist()) == sorted(landed)
    assert all(who == f"w{i // 100}" for i, who in zip(*read.to_pydict().values(), strict=True))
    assert_same_rows(
        ours_reads(lake, "SELECT * FROM lake.main.t"),
        duckdb_reads(lake, "SELECT * FROM lake.main.t"),
    )


def test_a_session_sees_a_change_at_once(make_lake):
    lake = make_lake(DUCKDB, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1)")
    lake.detach()
    ctx = DuckLakeSessionContext()
    catalog = DuckLakeCatalog(**lake.reader_args())
    register(ctx, "lake", catalog)
    assert ctx.sql("SELECT * FROM lake.main.t").to_pylist() == [{"a": 1}]
    done = ctx.sql("ALTER TABLE lake.main.t ADD COLUMN b VARCHAR DEFAULT 'x'").to_pylist()
    assert done == [{"snapshot_id": catalog.snapshot_id()}]
    assert ctx.sql("SELECT * FROM lake.main.t").to_pylist() == [{"a": 1, "b": "x"}]
    ctx.sql("COMMENT ON COLUMN lake.main.t.b IS 'bee'").collect()
    assert catalog.column_comments("main", "t") == {"b": "bee"}
    ctx.sql("ALTER TABLE lake.main.t RENAME COLUMN a TO aa").collect()
    columns = ctx.sql(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'lake' "
        "AND table_name = 't' ORDER BY ordinal_position"
    )
    assert [r["column_name"] for r in columns.to_pylist()] == ["aa", "b"]
    ctx.sql("ALTER TABLE lake.main.t RENAME TO u").collect()
    assert ctx.sql("SELECT aa FROM lake.main.u").to_pylist() == [{"aa": 1}]
    # DataFusion's own statements reach the lake through the catalog's hooks
    plain = SessionContext()
    register(plain, "lake", catalog)
    plain.sql("CREATE SCHEMA lake.fresh").collect()
    assert "fresh" in catalog.list_schema_names()
    plain.sql("DROP SCHEMA lake.fresh").collect()
    assert "fresh" not in catalog.list_schema_names()
    before = catalog.snapshot_id()
    ctx.sql("DROP TABLE lake.main.u").collect()
    assert catalog.tables().num_rows == 0
    catalog.close()
    # DuckDB reads the table before the drop (its files stay for that snapshot)
    read = duckdb_reads(lake, "SELECT * FROM lake.main.u", before)
    assert read.to_pylist() == [{"aa": 1, "b": "x"}]


@pytest.mark.parametrize(
    "spec", [LakeSpec("duckdb", "local"), LakeSpec("sqlite", "local")], ids=lambda s: s.id
)
def test_schema_changes_of_a_1_1_catalog(make_lake, spec):
    """On a catalog migrated to DuckLake 1.1 (kept in its form): the same column rows and
    inlined-data tables DuckDB writes on the 1.0 twin (the new one with 1.1's system
    columns), and our reader reads what DuckDB reads of the twin."""
    from support.lake_formats import migrated_copy
    from test_alter_table import INLINED_SETUP, INLINED_STEPS

    ours, theirs = twin_lakes(make_lake, spec, INLINED_SETUP, inline_limit=10)
    metadata, schema = migrated_copy(ours.metadata, ours.metadata_schema)
    args = {**ours.reader_args(), "metadata": metadata}
    if schema is not None:
        args["metadata_schema"] = schema
    catalog = DuckLakeCatalog(**args)
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    for statement, call in INLINED_STEPS:
        theirs.sql(statement)
        if call is None:
            ducklake_datafusion.sql(ctx, statement).collect()
        else:
            call(catalog)
    theirs.detach()
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.u")
    assert_same_rows(ctx.sql("SELECT * FROM lake.main.u").to_arrow_table(), expected)
    columns = (
        "SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, "
        "column_type, initial_default, default_value, nulls_allowed, parent_column "
        "FROM {m}ducklake_column ORDER BY column_id, begin_snapshot, table_id"
    )
    inlined = "SELECT * FROM {m}ducklake_inlined_data_tables ORDER BY table_id, schema_version"
    with catalog.backend.session() as session:
        mine = [session.rows(q.format(m="")) for q in (columns, inlined)]
        newest = mine[1][-1][1]
        assert session.column_names(newest)[:3] == (
            "_ducklake_row_id",
            "_ducklake_begin_snapshot",
            "_ducklake_end_snapshot",
        )
    catalog.close()
    meta = "__ducklake_metadata_lake."
    their = [
        [tuple(r.values()) for r in duckdb_reads(theirs, q.format(m=meta)).to_pylist()]
        for q in (columns, inlined)
    ]
    # (SQLite keeps nulls_allowed as an integer)
    mine[0] = [(*r[:9], bool(r[9]), *r[10:]) for r in mine[0]]
    assert mine == their


def test_every_widening_we_make_reads_older_files_as_duckdb(make_lake):
    """Each widening this package makes, on a column of a file written before it (edge
    values, NULL): our readers read what DuckDB reads after our change."""
    pairs = []
    for source in NUMBERS:
        for target in NUMBERS:
            s, t = parse_type(source).name, parse_type(target).name
            if s == t:
                continue
            try:
                check_widening(s, t, "c")
            except UnsupportedFeatureError:
                continue
            pairs.append((source, target))
    lake = make_lake(DUCKDB, inline_limit=0)
    columns = ", ".join(f"c{i} {source}" for i, (source, _) in enumerate(pairs))
    lake.sql(f"CREATE TABLE lake.main.w (id INTEGER, {columns})")
    for row in range(3):
        values = ", ".join(f"CAST('{_values(source)[row]}' AS {source})" for source, _ in pairs)
        lake.sql(f"INSERT INTO lake.main.w VALUES ({row + 1}, {values})")
    lake.sql(f"INSERT INTO lake.main.w VALUES (4, {', '.join('NULL' for _ in pairs)})")
    lake.detach()
    catalog = DuckLakeCatalog(**lake.reader_args())
    for i, (_, target) in enumerate(pairs):
        catalog.alter_column_type("w", f"c{i}", target)
    catalog.close()
    lake.sql("INSERT INTO lake.main.w SELECT id + 10, * EXCLUDE (id) FROM lake.main.w")
    lake.detach()
    expected = duckdb_reads(lake, "SELECT * FROM lake.main.w")
    assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.w"), expected)
    assert_same_rows(ours_reads(lake, "SELECT * FROM lake.main.w", native=False), expected)


def _values(source: str) -> tuple[str, str, str]:
    """Three values of a type: its largest, a small one and its smallest (or a fraction)."""
    integers = {"TINYINT": 7, "SMALLINT": 15, "INTEGER": 31, "BIGINT": 63, "HUGEINT": 127}
    unsigned = {"UTINYINT": 8, "USMALLINT": 16, "UINTEGER": 32, "UBIGINT": 64}
    if source in integers:
        bits = integers[source]
        return str(2**bits - 1), "1", str(-(2**bits))
    if source in unsigned:
        return str(2 ** unsigned[source] - 1), "1", "0"
    if source.startswith("DECIMAL"):
        precision, scale = (int(v) for v in source[8:-1].split(","))
        largest = "9" * (precision - scale) + ("." + "9" * scale if scale else "")
        return largest, "0." + "0" * (scale - 1) + "1", "-" + largest
    return "3.4e38", "0.1", "-1.5"  # FLOAT (a DOUBLE widens nothing here)
