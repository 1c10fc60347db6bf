"""A table's exact row count (``count(*)`` without a filter), for every engine.

The catalog knows most of it (``LakeTable.row_count_parts``: summed record counts,
inlined rows, which files have deletes); the deleted positions of those files are read
here, from their delete files (each decoded once per process, checked against the
catalog). When some file holds rows of later snapshots (merged files) the catalog cannot
tell, and the rows are counted by reading, as the exact path does
(``execute_tasks`` with no column asked: clean files still counted from the catalog).
It lives in ``read`` and not on ``LakeTable`` because decoding delete files is reading.
"""

from __future__ import annotations

from ._executor import execute_plan
from ._reader import deleted_positions_of

__all__ = ["catalog_count", "count_rows"]


def catalog_count(table) -> int | None:
    """Live rows of ``table``'s snapshot (a ``LakeTable``) from the catalog and the delete
    files, or ``None`` when some file holds rows of later snapshots (only reading tells).
    No data file is opened."""
    parts = table.row_count_parts()
    if parts is None:
        return None
    total = parts.records + parts.inlined
    for task in parts.with_deletes:
        total -= len(deleted_positions_of(task, table.name, table.snapshot_id, table.lake.storage))
    return total


def count_rows(table) -> int:
    """The exact number of live rows of ``table``'s snapshot: :func:`catalog_count`, else
    counted by reading the snapshot (with no column asked for)."""
    found = catalog_count(table)
    if found is not None:
        return found
    return execute_plan(table.scan_plan(), columns=[]).num_rows
