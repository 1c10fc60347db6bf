"""Catalog metadata of one table at one snapshot -> :class:`ScanPlan`.

Planning uses catalog metadata only; no data file or footer is opened here. Files whose
statistics or partition values prove a pushed-down filter cannot match are left out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pyarrow.compute as pc

from ..catalog import ColumnEntry, ColumnSpec, TableEntry, TableFiles
from ..pathres import StorageOptions, join_path
from ._filter import Filter
from ._inlined import conform_inlined_rows
from ._plan import (
    DataFileTask,
    DeleteFile,
    DeleteSource,
    FileRef,
    InlinedRowsTask,
    PlanStats,
    ScanPlan,
)
from ._pruning import FilePruner

__all__ = ["build_scan_plan", "table_directory"]

log = logging.getLogger("ducklake_datafusion")


def table_directory(data_path: str, table: TableEntry) -> str:
    """data_path -> schema dir -> table dir (the specification's path rules)."""
    schema_dir = join_path(data_path, table.schema_path, table.schema_path_is_relative)
    return join_path(schema_dir, table.path, table.path_is_relative)


def build_scan_plan(
    *,
    table: TableEntry,
    catalog: str,
    snapshot_id: int,
    column_entries: Sequence[ColumnEntry],
    columns: tuple[ColumnSpec, ...],
    files: TableFiles,
    data_path: str,
    storage: StorageOptions,
    inlined_values_are_text: bool,
    filter: Filter | None = None,
    projection: Sequence[str] | None = None,
) -> ScanPlan:
    """Turn the metadata of one table at one snapshot into a scan plan."""
    table_dir = table_directory(data_path, table)
    stable_since = max((c.begin_snapshot for c in column_entries), default=0)
    by_stats, by_partition = FilePruner(filter, columns, files).masks()
    keep = by_stats & by_partition
    skipped_stats = int((~by_stats).sum()) + files.files_cut
    skipped_partition = int((by_stats & ~by_partition).sum())
    kept = files.file_table
    if not keep.all():
        kept = kept.take(np.flatnonzero(keep))
    tasks: list = kept_tasks(np.flatnonzero(keep), table_dir, files, stable_since)
    with_deletes = sum(t.deletes is not None for t in tasks)
    scanned_bytes = int(pc.sum(kept.column("file_size_bytes")).as_py() or 0) if kept.num_rows else 0
    inlined = 0
    for raw, layout in files.inlined_rows:
        rows = conform_inlined_rows(raw, layout, columns, values_are_text=inlined_values_are_text)
        inlined += rows.num_rows
        tasks.append(InlinedRowsTask(rows))
    stats = PlanStats(
        files_total=files.file_table.num_rows + files.files_cut,
        files_skipped_by_stats=skipped_stats,
        files_skipped_by_partition=skipped_partition,
        files_with_deletes=with_deletes,
        files_scanned=kept.num_rows,
        inlined_rows=inlined,
        bytes_scanned=scanned_bytes,
    )
    log.debug(
        "plan %s.%s@%d: %d of %d files to read (%d skipped by stats, %d by partition), "
        "%d with deletes, %d inlined rows",
        table.schema_name,
        table.table_name,
        snapshot_id,
        stats.files_scanned,
        stats.files_total,
        skipped_stats,
        skipped_partition,
        with_deletes,
        inlined,
    )
    return ScanPlan(
        table=f"{table.schema_name}.{table.table_name}",
        catalog=catalog,
        snapshot_id=snapshot_id,
        columns=columns,
        projection=tuple(projection) if projection is not None else None,
        filter=filter,
        storage=storage,
        tasks=tuple(tasks),
        stats=stats,
    )


_TASK_COLUMNS = (
    "data_file_id", "path", "path_is_relative", "record_count", "file_size_bytes",
    "footer_size", "row_id_start", "begin_snapshot", "partial_max", "mapping_id",
    "encryption_key", "delete_file_id", "delete_path", "delete_path_is_relative",
    "delete_format", "delete_count", "delete_size", "delete_footer_size",
    "delete_encryption_key",
)  # fmt: skip


def kept_tasks(kept: np.ndarray, table_dir: str, files: TableFiles, stable_since: int) -> list:
    """Tasks of the kept file rows; each task is built once per ``TableFiles`` and reused."""
    built = files.derived.setdefault(("tasks", table_dir, stable_since), {})
    missing = [int(i) for i in kept if int(i) not in built]
    if missing:
        rows = files.file_table.take(missing)
        built.update(zip(missing, _data_tasks(rows, table_dir, files, stable_since)))
    return [built[int(i)] for i in kept]


def _data_tasks(kept, table_dir: str, files: TableFiles, stable_since: int) -> list[DataFileTask]:
    """One task per kept file row, built from whole columns (one Python list per column,
    not an Arrow scalar per value)."""
    prefix = table_dir if table_dir.endswith("/") else table_dir + "/"

    def location(path: str, relative) -> str:
        # join_path for the common case (relative file, directory already normalised)
        return prefix + path if relative else join_path(prefix, path, relative)

    columns = [kept.column(name).to_pylist() for name in _TASK_COLUMNS]
    tasks = []
    for (
        file_id, path, relative, record_count, size, footer, row_id_start, begin, partial_max,
        mapping_id, key, delete_id, delete_path, delete_relative, delete_format, delete_count,
        delete_size, delete_footer, delete_key,
    ) in zip(*columns):  # fmt: skip
        inlined_positions = files.inlined_deletes.get(file_id, ())
        deletes = None
        if delete_id is not None or inlined_positions:
            delete_files = []
            if delete_id is not None:
                delete_files.append(
                    DeleteFile(
                        FileRef(location(delete_path, delete_relative), delete_size, delete_footer),
                        (delete_format or "parquet").lower(),
                        delete_count,
                        delete_key,
                    )
                )
                for extra in files.extra_delete_files.get(file_id, ()):
                    ref = FileRef(
                        location(extra.path, extra.path_is_relative),
                        extra.file_size_bytes,
                        extra.footer_size,
                    )
                    delete_files.append(
                        DeleteFile(ref, extra.format, extra.delete_count, extra.encryption_key)
                    )
            deletes = DeleteSource(tuple(delete_files), tuple(inlined_positions))
        # Rewritten and merged files (row_id_start NULL) keep the layout of their sources
        # but begin later, so only files with row_id_start qualify.
        layout_current = (
            partial_max is None
            and mapping_id is None
            and row_id_start is not None
            and begin >= stable_since
        )
        tasks.append(
            DataFileTask(
                data_file_id=file_id,
                file=FileRef(location(path, relative), size, footer),
                record_count=record_count,
                row_id_start=row_id_start,
                begin_snapshot=begin,
                deletes=deletes,
                name_mapping=files.name_mappings.get(mapping_id)
                if mapping_id is not None
                else None,
                layout_current=layout_current,
                # pyarrow cannot decrypt DuckDB's files: those go to the per-file reader
                fast=layout_current and deletes is None and key is None,
                last_snapshot=begin if partial_max is None else max(begin, partial_max),
                encryption_key=key,
            )
        )
    return tasks
