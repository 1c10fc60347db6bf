"""Metadata queries behind time travel, the change feed and the lake-inspection functions.

Same rules as the other query modules (``metadata``): every function takes an open :class:`MetadataSession`,
SQL is dialect neutral (DuckDB, SQLite, PostgreSQL) with ``?`` placeholders, and rows
come back as frozen dataclasses. Snapshot times are parsed in Python because SQLite
stores them as text with a variable-length fraction.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from ._backend import MetadataSession
from ._change_tokens import ChangeToken, parse_changes_made
from ._sql import as_bool, as_timestamp, live, opt_int

__all__ = [
    "FileListEntry",
    "SnapshotRecord",
    "TableSizeEntry",
    "list_file_rows",
    "list_snapshot_records",
    "table_sizes",
]


@dataclass(frozen=True, slots=True)
class SnapshotRecord:
    """One ``ducklake_snapshot`` row joined with its ``ducklake_snapshot_changes`` row.

    Attributes:
        changes: the parsed ``changes_made`` tokens; ``None`` when the snapshot has no
            changes row (then nothing is known about what it changed).
    """

    snapshot_id: int
    snapshot_time: _dt.datetime
    schema_version: int
    changes: tuple[ChangeToken, ...] | None
    author: str | None
    commit_message: str | None
    commit_extra_info: str | None


@dataclass(frozen=True, slots=True)
class TableSizeEntry:
    """A table live at a snapshot with the count and size of its live files."""

    table_name: str
    schema_id: int
    table_id: int
    table_uuid: str
    file_count: int
    file_size_bytes: int
    delete_file_count: int
    delete_file_size_bytes: int


@dataclass(frozen=True, slots=True)
class FileListEntry:
    """A live data file with its live delete file, as ``ducklake_list_files`` shows them.

    Paths are as stored (relative to the table directory when ``*_relative``).
    """

    path: str
    path_is_relative: bool
    file_size_bytes: int | None
    footer_size: int | None
    delete_path: str | None
    delete_path_is_relative: bool | None
    delete_file_size_bytes: int | None
    delete_footer_size: int | None


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8")
    return str(value)


def list_snapshot_records(session: MetadataSession) -> list[SnapshotRecord]:
    """Every existing snapshot (expired ones are gone), in id order."""
    rows = session.rows(
        "SELECT s.snapshot_id, s.snapshot_time, s.schema_version, c.changes_made, c.author, "
        "c.commit_message, c.commit_extra_info FROM ducklake_snapshot s "
        "LEFT JOIN ducklake_snapshot_changes c ON c.snapshot_id = s.snapshot_id "
        "ORDER BY s.snapshot_id"
    )
    return [
        SnapshotRecord(
            snapshot_id=int(r[0]),
            snapshot_time=as_timestamp(r[1]),
            schema_version=int(r[2]),
            changes=None if r[3] is None else parse_changes_made(_text(r[3])),
            author=_text(r[4]),
            commit_message=_text(r[5]),
            commit_extra_info=_text(r[6]),
        )
        for r in rows
    ]


def _file_totals(table: str, alias: str) -> str:
    where = f"{alias}.table_id = t.table_id AND {live(alias)}"
    return (
        f"(SELECT count(*) FROM {table} {alias} WHERE {where}), "
        f"(SELECT sum({alias}.file_size_bytes) FROM {table} {alias} WHERE {where})"
    )


def table_sizes(session: MetadataSession, snapshot: int) -> list[TableSizeEntry]:
    """Tables live at the snapshot with their live data and delete files counted.

    Like the extension's ``ducklake_table_info``, delete files are counted by table and
    liveness, so a delete file that outlived its data file (a compaction leaves
    them behind) counts.
    """
    rows = session.rows(
        "SELECT t.table_name, t.schema_id, t.table_id, t.table_uuid, "
        f"{_file_totals('ducklake_data_file', 'd')}, {_file_totals('ducklake_delete_file', 'x')} "
        f"FROM ducklake_table t WHERE {live('t')} ORDER BY t.table_id",
        [snapshot] * 10,
    )
    return [
        TableSizeEntry(
            table_name=r[0],
            schema_id=int(r[1]),
            table_id=int(r[2]),
            table_uuid=str(r[3]),
            file_count=int(r[4] or 0),
            file_size_bytes=int(r[5] or 0),
            delete_file_count=int(r[6] or 0),
            delete_file_size_bytes=int(r[7] or 0),
        )
        for r in rows
    ]


def list_file_rows(session: MetadataSession, table_id: int, snapshot: int) -> list[FileListEntry]:
    """Step 5 of the read path, reduced to what a file listing shows."""
    rows = session.rows(
        "SELECT d.path, d.path_is_relative, d.file_size_bytes, d.footer_size, "
        "x.path, x.path_is_relative, x.file_size_bytes, x.footer_size "
        "FROM ducklake_data_file d LEFT JOIN ("
        f"  SELECT * FROM ducklake_delete_file WHERE table_id = ? AND {live()}"
        ") x ON x.data_file_id = d.data_file_id "
        f"WHERE d.table_id = ? AND {live('d')} ORDER BY d.data_file_id",
        [table_id, snapshot, snapshot, table_id, snapshot, snapshot],
    )
    return [
        FileListEntry(
            path=r[0],
            path_is_relative=as_bool(r[1]),
            file_size_bytes=opt_int(r[2]),
            footer_size=opt_int(r[3]),
            delete_path=r[4],
            delete_path_is_relative=None if r[4] is None else as_bool(r[5]),
            delete_file_size_bytes=opt_int(r[6]),
            delete_footer_size=opt_int(r[7]),
        )
        for r in rows
    ]


def files_added_per_snapshot(
    session: MetadataSession, table_id: int, after: int, end: int
) -> dict[int, tuple[int, int]]:
    """Snapshot -> (data files, their bytes) the table gained in each snapshot of
    ``(after, end]`` (what a stream's micro-batch limits count)."""
    rows = session.rows(
        "SELECT begin_snapshot, count(*), sum(file_size_bytes) FROM ducklake_data_file "
        "WHERE table_id = ? AND begin_snapshot > ? AND begin_snapshot <= ? "
        "GROUP BY begin_snapshot",
        [table_id, after, end],
    )
    return {int(r[0]): (int(r[1]), int(r[2] or 0)) for r in rows}
