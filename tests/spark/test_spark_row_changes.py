"""Spark's row-level ``DELETE``, ``UPDATE`` and ``MERGE INTO``, against a twin lake.

Spark rewrites each statement into a scan that names each row by ``_ducklake_rowid``, its
data file and position, and a delta write (``SupportsDelta``); the driver commits once. Each
case runs the statement through Spark on one lake and through DuckDB on its twin: the rows
with their ``rowid`` and the change feed at every snapshot, and the catalog rows, agree
(``support.twins``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.twins import TWIN_SETUP, assert_merged_twins_agree, assert_twins_agree, twin_lakes
from support.writes import META, duckdb_reads

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark


def _on_both(spark, name, theirs, statements) -> None:
    for statement in statements:
        spark.sql(statement.format(table=f"{name}.main.t")).collect()
        theirs.sql(statement.format(table="lake.main.t"))
        theirs.detach()


def test_metadata_columns_name_each_row_as_duckdb(spark, make_lake, catalog):
    lake = make_lake(inline_limit=0)
    for statement in TWIN_SETUP:
        lake.sql(statement)
    name = catalog(lake)
    ours = spark.sql(
        f"SELECT _ducklake_rowid, _ducklake_file_id, _ducklake_position, id FROM {name}.main.t"
    ).toPandas()
    theirs = duckdb_reads(
        lake, "SELECT rowid AS _ducklake_rowid, id FROM lake.main.t ORDER BY rowid"
    ).to_pandas()
    ours = ours.sort_values("_ducklake_rowid").reset_index(drop=True)
    assert ours[["_ducklake_rowid", "id"]].equals(theirs)
    assert ours["_ducklake_position"].notna().all()


@pytest.mark.parametrize("spec", [LakeSpec("duckdb", "local")], ids=lambda s: s.id)
def test_delete_of_some_rows_matches_duckdb(spark, make_lake, catalog, spec):
    ours, theirs = twin_lakes(make_lake, spec)
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        [
            "DELETE FROM {table} WHERE id % 5 = 1",
            "DELETE FROM {table} WHERE id IN (SELECT id * 3 FROM {table} WHERE grp = 'g2')",
        ],
    )
    assert_twins_agree(ours, theirs)


def test_update_matches_duckdb(spark, make_lake, catalog):
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        ["UPDATE {table} SET v = v * 10, grp = 'u' WHERE id % 9 = 2"],
    )
    assert_twins_agree(ours, theirs)


@pytest.mark.parametrize(
    "spec", [LakeSpec("duckdb", "local"), LakeSpec("mysql", "local")], ids=lambda s: s.id
)
def test_merge_of_an_update_and_an_insert_matches_duckdb(spark, make_lake, catalog, spec):
    ours, theirs = twin_lakes(make_lake, spec)
    before = theirs.snapshot_id()
    name = catalog(ours)
    spark.sql(
        f"MERGE INTO {name}.main.t AS t USING (SELECT id * 3 AS id FROM range(600, 720)) AS s "
        "ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + 0.5, grp = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, grp, v, tags) VALUES (s.id, 'new', 0.25, array('n'))"
    ).collect()
    theirs.sql(
        "MERGE INTO lake.main.t AS t USING (SELECT i * 3 AS id FROM range(600, 720) r(i)) AS s "
        "ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + 0.5, grp = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, grp, v, tags) VALUES (s.id, 'new', 0.25, ['n'])"
    )
    theirs.detach()
    assert_merged_twins_agree(ours, theirs, before)


def test_merge_of_every_action_matches_duckdb_statement_by_statement(spark, make_lake, catalog):
    """DuckDB merges with one UPDATE or DELETE action: its twin runs the same change as
    three statements, and the rows (updated ones with their row ids) agree."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    name = catalog(ours)
    spark.sql(
        f"MERGE INTO {name}.main.t AS t USING (SELECT id * 3 AS id, id % 2 AS odd "
        "FROM range(600, 720)) AS s ON t.id = s.id "
        "WHEN MATCHED AND s.odd = 1 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = t.v + 0.5, grp = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, grp, v, tags) VALUES (s.id, 'new', 0.25, array('n')) "
        "WHEN NOT MATCHED BY SOURCE AND t.grp = 'g9' THEN UPDATE SET v = -1"
    ).collect()
    source = "(SELECT i * 3 AS id, i % 2 AS odd FROM range(600, 720) r(i))"
    before = theirs.snapshot_id()
    for statement in (
        f"DELETE FROM lake.main.t WHERE id IN (SELECT id FROM {source} WHERE odd = 1)",
        f"UPDATE lake.main.t SET v = v + 0.5, grp = 'm' WHERE id IN (SELECT id FROM {source})",
        f"UPDATE lake.main.t SET v = -1 WHERE grp = 'g9' AND id NOT IN (SELECT id FROM {source})",
        (
            f"INSERT INTO lake.main.t SELECT id, 'new', 0.25, ['n'] FROM {source} "
            f"WHERE id NOT IN (SELECT id FROM lake.main.t AT (VERSION => {before}))"
        ),
    ):
        theirs.sql(statement)
    theirs.detach()
    ours.detach()
    kept = "SELECT rowid, * FROM lake.main.t WHERE grp <> 'new' ORDER BY rowid"
    assert_same_rows(duckdb_reads(ours, kept), duckdb_reads(theirs, kept), ordered=True)
    added = "SELECT * FROM lake.main.t WHERE grp = 'new'"
    assert_same_rows(duckdb_reads(ours, added), duckdb_reads(theirs, added))


PARTITIONED = [TWIN_SETUP[0], "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)", *TWIN_SETUP[1:]]


def test_an_update_moving_rows_to_other_partitions_matches_duckdb(spark, make_lake, catalog):
    """Rows whose new key puts them in another partition land in that partition's files,
    with DuckDB's partition values."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), PARTITIONED)
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        [
            (
                "UPDATE {table} SET grp = CASE WHEN id % 2 = 0 THEN 'g1' ELSE 'g8' END "
                "WHERE id % 10 = 3 OR id % 10 = 4"
            ),
            "DELETE FROM {table} WHERE grp = 'g8' AND id > 500",
        ],
    )
    assert_twins_agree(ours, theirs, file_ids=False)


@pytest.mark.parametrize(
    "spec", [LakeSpec("postgres", "local"), LakeSpec("sqlite", "minio")], ids=lambda s: s.id
)
def test_rows_inlined_in_the_catalog_are_changed_as_duckdb_changes_them(
    spark, make_lake, catalog, spec
):
    """Rows the catalog holds (read by the planner, named by row id alone) are ended there.
    (DuckDB inlines its small deletes and updated rows into the catalog where this package
    writes files: both valid DuckLake, so the rows and the change feed are compared.)"""
    setup = [
        *TWIN_SETUP,
        "INSERT INTO lake.main.t VALUES (5000, 'g7', 1.5, ['i']), (5001, 'g7', 2.5, NULL)",
    ]
    ours, theirs = twin_lakes(make_lake, spec, setup, inline_limit=5)
    name = catalog(ours)
    _on_both(
        spark,
        name,
        theirs,
        [
            "DELETE FROM {table} WHERE id = 5000 OR id % 11 = 3",
            "UPDATE {table} SET v = v + 1 WHERE id = 5001 OR id % 13 = 4",
        ],
    )
    assert_twins_agree(ours, theirs, catalog=False)


def test_a_foreach_batch_upsert_merges_each_batch_once_across_a_restart(
    spark, make_lake, catalog, tmp_path
):
    """The canonical CDC pipeline: each micro-batch MERGEd into the table in ``foreachBatch``
    with the batch id as the idempotence key (``spark.ducklake.txnAppId``/``txnVersion``).
    The query dies after batch 1's commit and before its checkpoint, and runs again: batch 1
    is replayed and skipped, batch 2 merged. The table equals DuckDB applying each batch
    once on the twin."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    name = catalog(ours)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    batches = []

    def drop(batch: int, ids) -> None:
        rows = pa.table({"id": pa.array(ids, pa.int64()), "v": [float(batch)] * len(ids)})
        path = source / f"part-{batch}.parquet"
        pq.write_table(rows, path)
        os.utime(path, (1_700_000_000 + batch, 1_700_000_000 + batch))  # the stream's order
        batches.append(rows)

    def upsert(frame, batch_id) -> None:
        frame.createOrReplaceTempView("changes")
        frame.sparkSession.conf.set("spark.ducklake.txnAppId", "cdc-t")
        frame.sparkSession.conf.set("spark.ducklake.txnVersion", str(batch_id))
        frame.sparkSession.sql(
            f"MERGE INTO {name}.main.t AS t USING changes AS c ON t.id = c.id "
            "WHEN MATCHED THEN UPDATE SET v = c.v "
            "WHEN NOT MATCHED THEN INSERT (id, grp, v, tags) VALUES (c.id, 'cdc', c.v, NULL)"
        )

    def run() -> None:
        query = (
            spark.readStream.schema("id BIGINT, v DOUBLE")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source))
            .writeStream.option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .foreachBatch(upsert)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None

    drop(0, [1, 2, 3, 5000, 5001])
    drop(1, [2, 3, 4, 5001, 5002])
    run()
    for entry in ("1", ".1.crc"):  # died before batch 1's checkpoint
        (checkpoint / "commits" / entry).unlink(missing_ok=True)
    drop(2, [4, 5, 5002, 5003])
    run()

    for batch in batches:
        values = ", ".join(
            f"({i}, {v})" for i, v in zip(batch["id"].to_pylist(), batch["v"].to_pylist())
        )
        theirs.sql(
            f"MERGE INTO lake.main.t AS t USING (SELECT * FROM (VALUES {values}) c(id, v)) AS c "
            "ON t.id = c.id WHEN MATCHED THEN UPDATE SET v = c.v "
            "WHEN NOT MATCHED THEN INSERT (id, grp, v, tags) VALUES (c.id, 'cdc', c.v, NULL)"
        )
    theirs.detach()
    ours.detach()
    assert ours.snapshot_id() == theirs.snapshot_id()
    rows = "SELECT * FROM lake.main.t"
    assert_same_rows(duckdb_reads(ours, rows), duckdb_reads(theirs, rows))
    batches_recorded = duckdb_reads(
        ours,
        "SELECT value FROM ducklake_options('lake') WHERE option_name LIKE "
        "'ducklake_datafusion_stream:cdc-t'",
    )
    assert batches_recorded.column(0)[0].as_py().startswith("2:")


def _meanwhile(metadata: str, marker, statement: str):
    """A UDF, the identity, that has DuckDB run ``statement`` on the lake once (the first
    row it sees): a commit between Spark's read of the table and its own commit."""
    from pyspark.sql.functions import udf

    def act(value):
        try:  # (the first row of any task: tasks run at once)
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return value
        import duckdb
        import duckdb_extensions

        con = duckdb.connect()
        duckdb_extensions.import_extension("ducklake", con=con)
        con.execute(f"ATTACH 'ducklake:{metadata}' AS other")
        con.execute(statement.format(table="other.main.t"))
        con.close()
        return value

    return udf(act, "double")


@pytest.mark.parametrize("concurrent", ["delete", "append"])
def test_a_change_meeting_a_concurrent_commit(spark, make_lake, catalog, tmp_path, concurrent):
    """DuckDB deletes from the files Spark's UPDATE changes while it runs: the UPDATE fails
    with CommitConflictError, changes nothing and leaves no file behind. DuckDB appends:
    both land."""
    lake = make_lake(inline_limit=0)
    for statement in TWIN_SETUP:
        lake.sql(statement)
    lake.detach()
    name = catalog(lake)
    duckdb_side = {
        "delete": "DELETE FROM {table} WHERE id % 10 = 3",
        "append": "INSERT INTO {table} VALUES (9000, 'dd', 1.0, NULL)",
    }[concurrent]
    spark.udf.register("meanwhile", _meanwhile(lake.metadata, str(tmp_path / "m"), duckdb_side))
    statement = f"UPDATE {name}.main.t SET v = meanwhile(v) + 1 WHERE id % 10 = 2"
    updated = "SELECT * FROM lake.main.t WHERE id % 10 = 2 AND id < 1000 AND v = id / 2 + 1"
    if concurrent == "delete":
        with pytest.raises(Exception) as caught:
            spark.sql(statement).collect()
        assert "CommitConflictError" in str(caught.value)
        lake.detach()
        assert duckdb_reads(lake, updated).num_rows == 0
        assert duckdb_reads(lake, "SELECT * FROM lake.main.t WHERE id % 10 = 3").num_rows == 0
    else:
        spark.sql(statement).collect()
        lake.detach()
        assert duckdb_reads(lake, "SELECT * FROM lake.main.t WHERE id = 9000").num_rows == 1
        assert (
            duckdb_reads(lake, updated).num_rows
            == duckdb_reads(
                lake, "SELECT * FROM lake.main.t WHERE id % 10 = 2 AND id < 1000"
            ).num_rows
        )
    listed = duckdb_reads(
        lake,
        f"SELECT path FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_delete_file UNION ALL "
        f"SELECT path FROM {META}.ducklake_files_scheduled_for_deletion",
    )  # (DuckDB's cumulative delete file replaces the old one's row: scheduled for deletion)
    names = {os.path.basename(p) for p in listed.column(0).to_pylist()}
    on_disk = {p.name for p in Path(lake.data_path).rglob("*.parquet")}
    assert on_disk == names, "no file left behind"


def test_dataframe_merge_into_matches_duckdb(spark, make_lake, catalog):
    """Spark 4's ``DataFrame.mergeInto``: the same row-level operation as SQL's MERGE."""
    from pyspark.sql import DataFrame
    from pyspark.sql.functions import col, lit

    if not hasattr(DataFrame, "mergeInto"):
        pytest.skip("DataFrame.mergeInto is Spark 4's")
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    before = theirs.snapshot_id()
    name = catalog(ours)
    source = spark.range(300, 360).selectExpr("id * 7 AS id")
    (
        source.alias("s")
        .mergeInto(f"{name}.main.t", col("s.id") == col(f"{name}.main.t.id"))
        .whenMatched()
        .update({"v": lit(-0.5)})
        .whenNotMatched()
        .insert({"id": col("s.id"), "grp": lit("df"), "v": lit(0.5)})
        .merge()
    )
    theirs.sql(
        "MERGE INTO lake.main.t USING (SELECT i * 7 AS id FROM range(300, 360) r(i)) AS s "
        "ON s.id = t.id WHEN MATCHED THEN UPDATE SET v = -0.5 "
        "WHEN NOT MATCHED THEN INSERT (id, grp, v) VALUES (s.id, 'df', 0.5)"
    )
    theirs.detach()
    assert_merged_twins_agree(ours, theirs, before)


def test_a_1_1_catalog_changes_rows_as_duckdb_changes_its_1_0_twin(spark, make_lake, catalog):
    """A DuckLake 1.1 catalog (migrated as DuckDB 2.0 migrates it; DuckDB 1.5 cannot read
    1.1): Spark's DELETE, UPDATE and MERGE on it, DuckDB's on a 1.0 twin; the rows with their
    row ids (Spark's ``_ducklake_rowid``; the MERGE's new rows without) and our DataFusion
    reader's rows agree, and the catalog stays 1.1."""
    from support.lake_formats import migrated_copy
    from support.readcheck import ours as datafusion_reads

    from ducklake_datafusion import DuckLakeCatalog

    base, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"))
    metadata, schema = migrated_copy(base.metadata, base.metadata_schema)
    args = {**base.reader_args(), "metadata": metadata, "metadata_schema": schema}

    class Migrated:  # the fixtures' view of the migrated copy
        def reader_args(self, format=None):
            return args

    name = catalog(Migrated())
    source = ", ".join(f"({i * 3})" for i in range(600, 720))  # (SQL both engines parse)
    _on_both(
        spark,
        name,
        theirs,
        [
            "DELETE FROM {table} WHERE id % 5 = 1",
            "UPDATE {table} SET v = v * 10, grp = 'u' WHERE id % 9 = 2",
            (
                f"MERGE INTO {{table}} AS t USING (SELECT * FROM (VALUES {source}) AS v(id)) AS s "
                "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + 0.5 WHEN NOT MATCHED "
                "THEN INSERT (id, grp, v, tags) VALUES (s.id, 'new', 0.25, NULL)"
            ),
        ],
    )
    kept = "SELECT {rowid}, id, grp, v, tags FROM {table} WHERE grp <> 'new'"
    ours_kept = spark.sql(kept.format(rowid="_ducklake_rowid AS rowid", table=f"{name}.main.t"))
    assert_same_rows(
        pa.Table.from_pandas(ours_kept.toPandas(), preserve_index=False),
        duckdb_reads(theirs, kept.format(rowid="rowid", table="lake.main.t")),
    )
    everything = "SELECT id, grp, v, tags FROM lake.main.t"
    assert_same_rows(datafusion_reads(Migrated(), everything), duckdb_reads(theirs, everything))
    with DuckLakeCatalog(**args) as reader, reader.backend.session() as session:
        version = session.rows("SELECT value FROM ducklake_metadata WHERE key = 'version'")
    assert version == [("1.1",)]


def test_a_delete_changes_a_table_of_types_spark_would_write_differently(spark, make_lake, catalog):
    """A DELETE writes no data file, so a table with columns Spark holds as other types
    (unsigned integers, UUIDs) loses its rows as DuckDB's twin does; an UPDATE, which
    would write them, is refused by name."""
    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, u UINTEGER, g UUID)",
        (
            "INSERT INTO lake.main.t SELECT i, i * 7, ('00000000-0000-0000-0000-' || "
            "lpad(i::VARCHAR, 12, '0'))::UUID FROM range(300) r(i)"
        ),
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    name = catalog(ours)
    _on_both(spark, name, theirs, ["DELETE FROM {table} WHERE id % 4 = 1 AND u > 100"])
    assert_twins_agree(ours, theirs)
    with pytest.raises(Exception, match="UnsupportedTypeError"):
        spark.sql(f"UPDATE {name}.main.t SET id = id + 1 WHERE id = 2").collect()
