"""Spark's DDL on the lake, against a twin lake: DuckDB runs the same change on an identical one.

Spark SQL's ``ALTER TABLE`` (add, drop, rename and widen columns, a struct's fields, nullability,
comments), ``ALTER TABLE ... RENAME TO``, ``DROP TABLE``, ``CREATE`` / ``DROP NAMESPACE`` go
through the jar's ``TableCatalog`` / ``SupportsNamespaces`` to the planner, which writes them
with the core's schema changes; DuckDB's own statement on the twin is the oracle: the same
catalog rows, every table read the same at every snapshot by DuckDB and our readers
(``support.ddl_twins``), and Spark reading the changed tables as DuckDB does. What DuckLake
cannot record is refused by name, the lake unchanged.
"""

from __future__ import annotations

import pytest
from support.ddl_twins import assert_ddl_twins_agree, assert_evolved_alike
from support.lakes import LakeSpec, assert_same_rows
from support.twins import twin_lakes
from support.writes import duckdb_reads

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import pyspark_at_least

pytestmark = pytest.mark.spark

SETUP = [
    (
        "CREATE TABLE lake.main.t (id INTEGER, name VARCHAR, f FLOAT, s STRUCT(x INTEGER, y VARCHAR), "
        "p VARCHAR)"
    ),
    (
        "INSERT INTO lake.main.t SELECT i, 'n' || i, i / 4, {'x': i, 'y': 'y' || i}, 'p' || (i % 3) "
        "FROM range(40) r(i)"
    ),
    "DELETE FROM lake.main.t WHERE id % 7 = 0",
    "CREATE SCHEMA lake.other",
    "CREATE TABLE lake.other.o (a INTEGER)",
    "INSERT INTO lake.other.o VALUES (1), (2)",
]

# (Spark's statement, with {n} the catalog's name; DuckDB's for the same change)
CHANGES = [
    ("ALTER TABLE {n}.main.t ADD COLUMN z INT", "ALTER TABLE lake.main.t ADD COLUMN z INTEGER"),
    (
        "ALTER TABLE {n}.main.t ADD COLUMN s.w BIGINT",
        "ALTER TABLE lake.main.t ADD COLUMN s.w BIGINT",
    ),
    (
        "ALTER TABLE {n}.main.t RENAME COLUMN name TO label",
        "ALTER TABLE lake.main.t RENAME COLUMN name TO label",
    ),
    ("ALTER TABLE {n}.main.t RENAME COLUMN s.y TO y2", "ALTER TABLE lake.main.t RENAME s.y TO y2"),
    ("ALTER TABLE {n}.main.t DROP COLUMN p", "ALTER TABLE lake.main.t DROP COLUMN p"),
    ("ALTER TABLE {n}.main.t DROP COLUMN s.x", "ALTER TABLE lake.main.t DROP COLUMN s.x"),
    (
        "ALTER TABLE {n}.main.t ALTER COLUMN id TYPE BIGINT",
        "ALTER TABLE lake.main.t ALTER COLUMN id TYPE BIGINT",
    ),
    (
        "ALTER TABLE {n}.main.t ALTER COLUMN f TYPE DOUBLE",
        "ALTER TABLE lake.main.t ALTER COLUMN f TYPE DOUBLE",
    ),
    (
        "ALTER TABLE {n}.main.t ALTER COLUMN z COMMENT 'added by Spark'",
        "COMMENT ON COLUMN lake.main.t.z IS 'added by Spark'",
    ),
    ("ALTER TABLE {n}.main.t RENAME TO t2", "ALTER TABLE lake.main.t RENAME TO t2"),
    ("CREATE NAMESPACE {n}.extra", "CREATE SCHEMA lake.extra"),
    ("DROP TABLE {n}.other.o", "DROP TABLE lake.other.o"),
    ("DROP NAMESPACE {n}.other", "DROP SCHEMA lake.other"),
]


def test_spark_ddl_writes_what_duckdb_writes(spark, make_lake, catalog):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)
    name = catalog(ours)
    first = ours.snapshot_id() + 1
    for spark_sql, duckdb_sql in CHANGES:
        spark.sql(spark_sql.format(n=name)).collect()
        theirs.sql(duckdb_sql)
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs, first=first, commit_info=False)
    # Spark reads the changed table as DuckDB does, and writes into its new columns
    expected = duckdb_reads(ours, "SELECT * FROM lake.main.t2")
    assert_same_rows(spark.table(f"{name}.main.t2").toArrow(), expected)
    assert {r.namespace for r in spark.sql(f"SHOW NAMESPACES IN {name}").collect()} == {
        "main",
        "extra",
    }
    spark.sql(
        f"INSERT INTO {name}.main.t2 (id, label, f, s, z) "
        "VALUES (1000, 'new', 1.5, named_struct('y2', 'sy', 'w', 7L), 5)"
    ).collect()
    expected = duckdb_reads(ours, "SELECT * FROM lake.main.t2 WHERE id = 1000")
    assert expected.to_pylist() == [
        {"id": 1000, "label": "new", "f": 1.5, "s": {"y2": "sy", "w": 7}, "z": 5}
    ]


def test_nullability_changes_match_duckdb(spark, make_lake, catalog):
    """Spark allows only ``DROP NOT NULL`` (it refuses making a column non-nullable)."""
    setup = [
        "CREATE TABLE lake.main.n (a INTEGER, b VARCHAR)",
        "INSERT INTO lake.main.n VALUES (1, 'x')",
        "ALTER TABLE lake.main.n ALTER COLUMN a SET NOT NULL",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    first = ours.snapshot_id() + 1
    spark.sql(f"ALTER TABLE {name}.main.n ALTER COLUMN a DROP NOT NULL").collect()
    theirs.sql("ALTER TABLE lake.main.n ALTER COLUMN a DROP NOT NULL")
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs, first=first, commit_info=False)


def test_partition_keys_set_and_reset_as_duckdb_does(spark, make_lake, catalog):
    """Spark has no DDL for a table's partitioning: the ``partitioned_by`` table property
    is DuckDB's ``SET PARTITIONED BY`` (its keys' spelling), unset its ``RESET``."""
    setup = ["CREATE TABLE lake.main.k (id INTEGER, grp VARCHAR, day DATE)"]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    first = ours.snapshot_id() + 1
    spark.sql(
        f"ALTER TABLE {name}.main.k SET TBLPROPERTIES "
        "('partitioned_by' = 'grp, year(day), bucket(4, id)')"
    ).collect()
    theirs.sql("ALTER TABLE lake.main.k SET PARTITIONED BY (grp, year(day), bucket(4, id))")
    spark.sql(f"ALTER TABLE {name}.main.k UNSET TBLPROPERTIES ('partitioned_by')").collect()
    theirs.sql("ALTER TABLE lake.main.k RESET PARTITIONED BY")
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs, first=first, commit_info=False)


# Statements Spark passes to the catalog that DuckLake cannot record: refused by our error
# (its class named in Spark's), nothing committed.
@pytest.mark.parametrize(
    ("statement", "words"),
    [
        (
            "ALTER TABLE {n}.main.t ADD COLUMN q INT FIRST",
            "UnsupportedFeatureError.*FIRST or AFTER",
        ),
        ("ALTER TABLE {n}.main.t SET TBLPROPERTIES ('x.y' = 'z')", "UnsupportedFeatureError.*x.y"),
        ("ALTER TABLE {n}.main.t RENAME TO other.t3", "UnsupportedFeatureError.*within its schema"),
        ("ALTER TABLE {n}.other.o DROP COLUMN a", "InvalidOptionError.*only column"),
        ("DROP NAMESPACE {n}.other", "other"),
        (
            "CREATE TABLE {n}.main.new (a INT DEFAULT 3)",
            "UnsupportedFeatureError.*column defaults are not written",
        ),
    ],
)
def test_what_ducklake_cannot_record_is_refused_by_name(
    spark, make_lake, catalog, statement, words
):
    (ours,) = twin_lakes(make_lake, LakeSpec("duckdb", "local"), SETUP)[:1]
    name = catalog(ours)
    last = ours.snapshot_id()
    with pytest.raises(Exception, match=words):
        spark.sql(statement.format(n=name)).collect()
    assert ours.snapshot_id() == last


@pytest.mark.skipif(
    not pyspark_at_least(4, 1), reason="MERGE WITH SCHEMA EVOLUTION: Spark 4.1 and later"
)
def test_merge_with_schema_evolution_adds_the_source_s_columns(spark, make_lake, catalog):
    """Spark alters the table through the catalog (the source's new column, as DuckDB's
    ALTER adds it), then merges: DuckDB's ALTER and MERGE on the twin read the same."""
    setup = [
        "CREATE TABLE lake.main.m (id INTEGER, v VARCHAR)",
        "INSERT INTO lake.main.m SELECT i, 'v' || i FROM range(10) r(i)",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    spark.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO {name}.main.m AS t "
        "USING (SELECT id, 'new' AS v, id * 10 AS extra FROM range(5, 15)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    # (Spark's evolution widens the target's INTEGER id to the source's BIGINT too)
    theirs.sql(
        "BEGIN; ALTER TABLE lake.main.m ALTER COLUMN id TYPE BIGINT; "
        "ALTER TABLE lake.main.m ADD COLUMN extra BIGINT; COMMIT"
    )
    theirs.sql(
        "MERGE INTO lake.main.m AS t USING (SELECT id, 'new' AS v, id * 10 AS extra "
        "FROM range(5, 15) r(id)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v, extra = s.extra "
        "WHEN NOT MATCHED THEN INSERT (id, v, extra) VALUES (s.id, s.v, s.extra)"
    )
    assert_evolved_alike(ours, theirs, "lake.main.m")


@pytest.mark.skipif(
    not pyspark_at_least(4, 3), reason="INSERT WITH SCHEMA EVOLUTION: Spark 4.3 (not 4.1)"
)
def test_insert_with_schema_evolution_adds_the_query_s_columns(spark, make_lake, catalog):
    """Spark's own write evolution (the table's ``AUTOMATIC_SCHEMA_EVOLUTION``): Spark asks
    the catalog to add the query's new column, then inserts; DuckDB's ALTER and INSERT on
    the twin write the same catalog rows and read the same at every snapshot."""
    setup = [
        "CREATE TABLE lake.main.m (id INTEGER, v VARCHAR)",
        "INSERT INTO lake.main.m SELECT i, 'v' || i FROM range(3) r(i)",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    spark.sql(
        f"INSERT WITH SCHEMA EVOLUTION INTO {name}.main.m "
        "SELECT CAST(id AS INT), 'new', CAST(id * 10 AS BIGINT) AS extra FROM range(3, 6)"
    ).collect()
    theirs.sql("ALTER TABLE lake.main.m ADD COLUMN extra BIGINT")
    theirs.sql("INSERT INTO lake.main.m SELECT i, 'new', i * 10 FROM range(3, 6) r(i)")
    assert_evolved_alike(ours, theirs, "lake.main.m")


@pytest.mark.skipif(
    not pyspark_at_least(4, 3), reason="DataFrameWriter(V2).withSchemaEvolution: Spark 4.3"
)
def test_dataframe_writes_with_schema_evolution_add_the_frame_s_columns(spark, make_lake, catalog):
    """Spark 4.3's ``withSchemaEvolution()`` on ``writeTo(...).append()`` and on
    ``saveAsTable`` (its JVM API; pyspark 4.3 has no wrapper yet): Spark adds the frame's new
    columns through the catalog, then appends; DuckDB's ALTER and INSERT on the twin agree."""
    setup = ["CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)"]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    appended = spark.sql("SELECT CAST(1 AS BIGINT) AS id, 'a' AS s, 5 AS extra").writeTo(
        f"{name}.main.t"
    )
    appended._jwriter.withSchemaEvolution()
    appended.append()
    saved = spark.sql("SELECT CAST(2 AS BIGINT) AS id, 'b' AS s, 6 AS extra, 1.5D AS more")
    writer = saved.write.mode("append")
    writer._jwrite.withSchemaEvolution()
    writer.saveAsTable(f"{name}.main.t")
    for statement in (
        "ALTER TABLE lake.main.t ADD COLUMN extra INTEGER",
        "INSERT INTO lake.main.t VALUES (1, 'a', 5)",
        "ALTER TABLE lake.main.t ADD COLUMN more DOUBLE",
        "INSERT INTO lake.main.t VALUES (2, 'b', 6, 1.5)",
    ):
        theirs.sql(statement)
    assert_evolved_alike(ours, theirs, "lake.main.t")


DEFAULTS_SETUP = [
    (
        "CREATE TABLE lake.main.d (id INTEGER, c INTEGER DEFAULT 5, s VARCHAR DEFAULT 'it''s \\ x', "
        "m DECIMAL(9,2) DEFAULT 1.5, day DATE DEFAULT '2024-02-03', "
        "ts TIMESTAMPTZ DEFAULT '2024-02-03 04:05:06+00', tn TIMESTAMP DEFAULT "
        "'2024-01-01 01:02:03.5', b BOOLEAN DEFAULT true, f DOUBLE DEFAULT 'nan', "
        "bytes BLOB DEFAULT '\\x01\\x02', later TIMESTAMPTZ DEFAULT now())"
    ),
    "INSERT INTO lake.main.d (id, later) VALUES (0, NULL)",
]


@pytest.mark.skipif(
    not pyspark_at_least(4, 0),
    reason="Spark 3.5 refuses an INSERT that leaves a DataSourceV2 table's column out",
)
def test_spark_inserts_write_the_defaults_duckdb_s_insert_writes(spark, make_lake, catalog):
    """Spark's ``INSERT`` that leaves columns out writes their defaults (Spark reads them from
    the loaded table's columns), as DuckDB's does on the twin, and ``ALTER COLUMN ... SET
    DEFAULT`` / ``DROP DEFAULT`` write DuckDB's catalog rows. A default DuckDB evaluates per
    row (``now()``) is DuckDB SQL, not Spark's: no default there (NULL), read back as such."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), DEFAULTS_SETUP)
    name = catalog(ours)
    start = ours.snapshot_id()
    steps = [
        "INSERT INTO {n}.main.d (id, later) VALUES (1, NULL)",
        "ALTER TABLE {n}.main.d ALTER COLUMN c SET DEFAULT 6",
        "INSERT INTO {n}.main.d (id, later) VALUES (2, NULL)",
        "ALTER TABLE {n}.main.d ALTER COLUMN c DROP DEFAULT",
        "INSERT INTO {n}.main.d (id, later) VALUES (3, NULL)",
    ]
    for step in steps:
        spark.sql(step.format(n=name)).collect()
        theirs.sql(step.format(n="lake"))
    theirs.detach()
    assert_ddl_twins_agree(ours, theirs, first=start, commit_info=False)
    fields = {f.name: f.metadata for f in spark.table(f"{name}.main.d").schema.fields}
    assert "CURRENT_DEFAULT" not in fields["later"]


@pytest.mark.skipif(
    not pyspark_at_least(4, 1), reason="Spark 3.5 has no TIME: such a table is refused, named"
)
def test_defaults_spark_cannot_spell_leave_the_table_readable(spark, make_lake, catalog):
    """Spark analyzes every column default when it loads a table: a time, a time with zone,
    an interval, nanosecond timestamps get none (one Spark cannot resolve would make the
    table unreadable); the others carry theirs. Spark reads the rows DuckDB reads."""
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.t (id INTEGER, t TIME DEFAULT '01:02:03', "
        "tz TIMETZ DEFAULT '01:02:03+01', iv INTERVAL DEFAULT INTERVAL 2 DAY, "
        "tn TIMESTAMP_NS DEFAULT '2024-01-01 01:02:03.123456789', u UINTEGER DEFAULT 7, "
        "j JSON DEFAULT '{\"a\": 1}')"
    )
    lake.sql("INSERT INTO lake.main.t (id) VALUES (1)")
    name = catalog(lake)
    table = spark.table(f"{name}.main.t")
    defaults = {f.name: f.metadata.get("CURRENT_DEFAULT") for f in table.schema.fields}
    assert [c for c, d in defaults.items() if d is not None] == ["u", "j"]
    (row,) = table.select("id", "u", "j").collect()
    expected = lake.reference("SELECT id, u, j::VARCHAR AS j FROM lake.main.t").to_pylist()
    assert [row.asDict()] == expected
