"""What a commit changes, as plain data: the request every writer hands to ``commit``.

A writer (``write/``: Python appends, DataFusion's inserts) describes its commit with these
frozen dataclasses: the table and the snapshot the write began at, a new table's columns
and partitioning, and each data file's facts (sizes, row count, per-column statistics in
the catalog's text encoding, partition values). ``_commit`` turns them into catalog rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidOptionError

__all__ = [
    "CommitOptions",
    "FileColumnStats",
    "NewColumn",
    "NewDataFile",
    "NewTable",
    "TableCommit",
]


@dataclass(frozen=True, slots=True)
class FileColumnStats:
    """One leaf column's ``ducklake_file_column_stats`` row for one file (ids aside)."""

    column_id: int
    column_size_bytes: int | None
    value_count: int
    null_count: int
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None
    # whether each bound is a value of the file (False: text cut to 256 bytes), for 1.1's
    # min_is_exact / max_is_exact
    min_exact: bool = True
    max_exact: bool = True


@dataclass(frozen=True, slots=True)
class NewDataFile:
    """A data file written for the commit: its path relative to the table's directory."""

    path: str
    record_count: int
    file_size_bytes: int
    footer_size: int
    row_group_count: int
    columns: tuple[FileColumnStats, ...]
    partition_values: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class NewColumn:
    """A ``ducklake_column`` row of a new table (any nesting level)."""

    column_id: int
    name: str
    type_name: str
    parent_column: int | None
    column_order: int


@dataclass(frozen=True, slots=True)
class NewTable:
    """The table a commit creates: its uuid, directory (relative to the schema's) and
    columns."""

    table_uuid: uuid.UUID
    path: str
    columns: tuple[NewColumn, ...]
    # (column id, transform) per key when created partitioned, in key order
    partitioned_by: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CommitOptions:
    """What the caller says about a commit: ``ducklake_snapshot_changes``' author, message
    and extra info (NULL when not given), as DuckDB's ``CALL ducklake_set_commit_message``."""

    author: str | None = None
    commit_message: str | None = None
    commit_extra_info: str | None = None

    def __post_init__(self) -> None:
        for name in ("author", "commit_message", "commit_extra_info"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidOptionError(f"{name} must be text or None, got {value!r}")


@dataclass(frozen=True, slots=True)
class TableCommit:
    """What one commit changes in one table.

    Attributes:
        base_snapshot: the snapshot the write began at (its table, columns and path).
        table_id: the table written to; ``None`` when ``new_table`` creates it.
        column_types: DuckLake type of every leaf column id, to compare statistics.
        overwrite: end every row live before this commit (``INSERT OVERWRITE``).
        replace_partitions: with ``overwrite``, end only the rows of these partitions (the
            values of a partitioned table's keys, as ``partition_values``): a dynamic
            partition overwrite, which replaces the partitions the commit writes to.
        partition_id: the partition spec the files were written under (``None``:
            unpartitioned, or the spec ``new_table`` creates).
    """

    schema_name: str
    table_name: str
    base_snapshot: int
    table_id: int | None
    files: tuple[NewDataFile, ...]
    column_types: Mapping[int, str]
    new_table: NewTable | None = None
    overwrite: bool = False
    partition_id: int | None = None
    options: CommitOptions = CommitOptions()
    replace_partitions: tuple[tuple[str | None, ...], ...] | None = None
