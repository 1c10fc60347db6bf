"""The maintenance operations by DuckDB's names, for the engines that call them by name
(Spark's procedures through the planner, the CLI): what each takes and how its result is
shown as DuckDB's function shows it, one row of plain values per line of the result."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..catalog import SnapshotRecord, changes_map
from ..errors import InvalidOptionError
from ._checkpoint import CheckpointResult, checkpoint
from ._expire import cleanup_old_files, delete_orphaned_files, expire_snapshots
from ._flush import FlushResult, flush_inlined_data
from ._merge import MergeResult, merge_adjacent_files
from ._rewrite import rewrite_data_files

__all__ = ["OPERATIONS", "Operation", "split_table_argument"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class Operation:
    """One maintenance operation.

    Attributes:
        function: ``function(lake, **arguments)`` (``maintain``'s).
        takes_table: it takes ``table``/``schema`` (else it acts on the whole lake).
        writes_snapshot: it commits a snapshot (so commit options apply).
        rows: its result as DuckDB's function's rows (JSON values: times in microseconds).
    """

    function: Callable
    takes_table: bool
    writes_snapshot: bool
    rows: Callable[[object], list[list]]


def _merge_rows(results: Sequence[MergeResult]) -> list[list]:
    return [[r.schema_name, r.table_name, r.files_processed, r.files_created] for r in results]


def _snapshot_rows(records: Sequence[SnapshotRecord]) -> list[list]:
    def micros(record: SnapshotRecord) -> int:
        when = record.snapshot_time
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.timezone.utc)
        return (when - _EPOCH) // _dt.timedelta(microseconds=1)

    return [
        [
            r.snapshot_id,
            micros(r),
            r.schema_version,
            dict(changes_map(r.changes)),
            r.author,
            r.commit_message,
            r.commit_extra_info,
        ]
        for r in records
    ]


def _flush_rows(results: Sequence[FlushResult]) -> list[list]:
    return [[r.schema_name, r.table_name, r.rows_flushed] for r in results]


def _checkpoint_rows(result: CheckpointResult) -> list[list]:
    return [[step, count] for step, count in result.counts()]


def _path_rows(paths: Sequence[str]) -> list[list]:
    return [[path] for path in paths]


OPERATIONS: dict[str, Operation] = {
    "merge_adjacent_files": Operation(merge_adjacent_files, True, True, _merge_rows),
    "rewrite_data_files": Operation(rewrite_data_files, True, True, _merge_rows),
    "flush_inlined_data": Operation(flush_inlined_data, True, True, _flush_rows),
    "expire_snapshots": Operation(expire_snapshots, False, False, _snapshot_rows),
    "cleanup_old_files": Operation(cleanup_old_files, False, False, _path_rows),
    "delete_orphaned_files": Operation(delete_orphaned_files, False, False, _path_rows),
    "checkpoint": Operation(checkpoint, False, True, _checkpoint_rows),
}


def split_table_argument(table: str | None, schema: str | None) -> tuple[str | None, str | None]:
    """``(schema, table)`` of a ``table`` argument given as ``"schema.table"`` or
    ``"table"`` (in ``schema``); ``(schema, None)`` for every table."""
    if table is None or schema is not None:
        return schema, table
    parts = table.split(".")
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    if len(parts) == 1 and parts[0]:
        return None, parts[0]
    raise InvalidOptionError(
        f"table {table!r}: give 'schema.table' or 'table' (names with dots are not supported)"
    )
