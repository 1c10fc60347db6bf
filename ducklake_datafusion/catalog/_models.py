"""Frozen rows of the DuckLake metadata tables, as the planner sees them.

Only :mod:`ducklake_datafusion.catalog` creates these; everything downstream (planner,
executors, Spark) works from them and never runs SQL. They are plain, picklable data.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

import pyarrow as pa

__all__ = [
    "ColumnEntry",
    "ColumnStatsEntry",
    "DataFileEntry",
    "DeleteFileEntry",
    "InlinedTableEntry",
    "NameMappingNode",
    "PartitionColumnEntry",
    "SchemaEntry",
    "SnapshotInfo",
    "TableEntry",
    "TableFiles",
]


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """One row of ``ducklake_snapshot`` (plus its change description when read)."""

    snapshot_id: int
    snapshot_time: _dt.datetime
    schema_version: int


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    """A schema live at the snapshot being read."""

    schema_id: int
    schema_name: str
    path: str | None
    path_is_relative: bool


@dataclass(frozen=True, slots=True)
class TableEntry:
    """A table live at the snapshot being read, with the path of its schema."""

    table_id: int
    table_uuid: str
    schema_id: int
    schema_name: str
    table_name: str
    schema_path: str | None
    schema_path_is_relative: bool
    path: str | None
    path_is_relative: bool


@dataclass(frozen=True, slots=True)
class ColumnEntry:
    """One version of one column (any nesting level) of ``ducklake_column``."""

    column_id: int
    column_name: str
    column_type: str
    initial_default: str | None
    parent_column: int | None
    column_order: int
    begin_snapshot: int = 0


@dataclass(frozen=True, slots=True)
class DeleteFileEntry:
    """The live delete file of a data file (at most one per data file)."""

    delete_file_id: int
    path: str
    path_is_relative: bool
    format: str
    delete_count: int | None
    file_size_bytes: int | None
    footer_size: int | None
    begin_snapshot: int
    encrypted: bool


@dataclass(frozen=True, slots=True)
class DataFileEntry:
    """A data file live at the snapshot, with its live delete file if any."""

    data_file_id: int
    path: str
    path_is_relative: bool
    file_format: str
    record_count: int
    file_size_bytes: int | None
    footer_size: int | None
    row_id_start: int | None
    begin_snapshot: int
    partial_max: int | None
    mapping_id: int | None
    partition_id: int | None
    encrypted: bool
    delete_file: DeleteFileEntry | None


@dataclass(frozen=True, slots=True)
class InlinedTableEntry:
    """An inlined-data table of the table with the snapshot its column layout began."""

    table_name: str
    schema_version: int
    layout_snapshot: int


@dataclass(frozen=True, slots=True)
class NameMappingNode:
    """A node of a ``map_by_name`` mapping (``node_id`` is local to the mapping)."""

    node_id: int
    source_name: str
    target_field_id: int
    parent_node: int | None
    is_partition: bool


@dataclass(frozen=True, slots=True)
class ColumnStatsEntry:
    """Per-file statistics of one leaf column, as text (decoded by the pruner)."""

    column_id: int
    value_count: int | None
    null_count: int | None
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None


@dataclass(frozen=True, slots=True)
class PartitionColumnEntry:
    """One key of a partition spec."""

    partition_id: int
    partition_key_index: int
    column_id: int
    transform: str


@dataclass(frozen=True)
class TableFiles:
    """Everything the planner needs about one table at one snapshot, read in one transaction.

    Attributes:
        files: live data files with their live delete file.
        inlined_deletes: data_file_id -> sorted deleted positions from
            ``ducklake_inlined_delete_<T>`` (physical positions in the file).
        inlined_rows: one Arrow table per inlined-data table with live rows, paired with
            the column layout (column entries at the layout snapshot) it was written with.
        name_mappings: mapping_id -> nodes.
        stats: data_file_id -> column_id -> statistics.
        partition_columns: partition_id -> keys of that spec.
        partition_values: data_file_id -> partition_key_index -> value text.
    """

    files: tuple[DataFileEntry, ...]
    inlined_deletes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    inlined_rows: tuple[tuple[pa.Table, tuple[ColumnEntry, ...]], ...] = ()
    name_mappings: dict[int, tuple[NameMappingNode, ...]] = field(default_factory=dict)
    stats: dict[int, dict[int, ColumnStatsEntry]] = field(default_factory=dict)
    partition_columns: dict[int, tuple[PartitionColumnEntry, ...]] = field(default_factory=dict)
    partition_values: dict[int, dict[int, str | None]] = field(default_factory=dict)
