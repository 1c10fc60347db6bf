"""The catalog's half of ``count(*)``: what a table's live rows are made of, no file read.

Every engine answers an unfiltered ``count(*)`` the way DuckDB does: the catalog's summed
``record_count`` of the live files, minus the deleted positions of the files with
deletes, plus the inlined rows. The first and last come from the catalog alone; the
deleted positions need the delete files decoded, which is reading (``read.count_rows``
does it). So this module gathers the facts engine-neutrally, once, for ``LakeTable``;
it says ``None`` when some file holds rows of later snapshots (merged files), which only
reading tells apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from ..catalog import DeletedCut, metadata
from ._inlined import conform_inlined_rows
from ._plan import DataFileTask
from ._planner import kept_tasks, table_directory

__all__ = ["RowCount", "catalog_row_count"]


@dataclass(frozen=True)
class RowCount:
    """A snapshot's live rows as the catalog records them.

    ``records`` (every live file's ``record_count``) plus ``inlined`` (live inlined rows)
    minus the deleted positions of ``with_deletes`` (the files with deletes, as tasks
    whose ``deletes`` name their delete files and inlined deletes) is the table's count.
    """

    records: int
    inlined: int
    with_deletes: tuple[DataFileTask, ...]


def catalog_row_count(table) -> RowCount | None:
    """:class:`RowCount` of ``table`` (a ``LakeTable``) at its snapshot, or ``None`` when
    some file holds rows of later snapshots (merged files: only reading them tells).

    One aggregate query sums the files' row counts; only the files with deletes are read
    as rows (``DeletedCut``).
    """
    backend = table.lake.backend
    snapshot = table.snapshot_id
    with backend.session() as session:
        settings = metadata.read_settings(session, backend.description)
        summary = metadata.file_summary_of(session, table.entry, snapshot)
        if summary.holds_later_rows(snapshot):
            return None
        files = metadata.read_table_files(session, table.entry, snapshot, cut=DeletedCut())
    rows = files.file_table
    indices = set()
    if rows.num_rows:
        with_deletes = pc.is_valid(rows.column("delete_file_id"))
        if pc.any(with_deletes).as_py():
            indices.update(int(i) for i in pc.indices_nonzero(with_deletes).to_pylist())
    if files.inlined_deletes:
        ids = rows.column("data_file_id").to_pylist()
        indices.update(i for i, file_id in enumerate(ids) if file_id in files.inlined_deletes)
    tasks: list[DataFileTask] = []
    if indices:
        directory = table_directory(table.lake.data_path(settings), table.entry)
        stable_since = max((c.begin_snapshot for c in table.column_entries), default=0)
        for task in kept_tasks(sorted(indices), directory, files, stable_since):
            assert isinstance(task, DataFileTask)
            if task.deletes is not None:
                tasks.append(task)
    inlined = sum(
        conform_inlined_rows(
            raw, layout, table.columns, values_are_text=backend.inlined_values_are_text
        ).num_rows
        for raw, layout in files.inlined_rows
    )
    return RowCount(records=summary.records, inlined=inlined, with_deletes=tuple(tasks))
