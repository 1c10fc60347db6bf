"""Steps 6-11 of the read path: what a table's files need beside the file table.

Inlined rows and inlined deletes (rows kept in the catalog database itself), column name
mappings, file statistics and partition specs and values. :func:`table_files` gathers
them around a file table into a :class:`TableFiles`, whichever way the file table was
read (in full, cut, or refreshed: ``_table_files``, ``_refresh``).

The only identifiers formatted into SQL here are inlined-table names read from the
catalog's own registry, and those are checked against a strict pattern first.
"""

from __future__ import annotations

import re

import pyarrow as pa

from ..errors import CatalogError
from ._backend import MetadataSession
from ._format import INLINED_SYSTEM_COLUMNS, inlined_system_columns
from ._models import (
    ColumnEntry,
    InlinedTableEntry,
    NameMappingNode,
    PartitionColumnEntry,
    TableFiles,
)
from ._names import columns_of, read_columns
from ._session import per_snapshot
from ._sql import PARTITION_VALUES_SCHEMA, STATS_SCHEMA, as_bool, live, opt_int

__all__ = [
    "holds_merged_rows",
    "inlined_insert_snapshots",
    "read_file_stats",
    "read_partition_values",
    "table_files",
]

_INLINED_DATA = re.compile(r"^ducklake_inlined_data_\d+_\d+$")


def table_files(
    session: MetadataSession,
    tid: int,
    snapshot: int,
    file_table: pa.Table,
    extra_delete_files: dict,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
    *,
    stats: pa.Table | None = None,
    partition_values: pa.Table | None = None,
    name_mappings: dict | None = None,
    files_cut: int = 0,
) -> TableFiles:
    """Steps 7-11 around a file table; ``stats``, ``partition_values`` and
    ``name_mappings`` when already known (an incremental refresh), read otherwise."""
    mapping_ids = {m for m in file_table.column("mapping_id").to_pylist() if m is not None}
    partitioned = (
        with_partitions and file_table.column("partition_id").null_count < file_table.num_rows
    )
    known = name_mappings or {}
    mappings = {m: known[m] for m in mapping_ids if m in known}
    mappings.update(_name_mappings(session, mapping_ids - set(mappings)))
    if stats is None:
        stats = read_file_stats(session, tid, list(stats_columns))
    if partitioned and partition_values is None:
        partition_values = read_partition_values(session, tid)
    return TableFiles(
        file_table=file_table,
        extra_delete_files=extra_delete_files,
        inlined_deletes=_inlined_deletes(session, tid, snapshot),
        inlined_rows=_inlined_rows(session, tid, snapshot),
        name_mappings=mappings,
        stats=stats,
        partition_columns=_partition_columns(session, tid) if partitioned else {},
        partition_values=partition_values if partitioned else None,
        files_cut=files_cut,
    )


def _inlined_deletes(
    session: MetadataSession, table_id: int, snapshot: int
) -> dict[int, tuple[int, ...]]:
    name = f"ducklake_inlined_delete_{int(table_id)}"
    if not session.has_table(name):
        return {}
    positions: dict[int, list[int]] = {}
    for file_id, pos in session.rows(
        f"SELECT file_id, row_id FROM {name} WHERE begin_snapshot <= ?", [snapshot]
    ):
        positions.setdefault(int(file_id), []).append(int(pos))
    return {k: tuple(sorted(v)) for k, v in positions.items()}


def inlined_insert_snapshots(
    session: MetadataSession, table_id: int, after: int, through: int
) -> set[int]:
    """The snapshots in ``(after, through]`` that inlined rows of the table began at."""
    found: set[int] = set()
    for inlined in _inlined_tables(session, table_id):
        name = inlined.table_name
        if not _INLINED_DATA.match(name) or not session.has_table(name):
            continue
        begin = _inlined_system_columns(session, name).begin_snapshot
        rows = session.rows(
            f"SELECT DISTINCT {begin} FROM {name} WHERE {begin} > ? AND {begin} <= ?",
            [int(after), int(through)],
        )
        found.update(int(r[0]) for r in rows)
    return found


def holds_merged_rows(session: MetadataSession, table_id: int, after: int, through: int) -> bool:
    """Whether a file live at ``through`` holds rows of snapshots after ``after`` while it
    began at or before it: a file written by compaction or a flush (``partial_max``)."""
    rows = session.rows(
        "SELECT count(*) FROM ducklake_data_file WHERE table_id = ? AND partial_max IS NOT NULL "
        f"AND partial_max > ? AND begin_snapshot <= ? AND {live()}",
        [table_id, int(after), int(after), int(through), int(through)],
    )
    return int(rows[0][0]) > 0


def _inlined_tables(session: MetadataSession, table_id: int) -> list[InlinedTableEntry]:
    """Inlined-data tables of a table with the snapshot their column layout began.

    A layout without a ``ducklake_schema_versions`` row is the table's first one (tables
    never altered), as in the extension.
    """
    rows = session.rows(
        "SELECT i.table_name, i.schema_version, v.begin_snapshot "
        "FROM ducklake_inlined_data_tables i LEFT JOIN ducklake_schema_versions v "
        "ON v.table_id = i.table_id AND v.schema_version = i.schema_version "
        "WHERE i.table_id = ? ORDER BY i.schema_version",
        [table_id],
    )
    if any(r[2] is None for r in rows):
        first = session.rows(
            "SELECT min(begin_snapshot) FROM ducklake_table WHERE table_id = ?", [table_id]
        )[0][0]
        rows = [(r[0], r[1], first if r[2] is None else r[2]) for r in rows]
    return [InlinedTableEntry(r[0], int(r[1]), int(r[2])) for r in rows]


def _inlined_rows(session: MetadataSession, table_id: int, snapshot: int):
    result = []
    tables = per_snapshot(
        session, ("inlined_tables", snapshot, table_id), lambda: _inlined_tables(session, table_id)
    )
    for entry in tables:
        if entry.layout_snapshot > snapshot or not _INLINED_DATA.match(entry.table_name):
            continue
        if not session.has_table(entry.table_name):
            continue
        layout = read_columns(session, table_id, entry.layout_snapshot)
        system = _inlined_system_columns(session, entry.table_name)
        begin, end = system.begin_snapshot, system.end_snapshot
        rows = session.arrow(
            f"SELECT {_inlined_select_list(session, layout, system)} FROM {entry.table_name} "
            f"WHERE {begin} <= ? AND ({end} IS NULL OR ? < {end})",
            [snapshot, snapshot],
        )
        if rows.num_rows:
            # the system columns under one spelling, whatever the table's format
            names = list(INLINED_SYSTEM_COLUMNS.names) + rows.column_names[3:]
            result.append((rows.rename_columns(names), layout))
    return tuple(result)


def _inlined_system_columns(session: MetadataSession, table_name: str):
    """The system columns of one inlined-data table: renamed by the 1.1 migration table
    by table, so read from the table itself (a half-migrated catalog reads as it is)."""
    names = list(columns_of(session, table_name))
    system = inlined_system_columns(names)
    if system is None:
        raise CatalogError(
            f"{session.description}: inlined-data table "
            f"{table_name} starts with columns {names[:3]}, neither DuckLake 1.0's "
            "(row_id, begin_snapshot, end_snapshot) nor 1.1's (_ducklake_row_id, "
            "_ducklake_begin_snapshot, _ducklake_end_snapshot); the catalog is damaged or "
            "of a format this reader does not know"
        )
    return system


def _inlined_select_list(session, layout: tuple[ColumnEntry, ...], system) -> str:
    """``*``, unless a column is a VARIANT in a DuckDB catalog: DuckDB cannot export VARIANT
    to Arrow, so such columns are read as the JSON text of ``CAST(v AS JSON)`` (what the
    reader exposes).

    Only DuckDB and MySQL catalogs inline VARIANT values (SQLite and PostgreSQL never do),
    and MySQL keeps them as text (``session.VARIANT_AS_JSON``), so the DuckDB spelling of
    the cast is the one needed. Column names come from the catalog itself and are quoted
    as identifiers.
    """
    top = [c for c in layout if c.parent_column is None]
    if not session.VARIANT_AS_JSON or not any(c.column_type.lower() == "variant" for c in top):
        return "*"
    parts = list(system.names)
    for column in top:
        name = '"' + column.column_name.replace('"', '""') + '"'
        if column.column_type.lower() == "variant":
            parts.append(f"CAST(CAST({name} AS JSON) AS VARCHAR) AS {name}")
        else:
            parts.append(name)
    return ", ".join(parts)


def _name_mappings(
    session: MetadataSession, mapping_ids: set
) -> dict[int, tuple[NameMappingNode, ...]]:
    mappings = {}
    for mapping_id in sorted(mapping_ids):
        rows = session.rows(
            "SELECT column_id, source_name, target_field_id, parent_column, is_partition "
            "FROM ducklake_name_mapping WHERE mapping_id = ? ORDER BY column_id",
            [mapping_id],
        )
        mappings[mapping_id] = tuple(
            NameMappingNode(int(r[0]), r[1], int(r[2]), opt_int(r[3]), as_bool(r[4])) for r in rows
        )
    return mappings


def read_file_stats(session: MetadataSession, table_id: int, column_ids: list[int], cut=None):
    """Step 10 as an Arrow table (data_file_id, column_id, counts, min/max text,
    contains_nan); ``cut``: ``(condition, params)`` on the files to read them of."""
    if not column_ids:
        return None
    marks = ", ".join("?" for _ in column_ids)
    sql = (
        "SELECT data_file_id, column_id, value_count, null_count, min_value, max_value, "
        "contains_nan FROM ducklake_file_column_stats "
        f"WHERE table_id = ? AND column_id IN ({marks})"
    )
    return session.arrow(*_restricted(sql, [table_id, *column_ids], cut), STATS_SCHEMA)


def _partition_columns(session: MetadataSession, table_id: int):
    rows = session.rows(
        "SELECT partition_id, partition_key_index, column_id, transform "
        "FROM ducklake_partition_column WHERE table_id = ? ORDER BY partition_id, partition_key_index",
        [table_id],
    )
    specs: dict[int, list[PartitionColumnEntry]] = {}
    for r in rows:
        specs.setdefault(int(r[0]), []).append(
            PartitionColumnEntry(int(r[0]), int(r[1]), int(r[2]), r[3])
        )
    return {k: tuple(v) for k, v in specs.items()}


def read_partition_values(session: MetadataSession, table_id: int, cut=None):
    """Partition values of every file of the table (or of those ``cut`` keeps, as in
    :func:`read_file_stats`), as an Arrow table."""
    sql = (
        "SELECT data_file_id, partition_key_index, partition_value "
        "FROM ducklake_file_partition_value WHERE table_id = ?"
    )
    return session.arrow(*_restricted(sql, [table_id], cut), PARTITION_VALUES_SCHEMA)


def _restricted(sql: str, params: list, cut) -> tuple[str, list]:
    """``sql`` and ``params`` with the ``(condition, params)`` of ``cut`` added, if any."""
    if cut is None:
        return sql, params
    return f"{sql} AND {cut[0]}", [*params, *cut[1]]
