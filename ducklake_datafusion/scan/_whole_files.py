"""Which live files a filter matches whole, and which it may match in part, by catalog
metadata alone: the plan of a delete that reads no data (Spark's ``SupportsDeleteV2``).

Pruning (``_pruning``) proves that *no* row of a file can match. A file matches *whole*
when pruning proves that no row can fail to match: no row satisfies the filter's negation,
and no row has a NULL in a column the filter compares (where the comparison is NULL, so
the row is not deleted). The negation is taken here for the nodes whose negation is again a node
pruning understands; any other node (a string match, ``IN`` with a NULL, a NULL literal)
leaves every file it may match undecided. Bounds cover a file's physical rows, deleted ones
included: a superset of its live rows, so "every row" holds for the live ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._filter import And, Column, Compare, Filter, In, IsNull, Literal, Not, Or
from ._lake import LakeTable
from ._plan import DataFileTask, InlinedRowsTask
from ._pruning import FilePruner

__all__ = ["WholeFileMatch", "whole_file_match"]

_NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class WholeFileMatch:
    """A filter against a table's live files at one snapshot."""

    whole: tuple[DataFileTask, ...]
    """Files every row of which the filter matches."""
    partial: tuple[DataFileTask, ...]
    """Files some rows of which the filter may match, and may not."""
    inlined_rows: int
    """Live rows inlined in the catalog (matched whole only by no filter at all)."""
    inlined_row_ids: tuple[int, ...]
    """Their row ids."""


def whole_file_match(table: LakeTable, filter: Filter | None) -> WholeFileMatch:
    """The live files of ``table`` that ``filter`` matches whole or may match in part
    (``None``: every row matches)."""
    plan, files = table.scan_plan_and_files(stats="all", with_partitions=True)
    tasks = {t.data_file_id: t for t in plan.tasks if isinstance(t, DataFileTask)}
    inlined = [t.rows for t in plan.tasks if isinstance(t, InlinedRowsTask)]
    row_ids = tuple(int(r) for rows in inlined for r in rows.column("rowid").to_pylist())
    ids = files.file_table.column("data_file_id").to_numpy(zero_copy_only=False)
    if filter is None:
        whole = np.ones(len(ids), dtype=bool)
        partial = np.zeros(len(ids), dtype=bool)
    else:
        may = _may_match(filter, table, files)
        negation = _negation(filter)
        if negation is None:
            whole = np.zeros(len(ids), dtype=bool)
        else:
            nulls = [IsNull(c) for c in sorted(_compared(filter), key=repr)]
            whole = ~_may_match(Or((negation, *nulls)), table, files)
        whole &= may
        partial = may & ~whole
    return WholeFileMatch(
        whole=tuple(tasks[int(i)] for i in ids[whole] if int(i) in tasks),
        partial=tuple(tasks[int(i)] for i in ids[partial] if int(i) in tasks),
        inlined_rows=sum(rows.num_rows for rows in inlined),
        inlined_row_ids=row_ids,
    )


def _may_match(node: Filter, table: LakeTable, files) -> np.ndarray:
    by_stats, by_partition = FilePruner(node, table.columns, files).masks()
    return by_stats & by_partition


def _negation(node: Filter) -> Filter | None:
    """A filter true exactly where ``node`` is false, for rows with no NULL in the columns
    ``node`` reads; ``None`` where this module does not negate the node."""
    if isinstance(node, Compare):
        if _has_null(node.left) or _has_null(node.right):
            return None
        return Compare(_NEGATED[node.op], node.left, node.right)
    if isinstance(node, In):
        if any(v is None for v in node.values) or not node.values:
            return None
        return And(tuple(Compare("!=", node.column, Literal(v, node.type)) for v in node.values))
    if isinstance(node, IsNull):
        return IsNull(node.column, not node.negated)
    if isinstance(node, And):
        parts = [_negation(p) for p in node.parts]
        return None if any(p is None for p in parts) else Or(tuple(parts))
    if isinstance(node, Or):
        parts = [_negation(p) for p in node.parts]
        return None if any(p is None for p in parts) else And(tuple(parts))
    if isinstance(node, Not):
        return node.part
    return None


def _compared(node: Filter) -> set[Column]:
    """The columns ``node`` compares (a NULL there makes the comparison NULL)."""
    if isinstance(node, Compare):
        return {side for side in (node.left, node.right) if isinstance(side, Column)}
    if isinstance(node, In):
        return {node.column}
    if isinstance(node, (And, Or)):
        return set().union(*(_compared(p) for p in node.parts))
    if isinstance(node, Not):
        return _compared(node.part)
    return set()


def _has_null(side) -> bool:
    return isinstance(side, Literal) and side.value is None
