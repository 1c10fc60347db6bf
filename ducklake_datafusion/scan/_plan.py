"""The scan plan: plain, frozen, picklable data that any engine can execute.

The planner turns catalog metadata into a :class:`ScanPlan`; DataFusion, Spark or a bare
pyarrow loop execute its tasks with :func:`ducklake_datafusion.read.execute_tasks`.
A task carries everything needed to produce its rows (URLs, sizes, delete positions,
column mapping), so an executor never opens the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ..catalog import ColumnSpec, NameMappingNode
from ..pathres import StorageOptions
from ._filter import Filter

__all__ = [
    "DataFileTask",
    "DeleteFile",
    "DeleteSource",
    "FileRef",
    "InlinedRowsTask",
    "PlanStats",
    "ScanPlan",
    "ScanTask",
    "balanced_groups",
]


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file on storage with the size hints the catalog recorded."""

    url: str
    size: int | None = None
    footer_size: int | None = None


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """One delete file live at the plan's snapshot.

    Attributes:
        file: where it is.
        file_format: ``parquet`` (positions, maybe per-position snapshots) or ``puffin``.
        delete_count: the number of positions the catalog says the file holds; checked
            against the file so that a replaced or emptied delete file cannot bring deleted
            rows back.
    """

    file: FileRef
    file_format: str = "parquet"
    delete_count: int | None = None
    encryption_key: str | None = field(default=None, repr=False)  # a secret


@dataclass(frozen=True, slots=True)
class DeleteSource:
    """Everything that removes physical rows of one data file at the plan's snapshot.

    Attributes:
        files: the live delete files. Usually one (cumulative), but DuckDB's flush of
            inlined deletes into an already rewritten file adds a second one holding only
            the newer positions, with a ``begin_snapshot`` in the past, so every live file
            counts.
        inlined_positions: positions deleted through ``ducklake_inlined_delete_<T>``.
    """

    files: tuple[DeleteFile, ...] = ()
    inlined_positions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class DataFileTask:
    """Read one Parquet data file.

    Attributes:
        layout_current: the file was written at the table's current column layout (no
            column was added, renamed or retyped since; no name mapping; no rows of later
            snapshots), so it must hold every column of the plan by field id.
        fast: ``layout_current`` and no deletes. Such files can be read by name in one
            multi-file Parquet scan when the requested column types allow it; others go
            through the per-file reader.
        last_snapshot: the newest snapshot whose rows the file holds (``partial_max`` of
            merged and flushed files; else ``begin_snapshot``).
        encryption_key: base64 AES key of an encrypted lake's file (a secret: never in
            ``repr``, messages or logs); such files are read by ``_encrypted``.
    """

    data_file_id: int
    file: FileRef
    record_count: int
    row_id_start: int | None
    begin_snapshot: int
    deletes: DeleteSource | None = None
    name_mapping: tuple[NameMappingNode, ...] | None = None
    layout_current: bool = False
    fast: bool = False
    last_snapshot: int | None = None
    encryption_key: str | None = field(default=None, repr=False)

    @property
    def weight(self) -> int:
        return self.file.size or self.record_count * 16


@dataclass(frozen=True, slots=True)
class InlinedRowsTask:
    """Rows stored in the catalog, already in the table schema (all columns + ``rowid``)."""

    rows: pa.Table

    @property
    def weight(self) -> int:
        return self.rows.nbytes


ScanTask = DataFileTask | InlinedRowsTask


@dataclass(frozen=True, slots=True)
class PlanStats:
    """What the planner did, for ``EXPLAIN``-style reporting and logs."""

    files_total: int = 0
    files_skipped_by_stats: int = 0
    files_skipped_by_partition: int = 0
    files_with_deletes: int = 0
    files_scanned: int = 0
    inlined_rows: int = 0
    bytes_scanned: int = 0


@dataclass(frozen=True)
class ScanPlan:
    """A complete, self-contained description of one table scan at one snapshot.

    Attributes:
        table: ``schema.table`` for messages.
        catalog: description of the catalog database, for messages (no credentials).
        snapshot_id: the snapshot every task reads.
        columns: the table's columns at that snapshot.
        projection: output column names in order (``None``: all columns).
        filter: applied exactly by every task (``None``: no filter).
        storage: options to build filesystems on any machine.
        tasks: what to read.
        stats: counters for explain/logging.
    """

    table: str
    catalog: str
    snapshot_id: int
    columns: tuple[ColumnSpec, ...]
    projection: tuple[str, ...] | None
    filter: Filter | None
    storage: StorageOptions
    tasks: tuple[ScanTask, ...]
    stats: PlanStats = field(default_factory=PlanStats)

    @property
    def table_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])

    @property
    def output_schema(self) -> pa.Schema:
        schema = self.table_schema
        if self.projection is None:
            return schema
        return pa.schema([schema.field(name) for name in self.projection])

    def groups(
        self, partitions: int, *, target_bytes: int | None = None
    ) -> list[tuple[ScanTask, ...]]:
        """Split the tasks into balanced groups (greedy by bytes, largest first).

        Args:
            partitions: the number of groups wanted when ``target_bytes`` is not given.
            target_bytes: if given, as many groups as needed for about this many bytes each.
        """
        if target_bytes and self.tasks:
            total = sum(t.weight for t in self.tasks)
            partitions = max(1, -(-total // target_bytes))
        return balanced_groups(self.tasks, partitions)


def balanced_groups(tasks, count: int) -> list[tuple]:
    """``tasks`` in up to ``count`` non-empty groups of about equal weight (greedy,
    heaviest first, each to the lightest group so far)."""
    ordered = sorted(tasks, key=lambda t: t.weight, reverse=True)
    buckets: list[list] = [[] for _ in range(max(1, min(count, len(ordered))))]
    loads = [0] * len(buckets)
    for task in ordered:
        target = loads.index(min(loads))
        buckets[target].append(task)
        loads[target] += task.weight
    return [tuple(b) for b in buckets if b]
