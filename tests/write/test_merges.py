"""MERGE against a twin lake: DuckDB runs the same statement on an identical lake.

As ``test_deletes``: rows with their ``rowid`` and the change feed at every snapshot, the
catalog rows (data and delete files, ``row_id_start``, statistics, changes), read by DuckDB,
our Rust scan and our exact path; then DuckDB's own writes after ours on both. The rows a
MERGE inserts get new row ids in the order its join yields them, which for DuckDB follows
its hash table: those rows are compared without their ids, and their ids as a set.

DuckDB's MERGE on DuckLake takes one UPDATE or DELETE clause; ours takes any number, so a
MERGE of several is compared with the same change as one DuckDB transaction of
statements (one snapshot).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec, assert_same_rows
from support.twins import (
    TWIN_SETUP,
    assert_merged_twins_agree,
    assert_twins_agree,
    duckdb_writes_after,
    expired_twins_agree,
    rows_and_feed,
    split_new_ids,
    twin_catalog,
    twin_lakes,
)
from support.writes import duckdb_reads, ours_reads

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import (
    CatalogReadOnlyError,
    CommitConflictError,
    InvalidOptionError,
    MergeError,
)

# the source, in the lake: ids 1, 4, 7, ... match some rows of t, rows DuckDB deleted
# (id % 7 = 0) and ids t never had
MERGE_SETUP = [
    *TWIN_SETUP,
    (
        "CREATE TABLE lake.main.src AS SELECT i AS id, 'n' || (i % 3) AS grp, i * 1.5 AS v, "
        "['s' || i] AS tags FROM range(1, 2400, 3) r(i)"
    ),
]
SOURCE = "lake.main.src AS s ON t.id = s.id"

CASES = {
    "update_and_insert": f"MERGE INTO lake.main.t USING {SOURCE} WHEN MATCHED THEN UPDATE SET "
    "v = s.v, grp = s.grp WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.grp, s.v, s.tags)",
    "conditional_delete": f"MERGE INTO lake.main.t USING {SOURCE} "
    "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE",
    "update_star_insert_star": f"MERGE INTO lake.main.t USING {SOURCE} WHEN MATCHED AND "
    "t.grp <> 'g9' THEN UPDATE SET * WHEN NOT MATCHED AND s.id > 2050 THEN INSERT *",
    "by_source_delete": "MERGE INTO lake.main.t USING (SELECT * FROM lake.main.src WHERE id < 500) "
    "AS s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.grp IN ('g9', 'g1') THEN DELETE",
    "by_source_update": "MERGE INTO lake.main.t AS x USING lake.main.src AS s ON x.id = s.id "
    "WHEN NOT MATCHED BY SOURCE AND x.id > 1000 THEN UPDATE SET v = -1, tags = ['gone']",
    "using_columns_insert_by_name": "MERGE INTO lake.main.t USING lake.main.src USING (id) "
    "WHEN MATCHED THEN UPDATE SET tags = [src.grp] WHEN NOT MATCHED THEN INSERT BY NAME",
    "nothing": f"MERGE INTO lake.main.t USING {SOURCE} WHEN MATCHED AND s.id < 0 THEN DELETE",
}


# every case on the DuckDB-file catalog, one on each other catalog database and store
TWINS = [(LakeSpec("duckdb", "local"), case) for case in CASES] + [
    (LakeSpec("postgres", "s3"), "update_and_insert"),
    (LakeSpec("sqlite", "minio"), "by_source_delete"),
    (LakeSpec("mysql", "local"), "update_star_insert_star"),
    (LakeSpec("duckdb", "gcs"), "conditional_delete"),
    (LakeSpec("sqlite", "azure"), "by_source_update"),
]


@pytest.mark.parametrize(("spec", "case"), TWINS, ids=[f"{spec.id}-{case}" for spec, case in TWINS])
def test_merge_matches_duckdb_on_a_twin_lake(make_lake, spec, case):
    ours, theirs = twin_lakes(make_lake, spec, MERGE_SETUP)
    before = theirs.snapshot_id()
    theirs.sql(CASES[case])
    theirs.detach()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
    result = ducklake_datafusion.sql(ctx, CASES[case]).to_pylist()[0]
    changes = []  # a MERGE that changes nothing commits no snapshot, in DuckDB as here
    if theirs.snapshot_id() > before:
        changes = duckdb_reads(
            theirs,
            "SELECT change_type, count(*) AS n FROM ducklake_table_changes('lake', 'main', "
            f"'t', {before + 1}, {before + 1}) GROUP BY ALL",
        ).to_pylist()
    counts = {r["change_type"]: r["n"] for r in changes}
    assert result["updated"] == counts.get("update_postimage", 0)
    assert result["deleted"] == counts.get("delete", 0)
    assert result["inserted"] == counts.get("insert", 0)
    assert result["count"] == sum(v for k, v in counts.items() if k != "update_preimage")
    assert_merged_twins_agree(ours, theirs, before)
    # (a MySQL cell's DuckDB writes a file catalog copied into MySQL: it cannot write after us)
    if spec.storage == "local" and spec.catalog != "mysql" and case != "nothing":
        for lake in (ours, theirs):
            duckdb_writes_after(lake)
        assert_twins_agree(ours, theirs, first=theirs.snapshot_id() + 1)
        expired_twins_agree(ours, theirs)


def _every_clause(builder, form: str):
    """The clauses of ``test_a_merge_of_every_clause_is_one_duckdb_transaction``, as SQL
    text or as pyarrow expressions over the aliases' structs."""
    if form == "sql":
        return (
            builder.when_matched_delete(where="s.id % 5 = 1")
            .when_matched_update({"v": "s.v * 2"})
            .when_not_matched_insert(
                {"id": "s.id", "grp": "'ins'", "v": "s.v"}, where="s.id % 2 = 1"
            )
            .when_not_matched_by_source_update(
                {"grp": "'orphan'"}, where="t.id BETWEEN 1000 AND 1020"
            )
        )

    def s(column):
        return pc.field("s", column)

    def remainder(value, by):
        return value - value / by * by  # (integer division: pyarrow has no % operator)

    target_id = pc.field("t", "id")
    return (
        builder.when_matched_delete(where=remainder(s("id"), 5) == 1)
        .when_matched_update({"v": s("v") + s("v")})
        .when_not_matched_insert(
            {"id": s("id"), "grp": pc.scalar("ins"), "v": s("v")},
            where=remainder(s("id"), 2) == 1,
        )
        .when_not_matched_by_source_update(
            {"grp": pc.scalar("orphan")}, where=(target_id >= 1000) & (target_id <= 1020)
        )
    )


@pytest.mark.parametrize("form", ["sql", "pyarrow"])
def test_a_merge_of_every_clause_is_one_duckdb_transaction(make_lake, form):
    """Several UPDATE and DELETE clauses (DuckDB's MERGE takes one): the same change as
    DuckDB's statements in one transaction, one snapshot, read back alike; the clauses
    given as SQL text or as pyarrow expressions."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), MERGE_SETUP)
    before = theirs.snapshot_id()
    theirs.sql(
        "BEGIN; "
        "INSERT INTO lake.main.t SELECT s.id, 'ins', s.v, NULL FROM lake.main.src s "
        "WHERE s.id NOT IN (SELECT id FROM lake.main.t) AND s.id % 2 = 1; "
        "DELETE FROM lake.main.t WHERE id IN (SELECT id FROM lake.main.src WHERE id % 5 = 1) "
        "AND grp <> 'ins'; "
        "UPDATE lake.main.t SET v = s.v * 2 FROM lake.main.src s WHERE t.id = s.id "
        "AND s.id % 5 <> 1 AND t.grp <> 'ins'; "
        "UPDATE lake.main.t SET grp = 'orphan' WHERE id NOT IN (SELECT id FROM lake.main.src) "
        "AND id BETWEEN 1000 AND 1020; "
        "COMMIT"
    )
    theirs.detach()
    table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
    src = DuckLakeCatalog(**ours.reader_args()).table("main", "src").to_arrow()
    builder = table.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    result = _every_clause(builder, form).execute()
    counted = duckdb_reads(
        theirs,
        "SELECT count(*) FILTER (change_type = 'delete') AS deleted, count(*) FILTER "
        "(change_type = 'insert') AS inserted FROM ducklake_table_changes('lake', 'main', 't', "
        f"{before + 1}, {before + 1})",
    ).to_pylist()[0]
    assert (result.deleted, result.inserted) == (counted["deleted"], counted["inserted"])
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last == before + 1
    old_ids = duckdb_reads(theirs, "SELECT rowid FROM lake.main.t", before).column(0)
    for mine, their in zip(rows_and_feed(ours, last), rows_and_feed(theirs, last)):
        kept, added, _ = split_new_ids(mine, old_ids)
        their_kept, their_added, _ = split_new_ids(their, old_ids)
        assert_same_rows(kept, their_kept, ordered=True)
        assert_same_rows(added, their_added)
    # (DuckDB's statements write other files than one MERGE: the catalog rows differ)
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)


def test_upsert_updates_changed_rows_and_inserts_the_rest(make_lake):
    """pyiceberg's upsert: rows of the same key whose values differ are updated (by
    name), equal ones left alone, new keys inserted; DuckDB's MERGE of the same."""
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), MERGE_SETUP)
    before = theirs.snapshot_id()
    data = pa.table(
        {
            "v": pa.array([0.5, 99.0, 7.0], pa.float64()),  # id 1 unchanged
            "id": pa.array([1, 2, 5000], pa.int64()),
            "grp": ["g1", "g2", "new"],
            "tags": [["x1"], ["changed"], None],
        }
    )
    theirs.attach().register("data", data)
    theirs.sql(
        "MERGE INTO lake.main.t USING data AS s ON t.id = s.id WHEN MATCHED AND (t.v IS "
        "DISTINCT FROM s.v OR t.grp IS DISTINCT FROM s.grp OR t.tags IS DISTINCT FROM s.tags) "
        "THEN UPDATE BY NAME WHEN NOT MATCHED THEN INSERT BY NAME"
    )
    theirs.detach()
    result = DuckLakeCatalog(**ours.reader_args()).table("main", "t").upsert(data, ["id"])
    assert (result.updated, result.inserted, result.deleted) == (1, 1, 0)
    assert_merged_twins_agree(ours, theirs, before)


def test_a_row_matched_twice_and_an_error_clause_change_nothing(make_lake):
    lake = make_lake(inline_limit=0)
    for statement in MERGE_SETUP:
        lake.sql(statement)
    lake.detach()
    before = twin_catalog(lake)
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "t")
    twice = pa.table({"id": [5, 5], "v": [1.0, 2.0]})
    with pytest.raises(MergeError, match="rowid 5 is matched by 2 source rows"):
        table.merge(twice, ["id"]).when_matched_update({"v": "source.v"}).execute()
    ctx = SessionContext()
    register(ctx, "lake", catalog)
    with pytest.raises(MergeError, match="THEN ERROR clause: too big"):
        ducklake_datafusion.sql(
            ctx,
            f"MERGE INTO lake.main.t USING {SOURCE} WHEN MATCHED AND s.v > 3000 THEN "
            "ERROR 'too big' WHEN MATCHED THEN DELETE",
        )
    bad = {
        "no column 'nope'": "WHEN MATCHED THEN UPDATE SET nope = 1",
        "cannot INSERT": "WHEN MATCHED THEN INSERT *",
        "4 columns": "WHEN NOT MATCHED THEN INSERT VALUES (1, 2)",
        "needs at least one WHEN": "",
    }
    for message, clauses in bad.items():
        with pytest.raises(InvalidOptionError, match=message):
            ducklake_datafusion.sql(ctx, f"MERGE INTO lake.main.t USING {SOURCE} {clauses}")
    # a row matched twice where no clause changes it is no error (as in Delta)
    table.merge(twice, ["id"]).when_matched_delete(where="source.v > 5").execute()
    with pytest.raises(CatalogReadOnlyError, match="pinned"):
        pinned = DuckLakeCatalog(**lake.reader_args(), snapshot=1)
        pinned.table("main", "t").upsert(twice.slice(0, 1), ["id"])
    with pytest.raises(InvalidOptionError, match="needs keys"):
        table.merge(twice, []).when_matched_delete().execute()
    with pytest.raises(InvalidOptionError, match="not a column of the table"):
        table.merge(
            pa.table({"id": [1], "nope": [1]}), ["id"]
        ).when_not_matched_insert_all().execute()
    # pyarrow expressions: in every clause or none, columns named through the aliases,
    # the cardinality rule as for SQL text
    one = pa.table({"id": [5], "v": [1.0]})
    for message, merge in {
        "all SQL text or all pyarrow": lambda b: b.when_matched_update(
            {"v": pc.field("source", "v")}, where="source.v > 0"
        ),
        "pc.field\\(alias, column\\)": lambda b: b.when_matched_update({"v": pc.field("v")}),
        "ON SQL text or key column": None,
    }.items():
        with pytest.raises(InvalidOptionError, match=message):
            if merge is None:
                table.merge(one, pc.field("target", "id") == pc.field("source", "id"))
            else:
                merge(table.merge(one, ["id"])).execute()
    with pytest.raises(MergeError, match="rowid 5 is matched by 2 source rows"):
        table.merge(twice, ["id"]).when_matched_update({"v": pc.field("source", "v")}).execute()
    assert twin_catalog(lake) == before


def test_a_merge_that_inserts_is_planned_again_after_an_append(make_lake, monkeypatch):
    """An append committed between a MERGE's plan and its commit may hold the match the
    plan did not see: the MERGE loses (``NoRowsInserted``), is planned again, and the
    appended row is updated, not duplicated."""
    from ducklake_datafusion.provider import _merge

    lake = make_lake(inline_limit=0)
    for statement in TWIN_SETUP[:2]:
        lake.sql(statement)
    lake.detach()
    catalog = DuckLakeCatalog(**lake.reader_args())
    table = catalog.table("main", "t")
    appended = []
    real = _merge._apply

    def append_first(*args):
        if not appended:
            appended.append(
                table.append(pa.table({"id": [7000], "grp": ["late"], "v": [1.0], "tags": [[]]}))
            )
        return real(*args)

    monkeypatch.setattr(_merge, "_apply", append_first)
    data = pa.table({"id": [7000, 7001], "grp": ["merged", "merged"]})
    result = table.merge(data, ["id"]).when_matched_update_all().when_not_matched_insert_all()
    result = result.execute()
    assert (result.updated, result.inserted) == (1, 1)
    rows = duckdb_reads(lake, "SELECT id, grp FROM lake.main.t WHERE id >= 7000 ORDER BY id")
    assert rows.to_pylist() == [{"id": 7000, "grp": "merged"}, {"id": 7001, "grp": "merged"}]
    # with no second plan, the conflict is the answer, and the lake keeps the append
    from ducklake_datafusion.provider import _row_statements

    monkeypatch.setattr(_row_statements, "REPLANS", 1)
    appended.clear()
    with pytest.raises(CommitConflictError, match="had rows inserted"):
        table.merge(pa.table({"id": [7002]}), ["id"]).when_not_matched_insert_all().execute()
    assert duckdb_reads(lake, "SELECT count(*) FROM lake.main.t WHERE id = 7002")[0][0].as_py() == 0


def test_a_source_of_dataframe_view_types_merges_as_in_duckdb(make_lake):
    """A lake source read by the Rust scan hands DataFusion ``Utf8View`` columns, which
    pyarrow cannot filter: the MERGE's rows are taken as plain strings (this failed with
    "array_take has no kernel matching input types (string_view, ...)")."""
    setup = [
        "CREATE TABLE lake.main.t AS SELECT i AS k, 'name' || i AS s FROM range(10000) r(i)",
        (
            "CREATE TABLE lake.main.src AS SELECT CASE WHEN i % 2 = 0 THEN i * 10 ELSE "
            "10000 + i END AS k, 'src' || i AS s FROM range(1000) r(i)"
        ),
    ]
    statement = (
        "MERGE INTO lake.main.t USING lake.main.src AS s ON t.k = s.k WHEN MATCHED THEN "
        "UPDATE SET s = s.s WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.s)"
    )
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    before = theirs.snapshot_id()
    theirs.sql(statement)
    theirs.detach()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
    result = ducklake_datafusion.sql(ctx, statement).to_pylist()[0]
    assert (result["updated"], result["inserted"]) == (500, 500)
    assert_merged_twins_agree(ours, theirs, before)
