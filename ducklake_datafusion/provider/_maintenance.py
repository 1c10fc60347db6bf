"""The Python API of table maintenance: ``DuckLakeCatalog``'s methods named as DuckDB's
functions (``lake.merge_adjacent_files(...)`` is ``CALL ducklake_merge_adjacent_files``),
each a call into the engine-neutral ``maintain`` package."""

from __future__ import annotations

from ..catalog import CommitOptions
from ..maintain import MergeResult, merge_adjacent_files

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
        if table is not None and "." in table and schema is None:
            schema, table = table.split(".", 1)
        return merge_adjacent_files(
            self.lake,
            table,
            schema=schema,
            max_compacted_files=max_compacted_files,
            min_file_size=min_file_size,
            max_file_size=max_file_size,
            options=CommitOptions(author, commit_message, commit_extra_info),
        )
