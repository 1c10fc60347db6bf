"""What a flush of inlined data reads: every row a table keeps in the catalog, and every
position deleted through it, as DuckDB 1.5's ``ducklake_flush_inlined_data`` reads them.

* :func:`inlined_rows_to_flush`: per inlined-data table (``ducklake_inlined_data_<t>_<v>``,
  oldest schema version first), every row that began at or before the snapshot, deleted
  rows and an update's old versions too (DuckDB's ``ReadAllInlinedDataForFlush``), ordered
  by row id then snapshot, with the columns the table had at that schema version.
* :func:`inlined_deletions_to_flush`: the positions of ``ducklake_inlined_delete_<t>``
  with their snapshots, per data file, with the file and its delete files live at the
  snapshot (which a flushed delete file replaces).
* :func:`has_sort_keys`: whether the table has a sort order (``SET SORTED BY``) at the
  snapshot, by which DuckDB orders flushed rows.

The only identifiers formatted into SQL are inlined-table names read from the catalog's own
registry and checked against a strict pattern first, and the delete table's own name,
formatted from an integer.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ._backend import MetadataSession
from ._file_details import _inlined_select_list, _inlined_system_columns, _inlined_tables
from ._format import INLINED_SYSTEM_COLUMNS
from ._models import ColumnEntry
from ._names import read_columns
from ._sql import as_bool, live, opt_int

__all__ = [
    "DeletedPositions",
    "InlinedDeletions",
    "InlinedRows",
    "LiveDeleteFile",
    "has_sort_keys",
    "inlined_deletions_to_flush",
    "inlined_rows_to_flush",
]

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class InlinedRows:
    """One inlined-data table's rows to flush: ``rows`` starts with the system columns
    (named as DuckLake 1.1 names them, whatever the catalog's format), then the columns of
    ``layout`` (the table's columns at ``layout_snapshot``, where its schema version began),
    in DuckDB's flush order (row id, then snapshot)."""

    table_name: str
    schema_version: int
    layout_snapshot: int
    layout: tuple[ColumnEntry, ...]
    rows: pa.Table


@dataclass(frozen=True, slots=True)
class LiveDeleteFile:
    """A delete file live at the flush's snapshot (the one a flushed file replaces)."""

    delete_file_id: int
    path: str
    path_is_relative: bool
    begin_snapshot: int
    file_format: str
    delete_count: int | None
    file_size_bytes: int | None
    footer_size: int | None
    encrypted: bool


@dataclass(frozen=True, slots=True)
class DeletedPositions:
    """The positions of one data file deleted through the catalog up to the snapshot, each
    with its snapshot; the file (``live``: not ended at the snapshot) and its live delete
    files."""

    data_file_id: int
    path: str
    path_is_relative: bool
    record_count: int
    live: bool
    positions: tuple[int, ...]
    snapshots: tuple[int, ...]
    delete_files: tuple[LiveDeleteFile, ...]


@dataclass(frozen=True, slots=True)
class InlinedDeletions:
    """A table's positions deleted through the catalog up to the snapshot: ``rows`` of
    ``ducklake_inlined_delete_<t>`` in all (what the flush removes there), per data file."""

    rows: int
    files: tuple[DeletedPositions, ...]


def inlined_rows_to_flush(
    session: MetadataSession, table_id: int, snapshot: int
) -> tuple[InlinedRows, ...]:
    """Every inlined-data table of the table, oldest schema version first, with its rows
    that began at or before ``snapshot`` (none: an empty table is listed too)."""
    found = []
    for entry in _inlined_tables(session, table_id):
        name = entry.table_name
        if not _is_inlined_data(name, table_id) or not session.has_table(name):
            continue
        layout = read_columns(session, table_id, entry.layout_snapshot)
        system = _inlined_system_columns(session, name)
        row_id, begin = system.row_id, system.begin_snapshot
        rows = session.arrow(
            f"SELECT {_inlined_select_list(session, layout, system)} FROM {name} "
            f"WHERE {begin} <= ? ORDER BY {row_id}, {begin}",
            [snapshot],
        )
        names = list(INLINED_SYSTEM_COLUMNS.names) + rows.column_names[3:]
        found.append(
            InlinedRows(
                name,
                entry.schema_version,
                entry.layout_snapshot,
                layout,
                rows.rename_columns(names),
            )
        )
    return tuple(found)


def inlined_deletions_to_flush(
    session: MetadataSession, table_id: int, snapshot: int
) -> InlinedDeletions:
    """The table's positions deleted through the catalog up to ``snapshot``, per data
    file (in data file id order, positions ascending)."""
    name = f"ducklake_inlined_delete_{int(table_id)}"
    if not session.has_table(name):
        return InlinedDeletions(0, ())
    per_file: dict[int, dict[int, int]] = {}
    rows = session.rows(
        f"SELECT file_id, row_id, begin_snapshot FROM {name} WHERE begin_snapshot <= ?",
        [snapshot],
    )
    for file_id, position, begin in rows:
        positions = per_file.setdefault(int(file_id), {})
        position, begin = int(position), int(begin)
        positions[position] = min(begin, positions.get(position, begin))
    if not per_file:
        return InlinedDeletions(0, ())
    ids = sorted(per_file)
    files: dict[int, tuple] = {}
    deletes: dict[int, list[LiveDeleteFile]] = {i: [] for i in ids}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ", ".join("?" for _ in chunk)
        for row in session.rows(
            "SELECT data_file_id, path, path_is_relative, record_count, begin_snapshot, "
            f"end_snapshot FROM ducklake_data_file WHERE data_file_id IN ({marks})",
            chunk,
        ):
            files[int(row[0])] = row[1:]
        for row in session.rows(
            "SELECT data_file_id, delete_file_id, path, path_is_relative, begin_snapshot, "
            "format, delete_count, file_size_bytes, footer_size, encryption_key "
            f"FROM ducklake_delete_file WHERE table_id = ? AND {live()} "
            f"AND data_file_id IN ({marks}) ORDER BY delete_file_id",
            [table_id, snapshot, snapshot, *chunk],
        ):
            deletes[int(row[0])].append(
                LiveDeleteFile(
                    delete_file_id=int(row[1]),
                    path=str(row[2]),
                    path_is_relative=as_bool(row[3]),
                    begin_snapshot=int(row[4]),
                    file_format=str(row[5] or "parquet").lower(),
                    delete_count=opt_int(row[6]),
                    file_size_bytes=opt_int(row[7]),
                    footer_size=opt_int(row[8]),
                    encrypted=row[9] is not None,
                )
            )
    found = []
    for file_id in ids:
        if file_id not in files:
            continue  # (a file no longer in the catalog: its positions delete nothing)
        path, relative, records, begin, end = files[file_id]
        positions = per_file[file_id]
        order = sorted(positions)
        found.append(
            DeletedPositions(
                data_file_id=file_id,
                path=str(path),
                path_is_relative=as_bool(relative),
                record_count=int(records),
                live=int(begin) <= snapshot and (end is None or snapshot < int(end)),
                positions=tuple(order),
                snapshots=tuple(positions[p] for p in order),
                delete_files=tuple(deletes[file_id]),
            )
        )
    return InlinedDeletions(len(rows), tuple(found))


def has_sort_keys(session: MetadataSession, table_id: int, snapshot: int) -> bool:
    """Whether the table has sort keys (``ALTER TABLE ... SET SORTED BY``) at ``snapshot``."""
    if not session.has_table("ducklake_sort_info") or not session.has_table(
        "ducklake_sort_expression"
    ):
        return False
    rows = session.rows(
        "SELECT count(*) FROM ducklake_sort_info i JOIN ducklake_sort_expression e "
        f"ON e.sort_id = i.sort_id AND e.table_id = i.table_id WHERE i.table_id = ? AND {live('i')}",
        [table_id, snapshot, snapshot],
    )
    return int(rows[0][0]) > 0


def _is_inlined_data(name: str, table_id: int) -> bool:
    rest = name.removeprefix(f"ducklake_inlined_data_{int(table_id)}_")
    return rest != name and rest.isdigit()
