"""Steps 5-11 for one table at one snapshot: which of three ways its files are read.

A table's files (:class:`TableFiles`) can come from a full read of its file list, from
the previous lake version's memo refreshed with the rows changed since (``_refresh``), or,
for a filtered first query, from a cut that leaves out the files the catalog's
statistics exclude (``_file_cut``). This module makes that choice, memoises each answer
per lake version (``_session.per_version``) and counts what a cut left out; the reading
itself is done by ``_file_list`` and ``_file_details``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._backend import MetadataSession
from ._file_cut import StatsCut, file_summary, summary_of_rows
from ._file_details import read_file_stats, read_partition_values, table_files
from ._file_list import joined_delete_files, read_file_table
from ._models import TableEntry, TableFiles
from ._refresh import can_refresh, refreshed_table_files
from ._session import memoised, per_version
from ._sql import DATA_FILES_SCHEMA, DATA_FILES_SQL, DELETE_FILES_SCHEMA, DELETE_FILES_SQL

__all__ = ["file_summary_of", "read_table_files"]


def read_table_files(
    session: MetadataSession,
    table: TableEntry,
    snapshot: int,
    *,
    stats_columns: Iterable[int] = (),
    with_partitions: bool = False,
    cut=None,
) -> TableFiles:
    """Steps 5-11 for one table at one snapshot.

    Files, statistics and partition values come back as Arrow tables so that planning and
    pruning a table of 10,000 files stays in vectorised code. The result is memoised per
    lake version (see ``per_version``): repeated queries of an unchanged lake re-read
    nothing but the version.

    Args:
        stats_columns: column ids whose file statistics the pruner wants (none: skip).
        with_partitions: read partition specs and file partition values.
        cut: a ``_file_cut`` condition (``StatsCut``, ``DeletedCut``): read only the files
            it keeps, unless the table's whole file list is at hand (memoised, or
            refreshable from the previous lake version), which is cheaper to prune.
    """
    key = ("files", table.table_id, snapshot, tuple(sorted(set(stats_columns))), with_partitions)
    if cut is not None and cut.usable(session) and not _whole_list_at_hand(session, key):
        cut_key = ("cut", cut, *key[1:])
        return per_version(session, cut_key, lambda: _read_cut_table_files(session, cut, *key[1:]))

    def read() -> TableFiles:
        refreshed = refreshed_table_files(session, key)
        if refreshed is not None:
            return refreshed
        return _read_table_files(session, table.table_id, snapshot, key[3], with_partitions)

    return per_version(session, key, read)


def _whole_list_at_hand(session: MetadataSession, key: tuple) -> bool:
    """Whether the table's whole file list is cheaper than a cut: memoised for this lake
    version, or refreshable from the previous one's memo."""
    _, tid, snapshot, _, _ = key
    if memoised(session, key) is not None:
        return True
    if memoised(session, ("file_table", tid, snapshot)) is not None:
        return True
    return can_refresh(session, key)


# Kept files up to this many are named by id in the queries of their deletes and statistics.
_IDS_AS_PARAMETERS = 500


def _read_cut_table_files(
    session: MetadataSession,
    cut,
    tid: int,
    snapshot: int,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
) -> TableFiles:
    """Steps 5-11 for the files ``cut`` keeps (``catalog._file_cut``)."""

    condition, cut_params = cut.condition(session, tid, snapshot)
    params = [tid, snapshot, snapshot, *cut_params]
    data = session.arrow(f"{DATA_FILES_SQL} AND {condition}", params, DATA_FILES_SCHEMA)
    kept = (condition, cut_params)  # the other rows by the same condition, or by the ids:
    ids = data.column("data_file_id").to_pylist()
    if len(ids) <= _IDS_AS_PARAMETERS:  # the condition costs a scan of every statistic
        kept = (f"data_file_id IN ({', '.join('?' for _ in ids)})", ids) if ids else ("1 = 0", [])
    deletes = session.arrow(
        f"{DELETE_FILES_SQL} AND {kept[0]}",
        [tid, snapshot, snapshot, *kept[1]],
        DELETE_FILES_SCHEMA,
    )
    file_table, extra_delete_files = joined_delete_files(data, deletes)
    stats = read_file_stats(session, tid, list(stats_columns), kept)
    partitioned = (
        with_partitions and file_table.column("partition_id").null_count < file_table.num_rows
    )
    values = read_partition_values(session, tid, kept) if partitioned else None
    cut_away = 0
    if isinstance(cut, StatsCut):  # what the statistics left out counts as pruned
        cut_away = _summary(session, tid, snapshot, None).files - data.num_rows
    return table_files(
        session,
        tid,
        snapshot,
        file_table,
        extra_delete_files,
        stats_columns,
        with_partitions,
        stats=stats,
        partition_values=values,
        files_cut=cut_away,
    )


def file_summary_of(session: MetadataSession, table: TableEntry, snapshot: int):
    """``_file_cut.file_summary`` of the table, memoised per lake version: from the file
    list when it is at hand (memoised, or refreshable after a commit), else from one
    aggregate query (no file row read)."""
    return _summary(session, table.table_id, snapshot, table)


def _summary(session: MetadataSession, tid: int, snapshot: int, table: TableEntry | None):
    """The memoised summary; from the file list when ``table`` is given and its list is
    at hand, else from the aggregate query."""

    def compute():
        if table is not None and _whole_list_at_hand(session, ("files", tid, snapshot, (), False)):
            return summary_of_rows(read_table_files(session, table, snapshot).file_table)
        return file_summary(session, tid, snapshot)

    return per_version(session, ("file_summary", tid, snapshot), compute)


def _read_table_files(
    session: MetadataSession,
    tid: int,
    snapshot: int,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
) -> TableFiles:
    # Memoised on its own: the same snapshot is often read with other statistics columns
    # (the Rust scan's table() reads none, its scan() those of the query's filter).
    file_table, extra_delete_files = per_version(
        session, ("file_table", tid, snapshot), lambda: read_file_table(session, tid, snapshot)
    )
    return table_files(
        session, tid, snapshot, file_table, extra_delete_files, stats_columns, with_partitions
    )
