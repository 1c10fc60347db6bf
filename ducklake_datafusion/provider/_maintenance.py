"""The Python API of table maintenance: ``DuckLakeCatalog``'s methods named as DuckDB's
functions (``lake.merge_adjacent_files(...)`` is ``CALL ducklake_merge_adjacent_files``),
each a call into the engine-neutral ``maintain`` package."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from ..catalog import CommitOptions, SnapshotRecord
from ..maintain import (
    CheckpointResult,
    FlushResult,
    MergeResult,
    checkpoint,
    cleanup_old_files,
    delete_orphaned_files,
    expire_snapshots,
    flush_inlined_data,
    merge_adjacent_files,
    rewrite_data_files,
    split_table_argument,
)

__all__ = ["MaintenanceMethods"]


class MaintenanceMethods:
    """Mixed into ``DuckLakeCatalog`` (its ``lake``)."""

    def merge_adjacent_files(
        self,
        table: str | None = None,
        *,
        schema: str | None = None,
        max_compacted_files: int | None = None,
        min_file_size: int | None = None,
        max_file_size: int | None = None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> list[MergeResult]:
        """Merge a table's small files (every table's when ``table`` is ``None``) into
        files up to the lake's ``target_file_size``, as DuckDB's
        ``ducklake_merge_adjacent_files`` does, in one new snapshot.

        Files that ever had deleted rows are left as they are (``rewrite_data_files``
        rewrites those); each merged row keeps its snapshot and row id, so time travel and
        the change feed read what they read before. The sources leave the catalog and are
        scheduled for deletion (``cleanup_old_files`` deletes them).

        Args:
            table: ``"table"`` (in ``schema``, default ``main``) or ``"schema.table"``.
            max_compacted_files: at most this many merged files per table.
            min_file_size / max_file_size: only files of at least / below this many bytes.

        Returns:
            One :class:`~ducklake_datafusion.maintain.MergeResult` per merged file (empty:
            nothing to merge, no snapshot).
        """
        schema, table = split_table_argument(table, schema)
        return merge_adjacent_files(
            self.lake,
            table,
            schema=schema,
            max_compacted_files=max_compacted_files,
            min_file_size=min_file_size,
            max_file_size=max_file_size,
            options=CommitOptions(author, commit_message, commit_extra_info),
        )

    def rewrite_data_files(
        self,
        table: str | None = None,
        *,
        schema: str | None = None,
        delete_threshold: float | None = None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> list[MergeResult]:
        """Rewrite the files of a table (every table's when ``table`` is ``None``) whose
        deleted share is at least ``delete_threshold`` (default: the lake's
        ``rewrite_delete_threshold``, else 0.95) to their live rows, each keeping its row
        id, as DuckDB's ``ducklake_rewrite_data_files`` does, in one new snapshot. Earlier
        snapshots still read the old files (``expire_snapshots`` then
        ``cleanup_old_files`` remove them). One result per file written."""
        schema, table = split_table_argument(table, schema)
        return rewrite_data_files(
            self.lake,
            table,
            schema=schema,
            delete_threshold=delete_threshold,
            options=CommitOptions(author, commit_message, commit_extra_info),
        )

    def flush_inlined_data(
        self,
        table: str | None = None,
        *,
        schema: str | None = None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> list[FlushResult]:
        """Write the rows inlined in the catalog (every table's when ``table`` is ``None``)
        to Parquet files, as DuckDB's ``ducklake_flush_inlined_data`` does, in one new
        snapshot: each row keeps its row id and snapshot, deleted rows go to delete files,
        so every snapshot reads what it read before. One result per table with rows
        flushed (empty: nothing inlined, no snapshot)."""
        schema, table = split_table_argument(table, schema)
        return flush_inlined_data(
            self.lake,
            table,
            schema=schema,
            options=CommitOptions(author, commit_message, commit_extra_info),
        )

    def checkpoint(
        self,
        *,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> CheckpointResult:
        """What DuckDB's ``CHECKPOINT`` does on a DuckLake catalog: flush inlined data,
        expire snapshots (by the lake's ``expire_older_than``; none when unset), merge
        adjacent files, rewrite files with deletes, delete old and orphaned files (by
        ``delete_older_than``, 2 days), in that order, each step with the lake's settings
        and its own snapshot (at most three). Returns what each step did."""
        return checkpoint(
            self.lake, options=CommitOptions(author, commit_message, commit_extra_info)
        )

    def expire_snapshots(
        self,
        *,
        older_than: _dt.datetime | None = None,
        versions: Sequence[int] | None = None,
        dry_run: bool = False,
    ) -> list[SnapshotRecord]:
        """Expire snapshots as DuckDB's ``ducklake_expire_snapshots`` does: those taken
        before ``older_than`` or named in ``versions`` (neither: before now minus the lake's
        ``expire_older_than``; nothing when it is unset), never the latest. What only they
        read leaves the catalog and its files are scheduled for deletion
        (``cleanup_old_files`` deletes them); time travel to them ends. Returns the
        snapshots expired (with ``dry_run``: that would be, and nothing changes)."""
        return expire_snapshots(
            self.lake, older_than=older_than, versions=versions, dry_run=dry_run
        )

    def cleanup_old_files(
        self,
        *,
        older_than: _dt.datetime | None = None,
        cleanup_all: bool = False,
        dry_run: bool = False,
    ) -> list[str]:
        """Delete the files scheduled for deletion (by compaction, expiry, replaced delete
        files) before ``older_than`` (default: now minus the lake's ``delete_older_than``,
        2 days; every one with ``cleanup_all``), as DuckDB's ``ducklake_cleanup_old_files``.
        Returns their URLs (with ``dry_run``: those it would delete)."""
        return cleanup_old_files(
            self.lake, older_than=older_than, cleanup_all=cleanup_all, dry_run=dry_run
        )

    def delete_orphaned_files(
        self,
        *,
        older_than: _dt.datetime | None = None,
        cleanup_all: bool = False,
        dry_run: bool = False,
    ) -> list[str]:
        """Delete the ``.parquet`` files under the data path that no catalog row names (a
        failed writer's leftovers) and that were written before ``older_than`` (default:
        now minus the lake's ``delete_older_than``, 2 days, so a file a commit is writing
        is never taken), as DuckDB's ``ducklake_delete_orphaned_files``. Returns their URLs
        (with ``dry_run``: those it would delete)."""
        return delete_orphaned_files(
            self.lake, older_than=older_than, cleanup_all=cleanup_all, dry_run=dry_run
        )
