"""Spark writes to the lake through the catalog, read back by DuckDB (the reference).

Executors write the files with Spark's own Parquet writer; the driver commits them once
through the core's protocol. Every write is read back by DuckDB's ``ducklake`` extension
and by our DataFusion reader at every snapshot; DuckDB keeps writing after Spark and both
agree again; the catalog rows of Spark's writes are DuckDB's for the same data.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.spark_settings import register_catalog, spark_settings
from support.writes import (
    META,
    PARTITIONED,
    assert_bounds_hold,
    assert_reads_back,
    assert_same_answers,
    catalog_rows,
    duckdb_reads,
    duckdb_writes,
    every_type,
    partitioned_rows,
)
from test_spark_catalog import (
    LOCAL_CATALOGS,
    _error_text,
)

pytest.importorskip("pyspark")

from ducklake_datafusion.errors import InvalidOptionError
from ducklake_datafusion.spark import write_table

pytestmark = pytest.mark.spark

CELLS = [LakeSpec("sqlite", "local"), *LOCAL_CATALOGS]


@pytest.fixture(autouse=True)
def _source_dates_as_written(request):
    """The tests' source Parquet files (pyarrow's) hold dates before 1582, which pyspark 3.5
    refuses to read unless told they are proleptic Gregorian, as they are."""
    if "spark" not in request.fixturenames:
        yield
        return
    spark = request.getfixturevalue("spark")
    with spark_settings(spark, {"spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED"}):
        yield


def _arrow(frame) -> pa.Table:
    """A Spark DataFrame's rows as Arrow (``toArrow`` from pyspark 4.0)."""
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    return pa.Table.from_batches(frame._collect_as_arrow())


def _select(start: int, count: int, tag: str) -> str:
    """The rows ``start``.. as a query: NULL names, NaN prices, empty lists among them."""
    return (
        f"SELECT id, IF(id % 7 = 0, NULL, concat('{tag}', id)) AS name, "
        "IF(id % 11 = 0, double('NaN'), id / 4) AS price, "
        f"IF(id % 5 = 0, array(), array('{tag}', string(id))) AS tags "
        f"FROM range({start}, {start + count})"
    )


def _rows(spark, start: int, count: int, tag: str):
    return spark.sql(_select(start, count, tag))


def _data_files(lake) -> set[str]:
    return {
        os.path.join(root, name)
        for root, _, names in os.walk(lake.data_path)
        for name in names
        if name.endswith(".parquet")
    }


@pytest.mark.parametrize("spec", CELLS, ids=lambda s: s.id)
def test_spark_writes_read_back_on_every_catalog(spark, make_lake, catalog, spec):
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR, price DOUBLE, tags VARCHAR[])")
    name = catalog(lake)
    table = f"{name}.main.t"
    expected, snapshots = [], []

    def written(rows: pa.Table | None) -> None:
        expected.append(rows)
        snapshots.append(lake.snapshot_id())

    first = _rows(spark, 0, 300, "a")
    spark.sql(f"INSERT INTO {table} " + _select(0, 300, "a"))
    written(_arrow(first))
    second = _rows(spark, 300, 200, "b")
    second.writeTo(table).append()
    written(pa.concat_tables([expected[-1], _arrow(second)]))
    third = _rows(spark, 1000, 50, "c")
    spark.sql(f"INSERT OVERWRITE {table} " + _select(1000, 50, "c"))
    written(_arrow(third))
    fourth = _rows(spark, 2000, 20, "d")
    fourth.write.mode("append").saveAsTable(table)
    written(pa.concat_tables([expected[-1], _arrow(fourth)]))
    assert snapshots == sorted(set(snapshots)), "each write is one new snapshot"
    for rows, snapshot in zip(expected, snapshots, strict=True):
        assert_reads_back(lake, "t", rows, snapshot=snapshot)
    if lake.mirror is None:
        assert_bounds_hold(lake)
    assert_same_rows(_arrow(spark.table(table)), expected[-1])

    # a new table with its rows in one snapshot, through SQL and the DataFrame API
    spark.sql(f"CREATE TABLE {name}.main.c AS " + _select(0, 40, "x"))
    assert_reads_back(lake, "c", _arrow(_rows(spark, 0, 40, "x")))
    _rows(spark, 0, 10, "y").writeTo(f"{name}.main.w").create()
    assert_reads_back(lake, "w", _arrow(_rows(spark, 0, 10, "y")))
    changes = duckdb_reads(lake, "SELECT changes FROM lake.snapshots() ORDER BY snapshot_id DESC")
    assert "tables_created" in str(changes.column(0)[0]) and "tables_inserted_into" in str(
        changes.column(0)[0]
    )

    if spec.catalog == "mysql":
        return  # DuckDB writes MySQL lakes through a copy of a file (support.mysql_lakes)
    # DuckDB keeps writing after Spark, and Spark after DuckDB: all readers agree
    for statement in (
        "INSERT INTO lake.main.t (id, name) SELECT i, 'duck' FROM range(3000, 3100) r(i)",
        "DELETE FROM lake.main.t WHERE id % 3 = 0",
        "UPDATE lake.main.t SET name = 'updated' WHERE id BETWEEN 1000 AND 1010",
        "CALL ducklake_merge_adjacent_files('lake')",
    ):
        lake.sql(statement)
        lake.detach()
        assert_same_answers(lake, "SELECT * FROM lake.main.t")
    spark.sql(f"INSERT INTO {table} " + _select(5000, 10, "e"))
    reference = lake.reference("SELECT * FROM lake.main.t")
    assert_same_answers(lake, "SELECT * FROM lake.main.t")
    assert_same_rows(_arrow(spark.table(table)), reference)


# every_type()'s columns of types Spark holds differently (refused by name, tested below),
# and its NaN columns (no bounds from Spark's writer: test_nan_leaves_no_bound...)
NOT_SPARK = (
    "u8",
    "u16",
    "u32",
    "u64",
    "clock",
    "ts_s",
    "ts_ms",
    "ts_ns",
    "id",
    "doc",
    "f64_nan",
    "only_nan",
)


def spark_typed_rows() -> pa.Table:
    """Three rows of every type Spark writes exactly, at their edges."""
    return every_type().drop_columns(list(NOT_SPARK))


@pytest.mark.parametrize("spec", CELLS[:-1], ids=lambda s: s.id)
def test_catalog_rows_equal_duckdbs(spark, make_lake, catalog, spec, tmp_path):
    """DuckDB writes a table into one lake (``CREATE TABLE AS``, ``INSERT``, a replacement
    with a commit message); Spark writes the same rows the same way into another: the
    catalog rows (statistics, snapshots, changes) are equal, ids, paths and sizes aside."""
    first = spark_typed_rows()
    second = pa.concat_tables([first.slice(1), first.slice(0, 1)])
    theirs = make_lake(spec, inline_limit=0, name="theirs")
    ours = make_lake(spec, inline_limit=0, name="ours")
    duckdb_writes(theirs, first, second)

    pq.write_table(first, tmp_path / "first.parquet")
    pq.write_table(second, tmp_path / "second.parquet")
    name = catalog(ours)
    spark.sql(
        f"CREATE TABLE {name}.main.t AS SELECT /*+ COALESCE(1) */ * "
        f"FROM parquet.`{tmp_path / 'first.parquet'}`"
    )
    spark.sql(
        f"INSERT INTO {name}.main.t SELECT /*+ COALESCE(1) */ * "
        f"FROM parquet.`{tmp_path / 'second.parquet'}`"
    )
    replaced = {
        "spark.ducklake.author": "someone",
        "spark.ducklake.commit_message": "replaced",
        "spark.ducklake.commit_extra_info": '{"k": 1}',
    }
    with spark_settings(spark, replaced):
        spark.sql(
            f"INSERT OVERWRITE {name}.main.t SELECT /*+ COALESCE(1) */ * "
            f"FROM parquet.`{tmp_path / 'first.parquet'}`"
        )
    expected, actual = catalog_rows(theirs), catalog_rows(ours)
    # without settings, Spark's commits name the Spark user and application (DuckDB: NULL)
    app = spark.sparkContext.applicationId
    for index, (row, theirs_row) in enumerate(zip(actual["changes"], expected["changes"])):
        if theirs_row[2] is None and row[0] > 0:
            assert row[2] == spark.sparkContext.sparkUser() and app in row[4], row
            actual["changes"][index] = (*row[:2], None, row[3], None)
    for table in expected:
        assert actual[table] == expected[table], table
    assert_same_rows(
        ours.reference("SELECT * FROM lake.main.t"), theirs.reference("SELECT * FROM lake.main.t")
    )
    assert_bounds_hold(ours)


def test_nan_leaves_no_bound_that_excludes_a_number(spark, make_lake, catalog):
    """Parquet's Java writer orders NaN above every number, so a file holding NaN has no
    known maximum: its bounds are left out (DuckDB's are NaN-free ones), ``contains_nan``
    is true, and DuckDB's pruning still finds every row."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k INTEGER, x DOUBLE, y FLOAT)")
    name = catalog(lake)
    spark.sql(
        f"INSERT INTO {name}.main.t SELECT /*+ COALESCE(1) */ id, "
        "IF(id = 3, double('NaN'), id * 1.5), IF(id = 4, float('NaN'), NULL) FROM range(10)"
    )
    stats = lake.reference(
        f"SELECT column_id, min_value, max_value, contains_nan, null_count "
        f"FROM {META}.ducklake_file_column_stats ORDER BY column_id"
    ).to_pylist()
    assert [(s["min_value"], s["max_value"], s["contains_nan"]) for s in stats] == [
        ("0", "9", None),
        (None, None, True),
        (None, None, True),
    ]
    assert stats[2]["null_count"] == 9
    for where in ("x > 12", "x = 0", "isnan(x)", "y > 0", "isnan(y)"):
        assert_same_answers(lake, f"SELECT * FROM lake.main.t WHERE {where}")
        got = _arrow(spark.sql(f"SELECT * FROM {name}.main.t WHERE {where}"))
        assert_same_rows(got, lake.reference(f"SELECT * FROM lake.main.t WHERE {where}"))
    assert_bounds_hold(lake)


def test_writes_refused_by_name_leave_the_lake_as_it_was(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.u (k UINTEGER)")
    lake.sql("CREATE TABLE lake.main.p (k INTEGER, s VARCHAR)")
    lake.sql("ALTER TABLE lake.main.p SET PARTITIONED BY (bucket(4, k))")
    lake.sql("CREATE TABLE lake.main.t (k INTEGER)")
    lake.sql("INSERT INTO lake.main.t VALUES (1), (2)")
    name = catalog(lake)
    before = (lake.snapshot_id(), _data_files(lake))
    text = _error_text(spark, f"INSERT INTO {name}.main.u VALUES (1)")
    assert "UnsupportedTypeError" in text and "'k'" in text and "uint32" in text
    text = _error_text(spark, f"INSERT INTO {name}.main.p VALUES (1, 'a')")
    assert "UnsupportedFeatureError" in text and "bucket(4) of column" in text
    text = _error_text(spark, f"CREATE TABLE {name}.main.t AS SELECT 1 AS k")
    assert "already exists" in text
    text = _error_text(spark, f"CREATE TABLE {name}.nope.x AS SELECT 1 AS k")
    assert "nope" in text
    text = _error_text(spark, f"CREATE TABLE {name}.main.x AS SELECT INTERVAL 1 DAY AS k")
    assert "UnsupportedTypeError" in text and "'k'" in text
    pinned = catalog(lake, snapshot=str(before[0]))
    text = _error_text(spark, f"INSERT INTO {pinned}.main.t VALUES (3)")
    assert "CatalogReadOnlyError" in text and "pinned" in text
    assert (lake.snapshot_id(), _data_files(lake)) == before
    assert_same_rows(
        _arrow(spark.table(f"{name}.main.t")), lake.reference("SELECT * FROM lake.main.t")
    )


def _rows_by_partition(lake) -> list[tuple]:
    """Each partition's (values, rows): the sum over its files, however many there are."""
    files = lake.reference(
        f"SELECT f.data_file_id, f.record_count, string_agg(coalesce(v.partition_value, "
        f"'NULL'), '|' ORDER BY v.partition_key_index) AS key FROM {META}.ducklake_data_file f "
        f"JOIN {META}.ducklake_file_partition_value v USING (data_file_id) "
        "WHERE f.end_snapshot IS NULL GROUP BY ALL"
    ).to_pylist()
    totals: dict[str, int] = {}
    for file in files:
        totals[file["key"]] = totals.get(file["key"], 0) + file["record_count"]
    return sorted(totals.items())


@pytest.mark.parametrize("spec", CELLS[:2], ids=lambda s: s.id)
def test_partitioned_writes_equal_duckdbs(spark, make_lake, catalog, spec, tmp_path):
    """A partitioned table (identity and calendar keys, NULL keys, text that needs
    escaping): each file holds one partition, the partitions and their rows are DuckDB's
    for the same rows, and DuckDB prunes by them and reads the same rows."""
    rows = partitioned_rows()
    theirs = make_lake(spec, inline_limit=0, name="theirs")
    ours = make_lake(spec, inline_limit=0, name="ours")
    for lake in (theirs, ours):
        for statement in PARTITIONED:
            lake.sql(statement)
    theirs.attach().register("rows", rows)
    theirs.sql("INSERT INTO lake.main.t SELECT * FROM rows")
    theirs.sql("INSERT INTO lake.main.t SELECT * FROM rows WHERE a < 3")
    theirs.detach()
    pq.write_table(rows, tmp_path / "rows.parquet")
    name = catalog(ours)
    source = f"parquet.`{tmp_path / 'rows.parquet'}`"
    spark.sql(f"INSERT INTO {name}.main.t SELECT * FROM {source}")
    spark.sql(f"INSERT INTO {name}.main.t SELECT * FROM {source} WHERE a < 3")
    assert _rows_by_partition(ours) == _rows_by_partition(theirs)
    for where in (
        "date_part('year', ts) = 2024",
        "s = 'x'",
        "b",
        "date_part('month', d) = 12",
        "ts IS NULL",
        "date_part('hour', ts) = 10",
    ):
        sql = f"SELECT * FROM lake.main.t WHERE {where}"
        assert_same_rows(ours.reference(sql), theirs.reference(sql))
        assert_same_answers(ours, sql)
    assert_bounds_hold(ours)
    # and DuckDB keeps writing into the same partitions after Spark
    ours.sql("INSERT INTO lake.main.t SELECT * FROM lake.main.t WHERE a = 0")
    ours.detach()
    assert_same_answers(ours, "SELECT * FROM lake.main.t")


def test_dynamic_partition_overwrite_replaces_the_partitions_written(spark, make_lake, catalog):
    """``overwritePartitions()`` and ``INSERT OVERWRITE`` in Spark's dynamic mode replace
    the partitions the new rows fall in and keep the others, as one snapshot; a table with
    inlined rows (whose partitions only a read would tell) is refused by name, unchanged."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.q (k INTEGER, s VARCHAR, d DATE)")
    lake.sql("ALTER TABLE lake.main.q SET PARTITIONED BY (s, year(d))")
    lake.sql(
        "INSERT INTO lake.main.q SELECT i, ['a', 'b', 'c'][i % 3 + 1], "
        "DATE '2023-06-01' + CAST(i * 40 AS INTEGER) FROM range(30) r(i)"
    )
    name = catalog(lake)
    before = lake.snapshot_id()
    new = "SELECT CAST(id AS INT) AS k, s, DATE '2024-02-02' AS d FROM range(100, 104) CROSS JOIN "
    spark.sql(new + "(SELECT explode(array('b', 'z')) AS s)").writeTo(
        f"{name}.main.q"
    ).overwritePartitions()
    kept = "SELECT * FROM lake.main.q AT (VERSION => {}) WHERE NOT (s = 'b' AND year(d) = 2024)"
    expected = lake.reference(
        kept.format(before)
        + " UNION ALL SELECT k::INT, s, DATE '2024-02-02' FROM range(100, 104) r(k), "
        "(SELECT unnest(['b', 'z']) AS s)"
    )
    assert lake.snapshot_id() == before + 1
    assert_same_rows(lake.reference("SELECT * FROM lake.main.q"), expected)
    assert_same_answers(lake, "SELECT * FROM lake.main.q")
    with spark_settings(spark, {"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        spark.sql(f"INSERT OVERWRITE {name}.main.q SELECT 7, 'a', DATE '2023-06-01'")
    expected = lake.reference(
        f"SELECT * FROM lake.main.q AT (VERSION => {before + 1}) WHERE NOT (s = 'a' AND year(d) = 2023) "
        "UNION ALL SELECT 7, 'a', DATE '2023-06-01'"
    )
    assert_same_rows(lake.reference("SELECT * FROM lake.main.q"), expected)

    lake.sql("CALL lake.set_option('data_inlining_row_limit', 10)")
    lake.sql("INSERT INTO lake.main.q VALUES (1, 'a', DATE '2023-06-01')")  # inlined
    lake.detach()
    inlined = lake.snapshot_id()
    with spark_settings(spark, {"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        text = _error_text(
            spark, f"INSERT OVERWRITE {name}.main.q SELECT 8, 'a', DATE '2023-06-01'"
        )
    assert "UnsupportedFeatureError" in text and "inlined" in text
    assert lake.snapshot_id() == inlined


def test_create_table_partitioned_by(spark, make_lake, catalog):
    """``CREATE TABLE ... PARTITIONED BY (s, years(ts)) AS SELECT``: the table, its spec and
    its rows in one snapshot, as DuckDB's ``SET PARTITIONED BY (s, year(ts))`` records it."""
    lake = make_lake(inline_limit=0)
    name = catalog(lake)
    spark.sql(
        f"CREATE TABLE {name}.main.p PARTITIONED BY (s, years(ts)) AS SELECT id, "
        "string(id % 3) AS s, timestamp_seconds(id * 86400 * 100) AS ts FROM range(20)"
    )
    spec = lake.reference(
        f"SELECT column_id, transform FROM {META}.ducklake_partition_column "
        "ORDER BY partition_key_index"
    ).to_pylist()
    assert spec == [
        {"column_id": 2, "transform": "identity"},
        {"column_id": 3, "transform": "year"},
    ]
    assert lake.snapshot_id() == 1
    expected = _arrow(
        spark.sql(
            "SELECT id, string(id % 3) AS s, timestamp_seconds(id * 86400 * 100) AS ts FROM range(20)"
        )
    )
    assert_reads_back(lake, "p", expected)
    assert_same_answers(lake, "SELECT * FROM lake.main.p WHERE date_part('year', ts) = 1970")


@pytest.mark.parametrize(
    "spec",
    [LakeSpec("duckdb", "minio"), LakeSpec("duckdb", "gcs"), LakeSpec("sqlite", "azure")],
    ids=lambda s: s.id,
)
def test_write_table_to_object_stores(request, make_lake, spark_package_jar, spec):
    """``write_table`` (no catalog configured beforehand) on MinIO (S3A), GCS and Azure
    (ABFS): executors write through Hadoop's connector with the lake's own storage options;
    DuckDB reads every snapshot back. Then UPDATE, DELETE and MERGE INTO through a catalog."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    fixture = {"minio": "s3a", "gcs": "gcs_spark", "azure": "abfs_spark"}[spec.storage]
    spark = request.getfixturevalue(fixture)
    if spec.storage == "azure":
        from test_spark_stores import _skip_without_abfs_blob

        _skip_without_abfs_blob(spark)
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR, price DOUBLE, tags VARCHAR[])")
    args = lake.reader_args()
    where = {
        "storage_options": args["storage_options"],
        "data_path": args.get("data_path"),
    }
    first = _rows(spark, 0, 300, "a")
    write_table(first, args["metadata"], "main.t", **where)
    appended = lake.snapshot_id()
    second = _rows(spark, 300, 20, "b")
    write_table(second, args["metadata"], "main.t", mode="overwrite", commit_message="new", **where)
    write_table(second, args["metadata"], "main.c", mode="create", **where)
    assert_reads_back(lake, "t", _arrow(first), snapshot=appended)
    assert_reads_back(lake, "t", _arrow(second))
    assert_reads_back(lake, "c", _arrow(second))
    message = duckdb_reads(
        lake, f"SELECT commit_message FROM lake.snapshots() WHERE snapshot_id = {appended + 1}"
    )
    assert message.to_pylist() == [{"commit_message": "new"}]
    # Row changes through a catalog of the lake in the same session: executors write the
    # updated and inserted rows through the connector, the planner the delete files.
    table = f"{register_catalog(spark, lake)}.main.t"
    spark.sql(f"UPDATE {table} SET price = price + 1 WHERE id % 3 = 0").collect()
    spark.sql(f"DELETE FROM {table} WHERE id % 5 = 1").collect()
    spark.sql(
        f"MERGE INTO {table} AS t USING (SELECT id, 'm' AS name FROM range(315, 325)) AS s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED THEN INSERT (id, name, price, tags) VALUES (s.id, s.name, 0.5, NULL)"
    ).collect()
    changed = duckdb_reads(
        lake,
        "SELECT id, CASE WHEN id >= 315 THEN 'm' ELSE name END AS name, "
        "CASE WHEN id % 3 = 0 THEN price + 1 ELSE price END AS price, tags "
        f"FROM lake.main.t AT (VERSION => {appended + 1}) WHERE id % 5 <> 1 "
        "UNION ALL SELECT i, 'm', 0.5, NULL FROM range(315, 325) r(i) "
        "WHERE i >= 320 OR i % 5 = 1",  # (not matched: new, or deleted just before)
    )
    assert_reads_back(lake, "t", changed)


def test_write_table_merge_schema_adds_the_frame_s_columns_as_duckdb_does(spark, make_lake):
    """``write_table(..., schema_mode="merge")``: the frame's new column and struct field are
    added as DuckDB's ALTERs of one transaction add them on a twin lake (the same catalog
    rows), then its rows appended as DuckDB's INSERT of them; a later frame lacking columns
    writes their defaults, else NULL. Every snapshot reads the same on both."""
    from support.ddl_twins import assert_evolved_alike
    from support.twins import twin_lakes

    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, st STRUCT(a INTEGER), on_ BOOLEAN DEFAULT true)",
        "INSERT INTO lake.main.t SELECT i, {'a': i}, i % 2 = 0 FROM range(3) r(i)",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    metadata = ours.reader_args()["metadata"]
    wider = spark.sql(
        "SELECT CAST(10 AS BIGINT) AS id, named_struct('a', 1, 'b', 'x') AS st, false AS on_, "
        "5 AS Extra UNION ALL SELECT 11, NULL, NULL, NULL"
    )
    write_table(wider, metadata, "main.t", schema_mode="merge")
    narrower = spark.sql("SELECT 12 AS extra, CAST(12 AS BIGINT) AS id")
    write_table(narrower, metadata, "main.t", schema_mode="merge")
    theirs.sql(
        "BEGIN; ALTER TABLE lake.main.t ADD COLUMN st.b VARCHAR; "
        "ALTER TABLE lake.main.t ADD COLUMN Extra INTEGER; COMMIT"
    )
    theirs.sql(
        "INSERT INTO lake.main.t VALUES (10, {'a': 1, 'b': 'x'}, false, 5), (11, NULL, NULL, NULL)"
    )
    theirs.sql("INSERT INTO lake.main.t (extra, id) VALUES (12, 12)")
    assert_evolved_alike(ours, theirs, "lake.main.t")
    with pytest.raises(InvalidOptionError, match="schema_mode"):
        write_table(narrower, metadata, "main.t", schema_mode="overwrite")


@pytest.mark.parametrize("spec", CELLS[:2], ids=lambda s: s.id)
def test_spark_writes_to_a_1_1_catalog(spark, make_lake, catalog, spec):
    """A DuckLake 1.1 catalog (a 1.0 lake migrated as DuckDB 2.0 migrates it; DuckDB 1.5
    cannot read 1.1): Spark appends, overwrites and creates; our reader reads what DuckDB
    read before plus what Spark wrote, and the catalog stays 1.1."""
    from datafusion import SessionContext
    from support.lake_formats import migrated_copy

    from ducklake_datafusion import DuckLakeCatalog, register

    lake = make_lake(spec, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'inlined'), (2, 'inlined')")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'file' FROM range(10, 20) r(i)")
    before = lake.reference("SELECT * FROM lake.main.t")
    metadata, schema = migrated_copy(lake.metadata, lake.metadata_schema)
    args = {**lake.reader_args(), "metadata": metadata}
    if schema is not None:
        args["metadata_schema"] = schema

    def ours(sql: str) -> pa.Table:
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(**args))
        return ctx.sql(sql).to_arrow_table()

    class Migrated:  # the catalog fixture's view of the migrated copy
        def reader_args(self):
            return args

    name = catalog(Migrated())
    more = spark.sql("SELECT id, concat('spark', id) AS name FROM range(100, 110)")
    more.writeTo(f"{name}.main.t").append()
    more_rows = _arrow(more).cast(before.schema)
    assert_same_rows(ours("SELECT * FROM lake.main.t"), pa.concat_tables([before, more_rows]))
    spark.sql(f"INSERT OVERWRITE {name}.main.t SELECT id, 'only' FROM range(3)")
    spark.sql(f"CREATE TABLE {name}.main.u AS SELECT id, 'new' AS name FROM range(4)")
    only = _arrow(spark.sql("SELECT id, 'only' AS name FROM range(3)"))
    assert_same_rows(ours("SELECT * FROM lake.main.t"), only)
    assert_same_rows(_arrow(spark.table(f"{name}.main.t")), only)
    assert_same_rows(
        ours("SELECT * FROM lake.main.u"),
        _arrow(spark.sql("SELECT id, 'new' AS name FROM range(4)")),
    )
    with DuckLakeCatalog(**args) as reader, reader.backend.session() as session:
        assert session.rows("SELECT value FROM ducklake_metadata WHERE key = 'version'") == [
            ("1.1",)
        ]
