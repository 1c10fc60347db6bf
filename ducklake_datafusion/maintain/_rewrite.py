"""``rewrite_data_files``: files mostly deleted rewritten to their live rows, as DuckDB 1.5.

A live data file whose deleted share (its live delete file's count plus positions deleted
through the catalog, over its rows) is at least ``delete_threshold`` (the lake's
``rewrite_delete_threshold``, else 0.95) is a source; the sources of one schema version and
partition become one file (any size, a single source too) holding their live rows with
their row ids. The sources and their delete files end at the new snapshot (earlier ones
still read them); ``catalog.RewriteFiles`` writes the rows, ``rewrite_delete:<id>``. Files
and snapshots of all tables commit as one snapshot; a failed commit deletes the new files.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import pyarrow as pa

from ..catalog import (
    CommitOptions,
    CompactionCandidate,
    FilesUnchanged,
    RewriteFiles,
    TableRef,
    TableUnchanged,
    compaction_candidates,
    metadata,
)
from ..errors import InvalidOptionError
from ..scan import Lake, LakeTable
from ..write import DataFileWriter, leaf_types, require_writable
from ._merge import MergeResult
from ._sources import (
    commit_written,
    layout_of,
    plan_tasks,
    read_in_order,
    read_source,
    subdirectory_of,
    table_directory_of,
    tables_of,
    takes_compaction,
)

__all__ = ["rewrite_data_files"]

_NO_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class _Group:
    table: LakeTable
    sources: tuple[CompactionCandidate, ...]


def rewrite_data_files(
    lake: Lake,
    table: str | None = None,
    *,
    schema: str | None = None,
    delete_threshold: float | None = None,
    options: CommitOptions | None = None,
) -> list[MergeResult]:
    """Rewrite the files of ``table`` (every table when ``None``) whose deleted share is
    at least ``delete_threshold``; one :class:`MergeResult` per group of sources."""
    require_writable(lake)
    if delete_threshold is not None and not 0 <= float(delete_threshold) <= 1:
        raise InvalidOptionError(
            f"delete_threshold must be between 0 and 1, got {delete_threshold!r}"
        )
    groups: list[_Group] = []
    for target in tables_of(lake, table, schema):
        groups.extend(_groups_of(target, delete_threshold))
    if not groups:
        return []

    def write(written: list[str]) -> tuple[list, list]:
        plans: dict = {}
        actions, requirements = [], []
        for group in groups:
            actions.append(_write_rewritten(group, written, plans))
            ref = actions[-1].table
            requirements.append(TableUnchanged(ref))
            files = tuple(
                (s.data_file_id, () if s.live_delete_file is None else (s.live_delete_file,))
                for s in group.sources
            )
            requirements.append(FilesUnchanged(ref, files))
        return actions, requirements

    snapshot, actions = commit_written(lake, groups[0].table.snapshot_id, write, options)
    return [
        MergeResult(
            g.table.entry.schema_name,
            g.table.entry.table_name,
            len(g.sources),
            int(a.file is not None),
            snapshot,
        )
        for g, a in zip(groups, actions)
    ]


def _groups_of(table: LakeTable, delete_threshold: float | None) -> list[_Group]:
    entry = table.entry
    with table.lake.backend.session() as session:
        if not takes_compaction(session, table, "rewrite"):
            return []
        threshold = delete_threshold
        if threshold is None:
            text = metadata.scoped_setting(
                session, "rewrite_delete_threshold", entry.table_id, entry.schema_id
            )
            threshold = 0.95 if text is None else float(text)
        candidates = compaction_candidates(session, entry.table_id)
    chosen: dict[tuple, list[CompactionCandidate]] = {}
    for c in candidates:
        deleted = c.live_deleted + c.inlined_deleted
        if deleted and c.deleted_share >= float(threshold) and not c.last_delete_ended:
            key = (c.schema_version, c.partition_id, c.partition_values)
            chosen.setdefault(key, []).append(c)
    return [_Group(table, tuple(sources)) for sources in chosen.values()]


def _write_rewritten(group: _Group, written: list[str], plans: dict) -> RewriteFiles:
    table, sources = group.table, group.sources
    entry = table.entry
    what = f"table {table.name} of {table.lake.description}"
    tasks = plan_tasks(table, sources, what, plans)
    first = sources[0]
    layout = layout_of(table, first)
    reads = [
        functools.partial(
            read_source, tasks[s.data_file_id], s, layout, what, without_deleted=table
        )
        for s in sources
    ]
    directory = table_directory_of(table)
    writer = DataFileWriter(
        directory,
        layout.columns,
        table.lake.storage,
        target_file_size=_NO_LIMIT,  # one file per group, as DuckDB writes it
        description=what,
        with_row_ids=True,
        subdirectory=subdirectory_of(tasks[first.data_file_id], directory),
    )
    try:
        for part in read_in_order(reads):
            columns = [*part.rows.columns, part.row_ids]
            writer.write(pa.Table.from_arrays(columns, schema=writer.schema))  # (types conformed)
        files = writer.close()
    except BaseException:
        written.extend(writer.discard())
        raise
    written.extend(f.url for f in files)
    new_file = None
    if files:
        (rewritten,) = files
        new_file = dataclasses.replace(
            rewritten.data_file, partition_values=tuple(first.partition_values)
        )
    return RewriteFiles(
        table=TableRef(entry.schema_name, entry.table_name, entry.table_id),
        sources=tuple(s.data_file_id for s in sources),
        delete_files=tuple(s.live_delete_file for s in sources if s.live_delete_file is not None),
        file=new_file,
        partition_id=first.partition_id,
        column_types=leaf_types(table.columns),
    )
