"""Frozen rows of the DuckLake metadata tables, as the planner sees them.

Only :mod:`ducklake_datafusion.catalog` creates these; everything downstream (planner,
executors, Spark) works from them and never runs SQL. They are plain, picklable data.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
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
    "data_file_entry",
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
class ViewEntry:
    """A view live at the snapshot: its SQL as DuckDB stored it.

    Attributes:
        sql: the view's query in ``dialect``, the catalog name spelled
            ``{DUCKLAKE_CATALOG}``.
        column_aliases: the names given in ``CREATE VIEW v(a, b)``, else empty.
    """

    view_id: int
    schema_name: str
    view_name: str
    dialect: str
    sql: str
    column_aliases: tuple[str, ...]


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
    """A live delete file of a data file (usually at most one per data file)."""

    delete_file_id: int
    path: str
    path_is_relative: bool
    format: str
    delete_count: int | None
    file_size_bytes: int | None
    footer_size: int | None
    begin_snapshot: int
    encrypted: bool
    encryption_key: str | None = field(default=None, repr=False)  # a secret


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
    extra_delete_files: tuple[DeleteFileEntry, ...] = ()


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
        file_table: live data files with their first live delete file, one row per file,
            columns ``catalog._sql.FILE_COLUMNS`` (columnar so 10,000 files plan in
            milliseconds); :attr:`files` gives the same rows as :class:`DataFileEntry`.
        extra_delete_files: data_file_id -> further live delete files of that data file
            (rare: see ``catalog._file_list.read_file_table``).
        inlined_deletes: data_file_id -> sorted deleted positions from
            ``ducklake_inlined_delete_<T>`` (physical positions in the file).
        inlined_rows: one Arrow table per inlined-data table with live rows, paired with
            the column layout (column entries at the layout snapshot) it was written with.
        name_mappings: mapping_id -> nodes.
        stats: file statistics of the requested columns (``ducklake_file_column_stats``
            columns), or None when none were requested.
        partition_columns: partition_id -> keys of that spec.
        partition_values: ``data_file_id, partition_key_index, partition_value`` rows, or
            None when not requested.
        files_cut: live files the catalog query already left out by the query's
            statistics bounds (``catalog._file_cut``): ``file_table`` then holds only the
            others, and the planner counts these as skipped by statistics.
    """

    file_table: pa.Table
    extra_delete_files: dict[int, tuple[DeleteFileEntry, ...]] = field(default_factory=dict)
    inlined_deletes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    inlined_rows: tuple[tuple[pa.Table, tuple[ColumnEntry, ...]], ...] = ()
    name_mappings: dict[int, tuple[NameMappingNode, ...]] = field(default_factory=dict)
    stats: pa.Table | None = None
    partition_columns: dict[int, tuple[PartitionColumnEntry, ...]] = field(default_factory=dict)
    partition_values: pa.Table | None = None
    files_cut: int = 0

    @functools.cached_property
    def derived(self) -> dict:
        """Values computed from these rows (pruning bounds, scan tasks), kept with them.

        A ``TableFiles`` is memoised per lake version, so whatever is derived from it is
        reused by every query of an unchanged lake and dropped with it.
        """
        return {}

    @functools.cached_property
    def files(self) -> tuple[DataFileEntry, ...]:
        """The file rows as dataclasses (convenient, slower than :attr:`file_table`)."""
        entries = tuple(data_file_entry(row) for row in self.file_table.to_pylist())
        if not self.extra_delete_files:
            return entries
        return tuple(
            dataclasses.replace(e, extra_delete_files=self.extra_delete_files[e.data_file_id])
            if e.data_file_id in self.extra_delete_files
            else e
            for e in entries
        )


def _opt_int(value) -> int | None:
    return None if value is None else int(value)


def delete_file_entry(row: dict) -> DeleteFileEntry:
    """A :class:`DeleteFileEntry` from a ``ducklake_delete_file`` row (see ``_file_list``)."""
    return DeleteFileEntry(
        delete_file_id=int(row["delete_file_id"]),
        path=row["path"],
        path_is_relative=bool(row["path_is_relative"]),
        format=(row["format"] or "parquet").lower(),
        delete_count=_opt_int(row["delete_count"]),
        file_size_bytes=_opt_int(row["file_size_bytes"]),
        footer_size=_opt_int(row["footer_size"]),
        begin_snapshot=int(row["begin_snapshot"]),
        encrypted=bool(row["encrypted"]),
        encryption_key=row.get("encryption_key"),
    )


# ducklake_delete_file column -> its name in a file-table row (catalog._sql.FILE_COLUMNS)
_DELETE_OF_FILE_ROW = (
    ("delete_file_id", "delete_file_id"), ("path", "delete_path"),
    ("path_is_relative", "delete_path_is_relative"), ("format", "delete_format"),
    ("delete_count", "delete_count"), ("file_size_bytes", "delete_size"),
    ("footer_size", "delete_footer_size"), ("begin_snapshot", "delete_begin_snapshot"),
    ("encrypted", "delete_encrypted"), ("encryption_key", "delete_encryption_key"),
)  # fmt: skip


def data_file_entry(row: dict) -> DataFileEntry:
    """A :class:`DataFileEntry` from one row of a file table (see ``FILE_COLUMNS``)."""
    delete = None
    if row["delete_file_id"] is not None:
        delete = delete_file_entry({name: row[column] for name, column in _DELETE_OF_FILE_ROW})
    return DataFileEntry(
        data_file_id=int(row["data_file_id"]),
        path=row["path"],
        path_is_relative=bool(row["path_is_relative"]),
        file_format=(row["file_format"] or "parquet").lower(),
        record_count=int(row["record_count"]),
        file_size_bytes=_opt_int(row["file_size_bytes"]),
        footer_size=_opt_int(row["footer_size"]),
        row_id_start=_opt_int(row["row_id_start"]),
        begin_snapshot=int(row["begin_snapshot"]),
        partial_max=_opt_int(row["partial_max"]),
        mapping_id=_opt_int(row["mapping_id"]),
        partition_id=_opt_int(row["partition_id"]),
        encrypted=bool(row["encrypted"]),
        delete_file=delete,
    )
