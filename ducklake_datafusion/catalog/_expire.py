"""The catalog's side of expiry and cleanup, as DuckDB 1.5's metadata manager writes it.

* :func:`expire_snapshot_rows` (``DeleteSnapshots``): the snapshots' rows go; then every
  table, data file and delete file no remaining snapshot can read (ended before the oldest
  one left, or of a table gone entirely) loses its rows, and its files are scheduled in
  ``ducklake_files_scheduled_for_deletion``; schemas, views, tags and macros no snapshot
  reads go too. No snapshot is written and no file is deleted from storage.
* :func:`scheduled_files` / :func:`forget_scheduled`: what ``cleanup_old_files`` deletes,
  and the rows it removes once it did.
* :func:`known_files`: every file the catalog names (any data or delete file row, ended
  ones too, and the scheduled ones): what ``delete_orphaned_files`` never deletes.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

from ._commit_rows import insert_rows
from ._delete_rows import lake_relative
from ._sql import as_timestamp

__all__ = [
    "KnownFile",
    "ScheduledFile",
    "expire_snapshot_rows",
    "forget_scheduled",
    "known_files",
    "scheduled_files",
]

# a row no remaining snapshot reads: ended, and no snapshot in [begin, end)
_UNREAD = (
    "end_snapshot IS NOT NULL AND NOT EXISTS (SELECT snapshot_id FROM ducklake_snapshot s "
    "WHERE s.snapshot_id >= {t}.begin_snapshot AND s.snapshot_id < {t}.end_snapshot)"
)
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class ScheduledFile:
    """A ``ducklake_files_scheduled_for_deletion`` row: ``path`` relative to the lake's
    data path when ``path_is_relative``."""

    data_file_id: int
    path: str
    path_is_relative: bool
    schedule_start: _dt.datetime


@dataclass(frozen=True, slots=True)
class KnownFile:
    """A file the catalog names: ``path`` relative to the lake's data path when
    ``path_is_relative``."""

    path: str
    path_is_relative: bool


def _in(session, sql: str, ids: Sequence[int], params: Sequence = ()) -> None:
    """Run ``sql`` (with a ``{}`` for the id list) for ``ids`` in chunks."""
    ids = list(ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        session.execute(sql.format(", ".join("?" for _ in chunk)), [*params, *chunk])


def _table_paths(session) -> dict[int, tuple]:
    """Each table id's path and its schema's (the newest row of each, ended or not)."""
    rows = session.rows(
        "SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative "
        "FROM ducklake_table t JOIN ducklake_schema s ON s.schema_id = t.schema_id "
        "ORDER BY t.begin_snapshot, s.begin_snapshot"
    )
    return {int(r[0]): tuple(r[1:]) for r in rows}


def _lake_path(paths: dict[int, tuple], table_id: int, path: str, relative) -> tuple[str, bool]:
    table_path, table_rel, schema_path, schema_rel = paths.get(
        int(table_id), (None, True, None, True)
    )
    lake_path = lake_relative(
        path, relative, table_path or "", table_rel, schema_path or "", schema_rel
    )
    return lake_path, bool(relative and table_rel and schema_rel)


def expire_snapshot_rows(session, snapshot_ids: Sequence[int]) -> int:
    """Remove ``snapshot_ids`` and what only they read (module docstring); the number of
    files scheduled for deletion."""
    _in(session, "DELETE FROM ducklake_snapshot WHERE snapshot_id IN ({})", snapshot_ids)
    _in(session, "DELETE FROM ducklake_snapshot_changes WHERE snapshot_id IN ({})", snapshot_ids)
    dead_tables = [
        int(r[0])
        for r in session.rows(
            # (no version of the table any remaining snapshot reads)
            f"SELECT DISTINCT t.table_id FROM ducklake_table t WHERE {_UNREAD.format(t='t')} "
            "AND NOT EXISTS (SELECT 1 FROM ducklake_table t2 WHERE t2.table_id = t.table_id "
            f"AND NOT ({_UNREAD.format(t='t2')}))"
        )
    ]
    paths = _table_paths(session)
    now = session.adapt(_dt.datetime.now(_dt.timezone.utc))
    dead_files = _rows_of(session, "ducklake_data_file", "data_file_id", dead_tables, [])
    scheduled = _schedule(session, paths, dead_files, now)
    for name in (
        "ducklake_data_file",
        "ducklake_file_column_stats",
        "ducklake_file_partition_value",
    ):
        _in(session, f"DELETE FROM {name} WHERE data_file_id IN ({{}})", [f[0] for f in dead_files])
    if session.has_table("ducklake_file_variant_stats"):
        _in(
            session,
            "DELETE FROM ducklake_file_variant_stats WHERE data_file_id IN ({})",
            [f[0] for f in dead_files],
        )
    dead_deletes = _rows_of(
        session, "ducklake_delete_file", "delete_file_id", dead_tables, [f[0] for f in dead_files]
    )
    scheduled += _schedule(session, paths, dead_deletes, now)
    _in(
        session,
        "DELETE FROM ducklake_delete_file WHERE delete_file_id IN ({})",
        [f[0] for f in dead_deletes],
    )
    if dead_tables:
        _forget_tables(session, dead_tables)
    for name in ("ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro"):
        if session.has_table(name):
            session.execute(f"DELETE FROM {name} WHERE {_UNREAD.format(t=name)}")
    for name in ("ducklake_macro_impl", "ducklake_macro_parameters"):
        if session.has_table(name) and session.has_table("ducklake_macro"):
            session.execute(
                f"DELETE FROM {name} WHERE NOT EXISTS (SELECT 1 FROM ducklake_macro m "
                f"WHERE m.macro_id = {name}.macro_id)"
            )
    if session.has_table("ducklake_name_mapping") and session.has_table("ducklake_column_mapping"):
        session.execute(
            "DELETE FROM ducklake_name_mapping WHERE NOT EXISTS (SELECT 1 FROM "
            "ducklake_column_mapping m WHERE m.mapping_id = ducklake_name_mapping.mapping_id)"
        )
    return scheduled


def _rows_of(session, table: str, id_column: str, dead_tables, dead_files) -> list[tuple]:
    """``(id, table_id, path, path_is_relative)`` of the file rows no snapshot reads."""
    found: dict[int, tuple] = {}
    for row in session.rows(
        f"SELECT {id_column}, table_id, path, path_is_relative FROM {table} t "
        f"WHERE {_UNREAD.format(t='t')}"
    ):
        found[int(row[0])] = row
    for column, ids in (("table_id", dead_tables), ("data_file_id", dead_files)):
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            for row in session.rows(
                f"SELECT {id_column}, table_id, path, path_is_relative FROM {table} "
                f"WHERE {column} IN ({', '.join('?' for _ in chunk)})",
                chunk,
            ):
                found[int(row[0])] = row
    return [found[k] for k in sorted(found)]


def _schedule(session, paths, files: list[tuple], now) -> int:
    rows = []
    for file_id, table_id, path, relative in files:
        lake_path, lake_relative_ = _lake_path(paths, table_id, path, relative)
        rows.append(
            {
                "data_file_id": int(file_id),
                "path": lake_path,
                "path_is_relative": lake_relative_,
                "schedule_start": now,
            }
        )
    insert_rows(session, "ducklake_files_scheduled_for_deletion", rows)
    return len(rows)


def _forget_tables(session, table_ids: list[int]) -> None:
    inlined = []
    if session.has_table("ducklake_inlined_data_tables"):
        marks = ", ".join("?" for _ in table_ids)
        inlined = [
            str(r[0])
            for r in session.rows(
                f"SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id IN ({marks})",
                table_ids,
            )
        ]
    inlined += [f"ducklake_inlined_delete_{int(t)}" for t in table_ids]
    for name in (
        "ducklake_table",
        "ducklake_table_stats",
        "ducklake_table_column_stats",
        "ducklake_partition_info",
        "ducklake_partition_column",
        "ducklake_column",
        "ducklake_column_tag",
        "ducklake_sort_info",
        "ducklake_sort_expression",
        "ducklake_schema_versions",
        "ducklake_inlined_data_tables",
        "ducklake_column_mapping",
    ):
        if session.has_table(name):
            _in(session, f"DELETE FROM {name} WHERE table_id IN ({{}})", table_ids)
    for name in inlined:
        if session.has_table(name):
            session.execute(f'DROP TABLE IF EXISTS "{name}"')


def scheduled_files(session, older_than: _dt.datetime | None) -> list[ScheduledFile]:
    """The files scheduled for deletion before ``older_than`` (all: ``None``)."""
    rows = session.rows(
        "SELECT data_file_id, path, path_is_relative, schedule_start "
        "FROM ducklake_files_scheduled_for_deletion ORDER BY data_file_id"
    )
    found = [ScheduledFile(int(r[0]), str(r[1]), bool(r[2]), as_timestamp(r[3])) for r in rows]
    if older_than is None:
        return found
    return [f for f in found if f.schedule_start < older_than]


def forget_scheduled(session, data_file_ids: Sequence[int]) -> None:
    """Remove the scheduled rows of files now deleted."""
    _in(
        session,
        "DELETE FROM ducklake_files_scheduled_for_deletion WHERE data_file_id IN ({})",
        data_file_ids,
    )


def known_files(session) -> list[KnownFile]:
    """Every file a catalog row names (module docstring)."""
    paths = _table_paths(session)
    known = []
    for table in ("ducklake_data_file", "ducklake_delete_file"):
        for table_id, path, relative in session.rows(
            f"SELECT table_id, path, path_is_relative FROM {table}"
        ):
            known.append(KnownFile(*_lake_path(paths, table_id, str(path), relative)))
    for path, relative in session.rows(
        "SELECT path, path_is_relative FROM ducklake_files_scheduled_for_deletion"
    ):
        known.append(KnownFile(str(path), bool(relative)))
    return known
