"""Which files one ``merge_adjacent_files`` merges together, decided as DuckDB decides it.

DuckDB 1.5 (``DuckLakeCompactor::GenerateCompactions``): a file at or above the target size,
or one that ever had a delete (merging would need its deleted rows' snapshots), is left as
it is; the others are grouped by schema version and partition (files of one group hold the
same columns and belong in one directory); in each group of two or more files, in the
catalog's order, a walk takes files while the running size is below the target (the last
one may pass it), and a run of two or more becomes one merged file. ``max_compacted_files``
caps the runs walked (a skipped single file counts as one), not the files merged.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import CompactionCandidate

__all__ = ["merge_groups"]


def merge_groups(
    files: Sequence[CompactionCandidate], target_file_size: int, max_compacted_files: int
) -> list[list[CompactionCandidate]]:
    """The runs of ``files`` (in the catalog's order) to merge, each into one file."""
    groups: dict[tuple, list[CompactionCandidate]] = {}
    for candidate in files:
        if candidate.file_size_bytes >= target_file_size or candidate.has_deletes:
            continue
        key = (candidate.schema_version, candidate.partition_id, candidate.partition_values)
        groups.setdefault(key, []).append(candidate)
    runs: list[list[CompactionCandidate]] = []
    walked = 0
    for group in groups.values():
        if len(group) <= 1:
            continue
        start = 0
        while start < len(group):
            size, end = 0, start
            while end < len(group) and size < target_file_size:
                size += group[end].file_size_bytes
                end += 1
            if end - start >= 2:
                runs.append(group[start:end])
                start = end
            else:
                start += 1
            walked += 1
            if walked >= max_compacted_files:
                return runs
    return runs
