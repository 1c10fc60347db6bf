"""DELETE against a twin lake: DuckDB runs the same statement on an identical lake.

Each case builds two lakes with the same DuckDB statements, runs a delete through our
``table.delete`` on one and DuckDB's ``DELETE`` on the other, then compares, snapshot by
snapshot: the rows with their ``rowid``, the change feed of every snapshot, and the catalog
rows the delete wrote (delete files and their snapshots, ended files, scheduled deletions,
changes, statistics; ids kept, paths and sizes aside). DuckDB then writes after us on both
(a delete and an update of the same file, compaction, then expiry and cleanup) and both
still agree, read by DuckDB, our Rust scan and our exact path.
"""

from __future__ import annotations

import re

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.lakes import LakeSpec, assert_same_rows
from support.twins import (
    TWIN_SETUP,
    assert_twins_agree,
    duckdb_writes_after,
    expired_twins_agree,
    twin_catalog,
    twin_feed,
    twin_lakes,
    twin_rows,
)
from support.writes import META, duckdb_reads, ours_reads

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import CatalogReadOnlyError, InvalidOptionError

SPECS = [
    LakeSpec("duckdb", "local"),
    LakeSpec("sqlite", "s3"),
    LakeSpec("postgres", "local"),
    LakeSpec("sqlite", "minio"),
    LakeSpec("duckdb", "gcs"),
    LakeSpec("sqlite", "azure"),
]


# (our where, DuckDB's WHERE): scattered rows of a file that has a delete file already
# and of one that has none, a whole file, and nothing at all
CASES = {
    "scattered": "id % 10 = 3 OR id BETWEEN 2010 AND 2020",
    "whole_file": "grp = 'g9'",
    "everything": "true",
    "nothing": "id < 0",
    "subquery": "id IN (SELECT id * 3 FROM lake.main.t WHERE id < 50)",
}


# every case on the DuckDB-file catalog; on each other catalog database and store one case
# (the statement's plan is the same code on every cell; what differs is the catalog's SQL
# dialect and the store the delete files go to)
TWINS = (
    [(SPECS[0], case) for case in CASES]
    + list(zip(SPECS[1:], ["scattered", "subquery", "whole_file", "scattered", "everything"]))
    + [(LakeSpec("mysql", "local"), "scattered"), (LakeSpec("postgres", "s3"), "scattered")]
)


@pytest.mark.parametrize(("spec", "case"), TWINS, ids=[f"{spec.id}-{case}" for spec, case in TWINS])
def test_delete_matches_duckdb_on_a_twin_lake(make_lake, spec, case):
    ours, theirs = twin_lakes(make_lake, spec)
    where = CASES[case]
    theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
    theirs.detach()
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**ours.reader_args()))
    table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
    result = table.delete(where, ctx=ctx)
    deleted = duckdb_reads(theirs, "SELECT count(*) FROM lake.main.t", 5).column(0)[0].as_py()
    deleted -= duckdb_reads(theirs, "SELECT count(*) FROM lake.main.t").column(0)[0].as_py()
    assert result.deleted == deleted
    if case == "nothing":
        assert result.snapshot_id == 5  # no snapshot for a delete of no rows, as DuckDB
    assert_twins_agree(ours, theirs)
    # (a MySQL cell's DuckDB writes a file catalog copied into MySQL: it cannot write after us)
    if spec.storage != "local" or spec.catalog == "mysql" or case in ("nothing", "everything"):
        return
    for lake in (ours, theirs):
        duckdb_writes_after(lake)
    assert_twins_agree(ours, theirs, first=6)
    expired_twins_agree(ours, theirs)


@pytest.mark.parametrize("spec", SPECS[:1], ids=lambda s: s.id)
def test_deletes_of_our_own_delete_files_are_cumulative(make_lake, spec):
    """Three deletes in a row on the same files (each replaces the last one's delete file),
    and a pyarrow expression and a delete of everything: every snapshot as DuckDB's."""
    ours, theirs = twin_lakes(make_lake, spec)
    steps = [
        ("id < 300", pc.field("id") < 300),
        ("id % 5 = 2", None),
        ("grp = 'g1'", pc.field("grp") == "g1"),
        ("v > 900", None),
    ]
    for sql_where, expression in steps:
        theirs.sql(f"DELETE FROM lake.main.t WHERE {sql_where}")
        theirs.detach()
        table = DuckLakeCatalog(**ours.reader_args()).table("main", "t")
        table.delete(expression if expression is not None else sql_where)
    assert_twins_agree(ours, theirs)
    assert _delete_file_forms(ours) == _delete_file_forms(theirs)
    theirs.sql("DELETE FROM lake.main.t")
    theirs.detach()
    DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete()
    assert_twins_agree(ours, theirs)


def _delete_file_forms(lake) -> set[tuple]:
    """Each live delete file's Parquet form: its name's shape, and its columns with their
    types, field ids and repetition (DuckDB's: ``file_path`` 2147483646, ``pos``
    2147483645, and on a cumulative file ``_ducklake_internal_snapshot_id`` 2147483539)."""
    files = lake.reference(
        "SELECT delete_file FROM ducklake_list_files('lake', 't') WHERE delete_file IS NOT NULL"
    )
    forms = set()
    for path in files.column(0).to_pylist():
        schema = pq.read_schema(path)
        name = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", path.rsplit("/", 1)[-1])
        columns = tuple(
            (f.name, str(f.type), f.nullable, (f.metadata or {}).get(b"PARQUET:field_id"))
            for f in schema
        )
        forms.add((name, columns))
    assert forms, "no live delete file"
    return forms


def test_deleting_inlined_rows_ends_them_in_the_catalog(make_lake):
    """Rows DuckDB inlined in the catalog: ended there (``inlined_delete``), as DuckDB
    ends them; rows of a file whose other deletes DuckDB inlined get a delete file
    beside them (readers apply both)."""
    setup = [
        "CREATE TABLE lake.main.t (id BIGINT, grp VARCHAR, v DOUBLE, tags VARCHAR[])",
        "INSERT INTO lake.main.t SELECT i, 'g' || (i % 4), i, NULL FROM range(200) r(i)",
        (
            "INSERT INTO lake.main.t VALUES (5000, 'in', 1, NULL), (5001, 'in', 2, NULL), "
            "(5002, 'in', 3, ['a'])"
        ),
        # positions of the file deleted through the catalog (ducklake_inlined_delete_1)
        "DELETE FROM lake.main.t WHERE id % 50 = 7",
    ]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup, inline_limit=10)
    where = "id IN (5000, 5002) OR id % 50 = 1"
    theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
    theirs.detach()
    result = DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete(where)
    count = "SELECT count(*) FROM lake.main.t"
    before = duckdb_reads(theirs, count, 4).column(0)[0].as_py()
    assert result.deleted == before - duckdb_reads(theirs, count).column(0)[0].as_py()
    last = theirs.snapshot_id()
    assert ours.snapshot_id() == last
    for snapshot in range(1, last + 1):
        assert_same_rows(twin_rows(ours, snapshot), twin_rows(theirs, snapshot), ordered=True)
        assert_same_rows(twin_feed(ours, snapshot), twin_feed(theirs, snapshot), ordered=True)
    # DuckDB also inlines the file rows' deletes (``ducklake_inlined_delete_1``); we write
    # them as a delete file: the rows and the feed above are the same either way
    ours_catalog, their_catalog = twin_catalog(ours), twin_catalog(theirs)
    for key in ("data_files", "table_stats", "column_stats"):
        assert ours_catalog[key] == their_catalog[key], (key, ours_catalog[key], their_catalog[key])
    assert ours_catalog["changes"][-1] == (5, "deleted_from_table:1,inlined_delete:1")
    inlined = f"SELECT * FROM {META}.ducklake_inlined_data_1_1 ORDER BY ALL"
    assert duckdb_reads(ours, inlined).equals(duckdb_reads(theirs, inlined))
    expected = duckdb_reads(theirs, "SELECT * FROM lake.main.t")
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t"), expected)
    assert_same_rows(ours_reads(ours, "SELECT * FROM lake.main.t", native=False), expected)


def test_a_delete_is_refused_where_it_cannot_be_exact(make_lake):
    lake = make_lake(inline_limit=0)
    for statement in TWIN_SETUP[:2]:
        lake.sql(statement)
    lake.detach()
    before = duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid")
    catalog = DuckLakeCatalog(**lake.reader_args())
    with pytest.raises(InvalidOptionError, match=r"main\.t .*No field named nope"):
        catalog.table("main", "t").delete("nope = 1")
    with pytest.raises(InvalidOptionError, match=r"main\.t .*non-boolean"):
        catalog.table("main", "t").delete("id")
    with pytest.raises(InvalidOptionError, match="SQL text or a pyarrow"):
        catalog.table("main", "t").delete(42)
    pinned = DuckLakeCatalog(**lake.reader_args(), snapshot=1)
    with pytest.raises(CatalogReadOnlyError, match="pinned"):
        pinned.table("main", "t").delete("id = 1")
    after = duckdb_reads(lake, "SELECT rowid, * FROM lake.main.t ORDER BY rowid")
    assert after.equals(before)


def test_deletes_of_whole_partitions_end_their_files_as_duckdb(make_lake):
    """A partitioned table: a delete of one whole partition ends its files (no delete
    file), one of a partition and scattered rows of the others mixes both, as DuckDB's."""
    setup = [TWIN_SETUP[0], "ALTER TABLE lake.main.t SET PARTITIONED BY (grp)", *TWIN_SETUP[1:]]
    ours, theirs = twin_lakes(make_lake, LakeSpec("duckdb", "local"), setup)
    for where in ["grp = 'g2'", "grp = 'g9' OR id % 10 = 1"]:
        theirs.sql(f"DELETE FROM lake.main.t WHERE {where}")
        theirs.detach()
        DuckLakeCatalog(**ours.reader_args()).table("main", "t").delete(where)
    assert_twins_agree(ours, theirs, file_ids=False)
    ended = duckdb_reads(
        ours,
        f"SELECT count(*) FROM {META}.ducklake_data_file f JOIN "
        f"{META}.ducklake_file_partition_value p USING (data_file_id) "
        "WHERE p.partition_value IN ('g2', 'g9') AND f.end_snapshot IS NULL",
    )
    assert ended.column(0)[0].as_py() == 0
