"""The integer bounds of a filter, for the catalog's first cut (``catalog._file_cut``).

Only what every row the filter keeps must satisfy is taken: the conjuncts at the top of
the filter (``and``), each a comparison or ``is_in`` of one integer column with integer
literals. Anything else bounds nothing, which cuts nothing: the planner still prunes the
files the catalog hands over, with the whole filter (``_pruning``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import CUT_TYPES, ColumnBound, StatsCut, bounded
from ..types import ColumnSpec
from ._filters import Call, Field, Literal, Node, decode_expression
from ._pruning import _FLIP, in_values

__all__ = ["catalog_cut"]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def catalog_cut(filter: pc.Expression | None, columns: Sequence[ColumnSpec]) -> StatsCut | None:
    """The :class:`StatsCut` of ``filter`` over ``columns``, or None if it bounds nothing."""
    if filter is None:
        return None
    try:
        node = decode_expression(filter)
    except Exception:  # noqa: BLE001 - no cut is always correct
        return None
    by_name = {c.name: c for c in columns if not c.children and c.type_name.lower() in CUT_TYPES}
    return bounded(StatsCut(tuple(_conjunct_bounds(node, by_name))))


# An IN list of more values is cut by its range only (the SQL grows with the list).
_MAX_POINTS = 64


def _conjunct_bounds(node: Node, by_name: dict):
    """A :class:`ColumnBound` for each bounding conjunct of ``node``."""
    if not isinstance(node, Call):
        return
    if node.function in ("and", "and_kleene"):
        for arg in node.args:
            yield from _conjunct_bounds(arg, by_name)
        return
    if node.function == "is_in" and len(node.args) == 1 and node.options:
        column = _column(node.args[0], by_name)
        values = in_values(node.options)
        if column is not None and values and all(_is_integer(v) for v in values):
            points = tuple(sorted(set(values))) if len(set(values)) <= _MAX_POINTS else ()
            yield ColumnBound(column.column_id, min(values), max(values), points)
        return
    if node.function not in _FLIP or node.function == "not_equal" or len(node.args) != 2:
        return
    left, right, name = node.args[0], node.args[1], node.function
    if isinstance(left, Literal) and isinstance(right, Field):
        left, right, name = right, left, _FLIP[name]
    column = _column(left, by_name)
    if column is None or not isinstance(right, Literal):
        return
    value = _integer_literal(right.value)
    if value is None:
        return
    yield ColumnBound(column.column_id, *_SIDES[name](value))


_SIDES = {
    "equal": lambda v: (v, v),
    "less": lambda v: (None, v - 1),
    "less_equal": lambda v: (None, v),
    "greater": lambda v: (v + 1, None),
    "greater_equal": lambda v: (v, None),
}


def _column(node: Node, by_name: dict) -> ColumnSpec | None:
    if isinstance(node, Field) and len(node.path) == 1:
        return by_name.get(node.path[0])
    return None


def _integer_literal(scalar: pa.Scalar) -> int | None:
    if not scalar.is_valid or not pa.types.is_integer(scalar.type):
        return None
    value = scalar.as_py()
    return value if _is_integer(value) else None


def _is_integer(value) -> bool:
    return type(value) is int and _I64_MIN < value < _I64_MAX
