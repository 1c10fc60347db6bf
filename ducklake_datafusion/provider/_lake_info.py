"""Lake inspection as Arrow tables, shaped like DuckDB's ducklake functions.

* :func:`snapshots_table` = ``ducklake_snapshots('lake')``: one row per existing snapshot;
  ``changes`` is DuckDB's ``MAP(VARCHAR, VARCHAR[])``, here an Arrow
  ``map<string, list<string>>`` with DuckDB's keys (``tables_inserted_into`` ...), key
  order and name quoting.
* :func:`table_info_table` = ``ducklake_table_info('lake')``: live files per table.
* :func:`list_files_table` = ``ducklake_list_files('lake', 'table', schema => ...)``: the
  data files of a table with their delete file, as full paths.

Types follow DuckDB's Arrow export of those functions (UUID as string, sizes of the file
listing as uint64, encryption keys as binary).
"""

from __future__ import annotations

import pyarrow as pa

from ..catalog import (
    changes_map,
    duckdb_identifier,
    list_file_rows,
    list_snapshot_records,
    metadata,
    table_sizes,
    token_display,
)
from ..pathres import join_path
from ..scan import SnapshotRef, require_table, resolve_snapshot_ref, table_directory

__all__ = [
    "LIST_FILES_SCHEMA",
    "SNAPSHOTS_SCHEMA",
    "TABLE_INFO_SCHEMA",
    "changes_map",
    "list_files_table",
    "snapshot_rows",
    "snapshots_table",
    "table_history_table",
    "table_info_table",
]

SNAPSHOTS_SCHEMA = pa.schema(
    [
        ("snapshot_id", pa.int64()),
        ("snapshot_time", pa.timestamp("us", tz="UTC")),
        ("schema_version", pa.int64()),
        ("changes", pa.map_(pa.string(), pa.list_(pa.string()))),
        ("author", pa.string()),
        ("commit_message", pa.string()),
        ("commit_extra_info", pa.string()),
    ]
)
TABLE_INFO_SCHEMA = pa.schema(
    [
        ("table_name", pa.string()),
        ("schema_id", pa.int64()),
        ("table_id", pa.int64()),
        ("table_uuid", pa.string()),
        ("file_count", pa.int64()),
        ("file_size_bytes", pa.int64()),
        ("delete_file_count", pa.int64()),
        ("delete_file_size_bytes", pa.int64()),
    ]
)
LIST_FILES_SCHEMA = pa.schema(
    [
        ("data_file", pa.string()),
        ("data_file_size_bytes", pa.uint64()),
        ("data_file_footer_size", pa.uint64()),
        ("data_file_encryption_key", pa.binary()),
        ("delete_file", pa.string()),
        ("delete_file_size_bytes", pa.uint64()),
        ("delete_file_footer_size", pa.uint64()),
        ("delete_file_encryption_key", pa.binary()),
    ]
)


def snapshots_table(lake) -> pa.Table:
    """Every existing snapshot with what it changed and its commit message."""
    return snapshot_rows(_snapshot_records(lake))


def _snapshot_records(lake):
    backend = lake.backend
    with backend.session() as session:
        metadata.read_settings(session, backend.description)
        return list_snapshot_records(session)


def snapshot_rows(records) -> pa.Table:
    """``SnapshotRecord``s as ``ducklake_snapshots()`` shows them."""
    return pa.table(
        {
            "snapshot_id": [r.snapshot_id for r in records],
            "snapshot_time": [r.snapshot_time for r in records],
            "schema_version": [r.schema_version for r in records],
            "changes": [changes_map(r.changes) for r in records],
            "author": [r.author for r in records],
            "commit_message": [r.commit_message for r in records],
            "commit_extra_info": [r.commit_extra_info for r in records],
        },
        schema=SNAPSHOTS_SCHEMA,
    )


def table_history_table(lake, table_id: int) -> pa.Table:
    """The rows of :func:`snapshots_table` whose changes touch one table.

    A table is named by id in most change tokens, and by name in the ``created_table``
    token of its creation and of every rename, so every name it has had counts.
    """
    backend = lake.backend
    with backend.session() as session:
        names = {
            f"{duckdb_identifier(schema)}.{duckdb_identifier(table)}"
            for schema, table in metadata.table_names_of(session, table_id)
        }
    keep = [
        r
        for r in _snapshot_records(lake)
        if r.changes is not None
        and any(
            t.table_id() == table_id or (t.kind == "created_table" and token_display(t) in names)
            for t in r.changes
        )
    ]
    return snapshot_rows(keep)


def table_info_table(lake) -> pa.Table:
    """Tables at the lake's snapshot (pinned, else latest) with live file counts and sizes."""
    backend = lake.backend
    with backend.session() as session:
        metadata.read_settings(session, backend.description)
        snap = lake.resolve_snapshot(session)
        sizes = table_sizes(session, snap.snapshot_id)
    columns = {name: [getattr(s, name) for s in sizes] for name in TABLE_INFO_SCHEMA.names}
    return pa.table(columns, schema=TABLE_INFO_SCHEMA)


def list_files_table(
    lake, schema: str, table: str, snapshot: SnapshotRef | None = None
) -> pa.Table:
    """Data files of ``schema.table`` with their live delete file, at a snapshot."""
    backend = lake.backend
    with backend.session() as session:
        settings = metadata.read_settings(session, backend.description)
        if snapshot is None:
            snap = lake.resolve_snapshot(session)
        else:
            snap = resolve_snapshot_ref(session, snapshot, backend.description)
        entry = require_table(session, backend.description, snap.snapshot_id, schema, table)
        files = list_file_rows(session, entry.table_id, snap.snapshot_id)
    root = lake.lake.data_path(settings)
    directory = table_directory(root, entry)
    rows = [
        {
            "data_file": join_path(directory, f.path, f.path_is_relative),
            "data_file_size_bytes": f.file_size_bytes,
            "data_file_footer_size": f.footer_size,
            "data_file_encryption_key": None,  # a secret: used, never handed out
            "delete_file": None
            if f.delete_path is None
            else join_path(directory, f.delete_path, f.delete_path_is_relative),
            "delete_file_size_bytes": f.delete_file_size_bytes,
            "delete_file_footer_size": f.delete_footer_size,
            "delete_file_encryption_key": None,
        }
        for f in files
    ]
    return pa.Table.from_pylist(rows, schema=LIST_FILES_SCHEMA)
