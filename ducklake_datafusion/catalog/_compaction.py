"""The catalog's side of compaction: the files a merge may take, and the rows of a merge.

:func:`compaction_candidates` reads a table's live data files as DuckDB's
``ducklake_merge_adjacent_files`` selects them (``GetFilesForCompaction`` in
duckdb/ducklake 1.5): below the size limits, in ``begin_snapshot``, ``row_id_start``,
``data_file_id`` order, each with the schema version the table had when it began, its
partition and whether it ever had a delete file or an inlined deletion (such files are
never merged).

:func:`merge_file_rows` writes what DuckDB writes for one merged file: the sources' rows
removed outright (``ducklake_data_file``, their statistics and partition values: not
ended, since the merged file carries each row's snapshot and every snapshot reads it), their
files scheduled for deletion (paths relative to the lake's data path), and the merged
file's row with the first source's ``begin_snapshot``, its ``row_id_start`` when the
sources' row ids were contiguous (else NULL: the file carries them) and ``partial_max``.
The table's statistics are left as they are, as DuckDB leaves them.
"""

from __future__ import annotations

import bisect
import datetime as _dt
from dataclasses import dataclass

from ..errors import CommitConflictError
from ._commit_rows import insert_data_file, insert_rows
from ._delete_rows import lake_relative
from ._rewrite_rows import rewrite_file_rows
from ._transaction import MergeFiles

__all__ = ["CompactionCandidate", "compaction_candidates", "merge_file_rows", "rewrite_file_rows"]


@dataclass(frozen=True, slots=True)
class CompactionCandidate:
    """A live data file of a table, as compaction sees it."""

    data_file_id: int
    begin_snapshot: int
    row_id_start: int | None
    record_count: int
    file_size_bytes: int
    partial_max: int | None
    partition_id: int | None
    partition_values: tuple[str | None, ...]
    schema_version: int | None
    # any delete file (ended ones too) or inlined deletion: never merged
    has_deletes: bool
    mapping_id: int | None
    # the newest delete file: its id and count when live (else ``None`` and 0), whether
    # it ended; and the positions deleted through the catalog (``rewrite_data_files``)
    live_delete_file: int | None = None
    live_deleted: int = 0
    last_delete_ended: bool = False
    inlined_deleted: int = 0

    @property
    def deleted_share(self) -> float:
        """The share of the file's rows deleted now."""
        deleted = self.live_deleted + self.inlined_deleted
        return deleted / self.record_count if self.record_count else 0.0

    @property
    def last_snapshot(self) -> int:
        """The newest snapshot whose rows the file holds."""
        return self.partial_max if self.partial_max is not None else self.begin_snapshot


def compaction_candidates(
    session,
    table_id: int,
    *,
    min_file_size: int | None = None,
    max_file_size: int | None = None,
) -> list[CompactionCandidate]:
    """The table's live data files of at least ``min_file_size`` and below
    ``max_file_size`` bytes (any size: ``None``), in DuckDB's order (``begin_snapshot``,
    then ``row_id_start`` with NULL last, then ``data_file_id``)."""
    sql = (
        "SELECT data_file_id, begin_snapshot, row_id_start, record_count, file_size_bytes, "
        "partial_max, partition_id, mapping_id FROM ducklake_data_file "
        "WHERE table_id = ? AND end_snapshot IS NULL"
    )
    params: list = [table_id]
    if max_file_size is not None:
        sql += " AND file_size_bytes < ?"
        params.append(int(max_file_size))
    if min_file_size is not None:
        sql += " AND file_size_bytes >= ?"
        params.append(int(min_file_size))
    files = session.rows(sql, params)
    if not files:
        return []
    newest: dict[int, tuple] = {}  # data file -> (begin, delete file id, end, count)
    for file_id, delete_id, begin, end, count in session.rows(
        "SELECT data_file_id, delete_file_id, begin_snapshot, end_snapshot, delete_count "
        "FROM ducklake_delete_file WHERE table_id = ?",
        [table_id],
    ):
        held = newest.get(int(file_id))
        if held is None or (int(begin), int(delete_id)) > (held[0], held[1]):
            newest[int(file_id)] = (int(begin), int(delete_id), end, int(count or 0))
    inlined_counts: dict[int, int] = {}
    inlined = f"ducklake_inlined_delete_{int(table_id)}"
    if session.has_table(inlined):
        inlined_counts = {
            int(r[0]): int(r[1])
            for r in session.rows(f'SELECT file_id, count(*) FROM "{inlined}" GROUP BY file_id')
        }
    with_deletes = set(newest) | set(inlined_counts)
    values: dict[int, dict[int, str | None]] = {}
    for file_id, index, value in session.rows(
        "SELECT data_file_id, partition_key_index, partition_value "
        "FROM ducklake_file_partition_value WHERE table_id = ?",
        [table_id],
    ):
        values.setdefault(int(file_id), {})[int(index)] = value
    versions = _schema_versions(session, table_id)
    starts = [begin for begin, _ in versions]
    result = []
    for file_id, begin, row_id_start, records, size, partial_max, partition_id, mapping in files:
        file_id, begin = int(file_id), int(begin)
        at = bisect.bisect_right(starts, begin) - 1
        keys = values.get(file_id, {})
        result.append(
            CompactionCandidate(
                data_file_id=file_id,
                begin_snapshot=begin,
                row_id_start=None if row_id_start is None else int(row_id_start),
                record_count=int(records),
                file_size_bytes=int(size),
                partial_max=None if partial_max is None else int(partial_max),
                partition_id=None if partition_id is None else int(partition_id),
                partition_values=tuple(keys[i] for i in sorted(keys)),
                schema_version=versions[at][1] if at >= 0 else None,
                has_deletes=file_id in with_deletes,
                mapping_id=None if mapping is None else int(mapping),
                **_deletes_of(newest.get(file_id), inlined_counts.get(file_id, 0)),
            )
        )
    result.sort(
        key=lambda c: (
            c.begin_snapshot,
            c.row_id_start is None,
            c.row_id_start or 0,
            c.data_file_id,
        )
    )
    return result


def _deletes_of(newest: tuple | None, inlined: int) -> dict:
    if newest is None:
        return {"inlined_deleted": inlined}
    _, delete_id, end, count = newest
    live = end is None
    return {
        "live_delete_file": delete_id if live else None,
        "live_deleted": count if live else 0,
        "last_delete_ended": not live,
        "inlined_deleted": inlined,
    }


def _schema_versions(session, table_id: int) -> list[tuple[int, int]]:
    """``(begin_snapshot, schema_version)`` of the table's column layouts, oldest first."""
    if not session.has_table("ducklake_schema_versions"):
        return []
    rows = session.rows(
        "SELECT begin_snapshot, schema_version FROM ducklake_schema_versions "
        "WHERE table_id = ? ORDER BY begin_snapshot",
        [table_id],
    )
    return [(int(b), int(v)) for b, v in rows]


def merge_file_rows(session, action: MergeFiles, table_id: int, data_file_id: int, what: str):
    """One merged file's rows in place of its sources' (module docstring)."""
    marks, sources = session.id_list(action.sources)
    old = session.rows(
        "SELECT d.data_file_id, d.path, d.path_is_relative, t.path, t.path_is_relative, "
        "s.path, s.path_is_relative FROM ducklake_data_file d "
        "JOIN ducklake_table t ON t.table_id = d.table_id AND t.end_snapshot IS NULL "
        "JOIN ducklake_schema s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL "
        f"WHERE d.table_id = ? AND d.end_snapshot IS NULL AND d.data_file_id IN ({marks})",
        [table_id, *sources],
    )
    if len(old) != len(action.sources):
        count = len(action.sources)
        raise CommitConflictError(
            f"{what}: {count - len(old)} of the {count} files to merge were "
            "ended or compacted by another commit meanwhile; nothing was committed, merge again"
        )
    for name in ("ducklake_file_column_stats", "ducklake_file_partition_value"):
        session.execute(
            f"DELETE FROM {name} WHERE table_id = ? AND data_file_id IN ({marks})",
            [table_id, *sources],
        )
    if session.has_table("ducklake_file_variant_stats"):
        session.execute(
            f"DELETE FROM ducklake_file_variant_stats WHERE data_file_id IN ({marks})", sources
        )
    session.execute(f"DELETE FROM ducklake_data_file WHERE data_file_id IN ({marks})", sources)
    now = session.adapt(_dt.datetime.now(_dt.timezone.utc))
    scheduled = []
    for file_id, path, relative, table_path, table_rel, schema_path, schema_rel in sorted(old):
        scheduled.append(
            {
                "data_file_id": int(file_id),
                "path": lake_relative(
                    path, relative, table_path, table_rel, schema_path, schema_rel
                ),
                "path_is_relative": bool(relative and table_rel and schema_rel),
                "schedule_start": now,
            }
        )
    insert_rows(session, "ducklake_files_scheduled_for_deletion", scheduled)
    merged = action.file
    insert_data_file(
        session,
        merged,
        data_file_id,
        table_id,
        begin_snapshot=action.begin_snapshot,
        row_id_start=action.row_id_start,
        partition_id=action.partition_id,
        partial_max=action.partial_max,
    )
