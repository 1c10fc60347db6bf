"""A table's files at a new lake version, from the rows that changed since the last one.

Every commit makes a new lake version, and the memo of the old one (``per_version``) would
otherwise be dropped whole: the next query of a 100,000-file table re-read every file,
delete and statistics row. Instead, when the query reads the new latest snapshot and the
previous version memoised the same table at its own latest snapshot, this module reads
only what changed:

* data files with an id at or above the old snapshot's ``next_file_id`` (every file a
  later commit registered: ids come from that counter, whatever ``begin_snapshot`` the
  writer gives a file, e.g. a delete file flushed into a past snapshot), and the ids of
  data files whose ``end_snapshot`` lies after the old snapshot;
* statistics, partition values and name mappings of the new files only;
* the live delete files, inlined rows and inlined deletes in full (they are few, and a
  new delete file may apply to any old data file).

Any doubt means a full read (``None`` here), so a refresh can never plan differently from
a fresh catalog: a time-travel query, a schema change anywhere in the lake between the two
snapshots (``schema_version``), a snapshot at or before the old one that disappeared
(expiry, a replaced catalog), or a live-file count that differs from the catalog's own.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from ._backend import MetadataSession
from ._file_details import table_files
from ._file_list import joined_delete_files, read_delete_files, sorted_by_file_id
from ._models import TableFiles
from ._session import memoised, per_version
from ._sql import DATA_FILES_SCHEMA, DATA_FILES_SQL, PARTITION_VALUES_SCHEMA, STATS_SCHEMA, live

__all__ = ["can_refresh", "refreshed_table_files"]

log = logging.getLogger("ducklake_datafusion")


def refreshed_table_files(session: MetadataSession, key: tuple) -> TableFiles | None:
    """``read_table_files``' answer for ``key`` built from the previous version's memo and
    the rows changed since, or None when only a full read is certain to be right."""
    found = _previous_memo(session, key)
    if found is None:
        return None
    old, old_latest, old_count = found
    _, tid, snapshot, _, _ = key
    if not _history_only_grew(session, old_latest, old_count, snapshot):
        return None
    next_file_id = _next_file_id(session, old_latest)
    refreshed = _refresh(session, old, tid, old_latest, snapshot, next_file_id, key)
    if refreshed is not None:
        log.debug("table %s: files refreshed from snapshot %s to %s", tid, old_latest, snapshot)
    return refreshed


def can_refresh(session: MetadataSession, key: tuple) -> bool:
    """Whether the previous version memoised ``key``'s table so that a refresh may be
    tried (no query: the history check comes with the refresh itself)."""
    return _previous_memo(session, key) is not None


def _previous_memo(session, key: tuple):
    """``(old TableFiles, old latest snapshot, old snapshot count)`` memoised by the
    previous lake version for ``key`` read at the new latest snapshot, or None."""
    _, tid, snapshot, stats_columns, with_partitions = key
    previous = session.cache.get("previous_version")
    if previous is None:
        return None
    (old_latest, old_count, _), memo = previous
    latest = session.lake_version()[0]
    if snapshot != latest or latest <= old_latest:
        return None
    old = memo.get(("files", tid, old_latest, stats_columns, with_partitions))
    return None if old is None else (old, old_latest, old_count)


def _history_only_grew(session, old_latest: int, old_count: int, snapshot: int) -> bool:
    """No snapshot up to the old latest was removed, and no schema changed since it."""
    kept = session.rows(
        "SELECT count(*) FROM ducklake_snapshot WHERE snapshot_id <= ?", [old_latest]
    )
    if int(kept[0][0]) != old_count:
        return False
    versions = session.rows(
        "SELECT DISTINCT schema_version FROM ducklake_snapshot "
        "WHERE snapshot_id >= ? AND snapshot_id <= ?",
        [old_latest, snapshot],
    )
    return len(versions) == 1


def _next_file_id(session, snapshot: int) -> int:
    return int(
        session.rows(
            "SELECT next_file_id FROM ducklake_snapshot WHERE snapshot_id = ?", [snapshot]
        )[0][0]
    )


def _refresh(session, old: TableFiles, tid, old_latest, snapshot, next_file_id, key):
    _, _, _, stats_columns, with_partitions = key
    # The file rows are shared by every key of the table's snapshot (the Rust scan's
    # table() reads no statistics, its scan() those of the query's filter): refreshed once.
    shared_key = ("file_table", tid, snapshot)
    shared = memoised(session, shared_key)
    if shared is None:
        shared = _refreshed_file_rows(session, old, tid, old_latest, snapshot, next_file_id)
        if shared is None:
            return None
        per_version(session, shared_key, lambda: shared)
    file_table, extra = shared
    stats = _with_new_rows(
        session,
        old.stats,
        "ducklake_file_column_stats",
        tid,
        next_file_id,
        STATS_SCHEMA,
        stats_columns,
    )
    values = None
    if with_partitions and old.partition_values is not None:
        values = _with_new_rows(
            session,
            old.partition_values,
            "ducklake_file_partition_value",
            tid,
            next_file_id,
            PARTITION_VALUES_SCHEMA,
        )
    return table_files(
        session,
        tid,
        snapshot,
        file_table,
        extra,
        stats_columns,
        with_partitions,
        stats=stats,
        partition_values=values,
        name_mappings=old.name_mappings,
    )


def _refreshed_file_rows(session, old: TableFiles, tid, old_latest, snapshot, next_file_id):
    """``(file_table, extra_delete_files)`` of the new snapshot from the old memo and the
    rows changed since, or None when a row is out of this refresh's sight."""
    live_params = [tid, snapshot, snapshot]
    added = session.arrow(
        DATA_FILES_SQL + " AND data_file_id >= ?", [*live_params, next_file_id], DATA_FILES_SCHEMA
    )
    ended = [
        int(r[0])
        for r in session.rows(
            "SELECT data_file_id FROM ducklake_data_file "
            "WHERE table_id = ? AND end_snapshot > ? AND end_snapshot <= ?",
            [tid, old_latest, snapshot],
        )
    ]
    kept = old.file_table.select(DATA_FILES_SCHEMA.names)
    if ended:
        gone = pc.is_in(kept.column("data_file_id"), value_set=pa.array(ended, pa.int64()))
        kept = kept.filter(pc.invert(gone))
    data = sorted_by_file_id(pa.concat_tables([kept.cast(DATA_FILES_SCHEMA), added]))
    count = session.rows(
        f"SELECT count(*) FROM ducklake_data_file WHERE table_id = ? AND {live()}", live_params
    )
    if int(count[0][0]) != data.num_rows:
        return None  # a row this refresh cannot see: read everything
    return joined_delete_files(data, read_delete_files(session, tid, snapshot))


def _with_new_rows(session, old, table, tid, next_file_id, schema, column_ids=None):
    """``old`` rows of a per-file table plus those of the files registered since."""
    if old is None:
        return None
    names = ", ".join(schema.names)
    sql = f"SELECT {names} FROM {table} WHERE table_id = ? AND data_file_id >= ?"
    params = [tid, next_file_id]
    if column_ids is not None:
        sql += f" AND column_id IN ({', '.join('?' for _ in column_ids)})"
        params += list(column_ids)
    new = session.arrow(sql, params, schema)
    return pa.concat_tables([old.cast(schema), new]) if new.num_rows else old
