"""The integer bounds of a filter, for the catalog's first cut (``catalog._file_cut``).

Only what every row the filter keeps must satisfy is taken: the conjuncts at the top of
the filter (``and``), each a comparison or ``is_in`` of one integer column with integer
literals. Anything else bounds nothing, which cuts nothing: the planner still prunes the
files the catalog hands over, with the whole filter (``_pruning``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import CUT_TYPES, ColumnBound, ColumnSpec, StatsCut, bounded
from ._filter import COMPARISONS, And, Column, Compare, Filter, In, Literal
from ._pruning import in_values

__all__ = ["catalog_cut"]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def catalog_cut(filter: Filter | None, columns: Sequence[ColumnSpec]) -> StatsCut | None:
    """The :class:`StatsCut` of ``filter`` over ``columns``, or None if it bounds nothing."""
    if filter is None:
        return None
    by_name = {c.name: c for c in columns if not c.children and c.type_name.lower() in CUT_TYPES}
    return bounded(StatsCut(tuple(_conjunct_bounds(filter, by_name))))


# An IN list of more values is cut by its range only (the SQL grows with the list).
_MAX_POINTS = 64


def _conjunct_bounds(node: Filter, by_name: dict):
    """A :class:`ColumnBound` for each bounding conjunct of ``node``."""
    if isinstance(node, And):
        for part in node.parts:
            yield from _conjunct_bounds(part, by_name)
        return
    if isinstance(node, In):
        column = _column(node.column, by_name)
        values = in_values(node)
        if column is not None and values and all(_is_integer(v) for v in values):
            points = tuple(sorted(set(values))) if len(set(values)) <= _MAX_POINTS else ()
            yield ColumnBound(column.column_id, min(values), max(values), points)
        return
    if not isinstance(node, Compare) or node.op == "!=":
        return
    left, right, op = node.left, node.right, node.op
    if isinstance(left, Literal) and isinstance(right, Column):
        left, right, op = right, left, COMPARISONS[op]
    column = _column(left, by_name)
    if column is None or not isinstance(right, Literal):
        return
    value = _integer_literal(right)
    if value is None:
        return
    yield ColumnBound(column.column_id, *_SIDES[op](value))


_SIDES = {
    "=": lambda v: (v, v),
    "<": lambda v: (None, v - 1),
    "<=": lambda v: (None, v),
    ">": lambda v: (v + 1, None),
    ">=": lambda v: (v, None),
}


def _column(node, by_name: dict) -> ColumnSpec | None:
    if isinstance(node, Column) and not node.path and isinstance(node.ref, str):
        return by_name.get(node.ref)
    return None


def _integer_literal(literal: Literal) -> int | None:
    if literal.value is None or literal.type not in _INTEGER_TYPES:
        return None
    value = literal.value
    return value if _is_integer(value) else None


def _is_integer(value) -> bool:
    return type(value) is int and _I64_MIN < value < _I64_MAX
