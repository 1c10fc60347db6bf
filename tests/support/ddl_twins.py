"""Twin lakes for schema changes: one changed by us, its twin by DuckDB's same statement.

:func:`ddl_catalog` is every catalog row a schema change writes or ends (uuids, file paths
and sizes aside: each writer draws its own), :func:`snapshot_reads` what DuckDB reads of
every table at every snapshot, :func:`assert_ddl_twins_agree` both of those equal on the
twins and our readers (the Rust scan and the exact path) equal to DuckDB at the latest.
"""

from __future__ import annotations

from support.lakes import assert_same_rows
from support.writes import META, duckdb_reads, ours_reads, pull

UUID_PATH = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/$"

# The rows a schema change writes or ends, one query per catalog table.
CATALOG_QUERIES = {
    "snapshots": "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
    "FROM {m}.ducklake_snapshot",
    "changes": "SELECT * FROM {m}.ducklake_snapshot_changes",
    "schemas": "SELECT schema_id, begin_snapshot, end_snapshot, schema_name, "
    f"regexp_replace(path, '{UUID_PATH}', 'uuid/'), path_is_relative FROM {{m}}.ducklake_schema",
    "tables": "SELECT table_id, begin_snapshot, end_snapshot, schema_id, table_name, "
    f"regexp_replace(path, '{UUID_PATH}', 'uuid/'), path_is_relative FROM {{m}}.ducklake_table",
    "columns": "SELECT * FROM {m}.ducklake_column",
    "schema_versions": "SELECT * FROM {m}.ducklake_schema_versions",
    "partitions": "SELECT * FROM {m}.ducklake_partition_info",
    "partition_columns": "SELECT * FROM {m}.ducklake_partition_column",
    "views": "SELECT view_id, begin_snapshot, end_snapshot, schema_id, view_name, sql "
    "FROM {m}.ducklake_view",
    "data_files": "SELECT data_file_id, table_id, begin_snapshot, end_snapshot, "
    "record_count, row_id_start FROM {m}.ducklake_data_file",
    "delete_files": "SELECT delete_file_id, table_id, begin_snapshot, end_snapshot, "
    "data_file_id, delete_count FROM {m}.ducklake_delete_file",
    "tags": "SELECT * FROM {m}.ducklake_tag",
    "column_tags": "SELECT * FROM {m}.ducklake_column_tag",
    "table_stats": "SELECT table_id, record_count, next_row_id FROM {m}.ducklake_table_stats",
    "column_stats": "SELECT * FROM {m}.ducklake_table_column_stats",
    "inlined_tables": "SELECT * FROM {m}.ducklake_inlined_data_tables",
}


def ddl_catalog(lake) -> dict:
    """Every catalog table a schema change touches, as sorted rows (one attachment)."""
    pull(lake)
    answers = lake.references([sql.replace("{m}", META) for sql in CATALOG_QUERIES.values()])
    return {
        key: sorted((tuple(row.values()) for row in answer.to_pylist()), key=repr)
        for key, answer in zip(CATALOG_QUERIES, answers, strict=True)
    }


def _live_tables_sql(snapshot: int | None) -> str:
    at = "(SELECT max(snapshot_id) FROM {m}.ducklake_snapshot)" if snapshot is None else snapshot

    def live(a: str) -> str:
        return (
            f"{a}.begin_snapshot <= {at} AND ({a}.end_snapshot IS NULL OR {a}.end_snapshot > {at})"
        )

    sql = (
        "SELECT s.schema_name, t.table_name FROM {m}.ducklake_table t JOIN {m}.ducklake_schema s "
        f"USING (schema_id) WHERE {live('t')} AND {live('s')} ORDER BY ALL"
    )
    return sql.replace("{m}", META)


def _tables(answer) -> list[tuple[str, str]]:
    return [(r["schema_name"], r["table_name"]) for r in answer.to_pylist()]


def live_tables(lake, snapshot: int | None = None) -> list[tuple[str, str]]:
    """``(schema, table)`` of every table live at ``snapshot`` (default: the latest)."""
    return _tables(duckdb_reads(lake, _live_tables_sql(snapshot)))


def _name(schema: str, table: str) -> str:
    return f'lake."{schema}"."{table}"'


def snapshot_reads(lake, first: int = 1) -> dict:
    """What DuckDB reads of every table live at every snapshot from ``first`` (the lake
    attached once a snapshot, as of it)."""
    pull(lake)
    last = lake.snapshot_id()
    live = lake.references([_live_tables_sql(s) for s in range(first, last + 1)])
    reads = {}
    for snapshot, tables in zip(range(first, last + 1), live, strict=True):
        names = _tables(tables)
        sqls = [f"SELECT * FROM {_name(schema, table)}" for schema, table in names]
        for (schema, table), rows in zip(names, lake.references(sqls, snapshot), strict=True):
            reads[(snapshot, schema, table)] = rows
    return reads


def _without_file_ids(catalog: dict) -> dict:
    catalog = dict(catalog)
    catalog["data_files"] = sorted((r[1:] for r in catalog["data_files"]), key=repr)
    catalog["delete_files"] = sorted((r[1:4] + r[5:] for r in catalog["delete_files"]), key=repr)
    return catalog


def assert_ddl_twins_agree(
    ours, theirs, *, first: int = 1, file_ids: bool = True, commit_info: bool = True
) -> None:
    """The same catalog rows, DuckDB reading the same rows of every table at every
    snapshot from ``first`` on both twins, and our readers reading DuckDB's rows of
    every live table of both. ``file_ids=False``: the data files' ids aside (DuckDB's
    flush numbers the files it writes at once in no fixed order). ``commit_info=False``:
    the snapshots' author, message and extra info aside (Spark's commits record its
    engine and application)."""
    assert ours.snapshot_id() == theirs.snapshot_id(), (
        ddl_catalog(ours)["changes"],
        ddl_catalog(theirs)["changes"],
    )
    mine, their = ddl_catalog(ours), ddl_catalog(theirs)
    if not file_ids:
        mine, their = _without_file_ids(mine), _without_file_ids(their)
    if not commit_info:
        mine["changes"] = [row[:2] for row in mine["changes"]]
        their["changes"] = [row[:2] for row in their["changes"]]
    for key in their:
        assert mine[key] == their[key], (key, mine[key], their[key])
    mine, their = snapshot_reads(ours, first), snapshot_reads(theirs, first)
    assert sorted(mine) == sorted(their)
    for key, rows in their.items():
        assert mine[key].schema == rows.schema, key
        assert_same_rows(mine[key], rows)
    for lake in (ours, theirs):
        for schema, table in live_tables(lake):
            sql = f"SELECT * FROM {_name(schema, table)}"
            expected = duckdb_reads(lake, sql)
            assert_same_rows(ours_reads(lake, sql), expected)
            assert_same_rows(ours_reads(lake, sql, native=False), expected)


def assert_evolved_alike(ours, theirs, table: str) -> None:
    """A write that evolved the schema (ours) and DuckDB's ALTERs and INSERT on the twin:
    the same columns' catalog rows, as many snapshots, and ``table`` read the same by DuckDB
    at every snapshot. ``theirs`` is detached here (its writes are done)."""
    theirs.detach()
    assert ddl_catalog(ours)["columns"] == ddl_catalog(theirs)["columns"]
    assert ours.snapshot_id() == theirs.snapshot_id()
    sql = f"SELECT * FROM {table}"
    for snapshot in range(1, ours.snapshot_id() + 1):
        assert_same_rows(duckdb_reads(ours, sql, snapshot), duckdb_reads(theirs, sql, snapshot))
