"""Catalog metadata of one table at one snapshot -> :class:`ScanPlan`.

Planning uses catalog metadata only; no data file or footer is opened here. Files whose
statistics or partition values prove a pushed-down filter cannot match are left out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow.compute as pc

from ..catalog._models import ColumnEntry, DataFileEntry, TableEntry, TableFiles
from ..pathres import StorageOptions, join_path
from ..types import ColumnSpec
from ._filters import decode_expression, referenced_columns
from ._inlined import conform_inlined_rows
from ._plan import DataFileTask, DeleteSource, FileRef, InlinedRowsTask, PlanStats, ScanPlan
from ._pruning import FilePruner

__all__ = ["build_scan_plan", "table_directory"]

log = logging.getLogger("ducklake_datafusion")


def table_directory(data_path: str, table: TableEntry) -> str:
    """data_path -> schema dir -> table dir (read-path notes, c.1)."""
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
    filter: pc.Expression | None = None,
    projection: Sequence[str] | None = None,
) -> ScanPlan:
    """Turn the metadata of one table at one snapshot into a scan plan."""
    table_dir = table_directory(data_path, table)
    stable_since = max((c.begin_snapshot for c in column_entries), default=0)
    pruner = FilePruner.create(filter, columns, files)
    tasks: list = []
    skipped_stats = skipped_partition = with_deletes = scanned_bytes = 0
    for entry in files.files:
        verdict = pruner.skip_reason(entry)
        if verdict == "stats":
            skipped_stats += 1
            continue
        if verdict == "partition":
            skipped_partition += 1
            continue
        task = _data_task(entry, table_dir, files, stable_since)
        with_deletes += task.deletes is not None
        scanned_bytes += entry.file_size_bytes or 0
        tasks.append(task)
    inlined = 0
    for raw, layout in files.inlined_rows:
        rows = conform_inlined_rows(raw, layout, columns, values_are_text=inlined_values_are_text)
        inlined += rows.num_rows
        tasks.append(InlinedRowsTask(rows))
    stats = PlanStats(
        files_total=len(files.files),
        files_skipped_by_stats=skipped_stats,
        files_skipped_by_partition=skipped_partition,
        files_with_deletes=with_deletes,
        files_scanned=len(files.files) - skipped_stats - skipped_partition,
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


def _data_task(
    entry: DataFileEntry, table_dir: str, files: TableFiles, stable_since: int
) -> DataFileTask:
    url = join_path(table_dir, entry.path, entry.path_is_relative)
    inlined_positions = files.inlined_deletes.get(entry.data_file_id, ())
    deletes = None
    if entry.delete_file is not None or inlined_positions:
        delete_ref = None
        delete_format = "parquet"
        if entry.delete_file is not None:
            d = entry.delete_file
            delete_ref = FileRef(
                join_path(table_dir, d.path, d.path_is_relative), d.file_size_bytes, d.footer_size
            )
            delete_format = d.format
        deletes = DeleteSource(delete_ref, delete_format, tuple(inlined_positions))
    mapping = files.name_mappings.get(entry.mapping_id) if entry.mapping_id is not None else None
    fast = (
        deletes is None
        and entry.partial_max is None
        and entry.mapping_id is None
        and entry.begin_snapshot >= stable_since
    )
    return DataFileTask(
        data_file_id=entry.data_file_id,
        file=FileRef(url, entry.file_size_bytes, entry.footer_size),
        record_count=entry.record_count,
        row_id_start=entry.row_id_start,
        begin_snapshot=entry.begin_snapshot,
        deletes=deletes,
        name_mapping=mapping,
        fast=fast,
    )


def filter_columns(filter: pc.Expression | None) -> frozenset[str]:
    if filter is None:
        return frozenset()
    return frozenset(referenced_columns(decode_expression(filter)))
