"""Between the scan's :mod:`filter language <._filter>` and pyarrow: literals both ways, and
the filter as the ``pyarrow.compute.Expression`` an executor applies.

Executors read with pyarrow, so they need pyarrow's expression; nothing else does. The
conversion is also where DuckDB's NaN ordering is put in: DuckDB and DataFusion order NaN
above every number and equal to itself, pyarrow's kernels make every comparison with NaN
false, so comparisons on the floating-point columns an executor names are rewritten.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import arrow_type_for
from ._filter import And, Column, Compare, Filter, In, IsNull, Literal, Not, Or, StringMatch

__all__ = ["literal_of", "scalar_of", "to_expression"]

_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_TIMESTAMP_NAMES = {
    "s": "timestamp_s",
    "ms": "timestamp_ms",
    "us": "timestamp",
    "ns": "timestamp_ns",
}


def _type_name(arrow_type: pa.DataType) -> str | None:
    """The DuckLake type whose values hold those of ``arrow_type`` (None: none does)."""
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_integer(arrow_type) and str(arrow_type) in _INTEGERS:
        return str(arrow_type)
    if pa.types.is_float32(arrow_type):
        return "float32"
    if pa.types.is_float64(arrow_type):
        return "float64"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "varchar"
    if pa.types.is_string_view(arrow_type):
        return "varchar"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "blob"
    if pa.types.is_date(arrow_type):
        return "date"
    if pa.types.is_time(arrow_type):
        return "time"
    if pa.types.is_timestamp(arrow_type):
        return _TIMESTAMP_NAMES[arrow_type.unit] if arrow_type.tz is None else "timestamptz"
    if arrow_type == pa.decimal256(39, 0):
        return "int128"
    if pa.types.is_decimal(arrow_type) and arrow_type.precision <= 38:
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return None


def literal_of(scalar: pa.Scalar) -> Literal:
    """``scalar`` as a :class:`Literal` (``ValueError``: no DuckLake type holds its value
    unchanged, e.g. a nanosecond instant with a time zone)."""
    name = _type_name(scalar.type)
    if name is None:
        raise ValueError(f"no DuckLake type for a {scalar.type} literal")
    target = arrow_type_for(name)
    value = scalar.as_py()
    if scalar.type != target:
        try:
            cast = scalar.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ValueError(f"{scalar.type} literal {scalar} is not a {name}") from exc
        if cast.as_py() != value:
            raise ValueError(f"{scalar.type} literal {scalar} changes as a {name}")
        value = cast.as_py()
    return Literal(value, name)


def scalar_of(literal: Literal) -> pa.Scalar:
    """The pyarrow scalar of ``literal``."""
    return pa.scalar(literal.value, arrow_type_for(literal.type))


def to_expression(node: Filter, nan_ordered: frozenset[str] | set[str] = frozenset()):
    """``node`` as a ``pyarrow.compute.Expression``; comparisons that read a column of
    ``nan_ordered`` (floating-point columns) order NaN as DuckDB does."""
    if isinstance(node, And):
        return _fold(node.parts, nan_ordered, lambda a, b: a & b)
    if isinstance(node, Or):
        return _fold(node.parts, nan_ordered, lambda a, b: a | b)
    if isinstance(node, Not):
        return ~to_expression(node.part, nan_ordered)
    if isinstance(node, Compare):
        left, right = _term(node.left), _term(node.right)
        sides = (node.left, node.right)
        if any(isinstance(s, Column) and s.ref in nan_ordered for s in sides):
            return _nan_compare(node.op, left, right)
        return _COMPARE[node.op](left, right)
    if isinstance(node, In):
        value_set = pa.array(node.values, arrow_type_for(node.type))
        return pc.is_in(_term(node.column), value_set=value_set, skip_nulls=node.skip_nulls)
    if isinstance(node, IsNull):
        column = _term(node.column)
        return column.is_valid() if node.negated else column.is_null()
    if isinstance(node, StringMatch):
        return _MATCH[node.kind](_term(node.column), pattern=node.pattern)
    raise TypeError(f"not a scan filter: {node!r}")


def _fold(parts, nan_ordered, join):
    result = to_expression(parts[0], nan_ordered)
    for part in parts[1:]:
        result = join(result, to_expression(part, nan_ordered))
    return result


def _term(term: Column | Literal):
    if isinstance(term, Literal):
        return pc.scalar(scalar_of(term))
    if not isinstance(term.ref, str):
        raise TypeError(f"column id {term.ref} is not bound to a name (scan.bind)")
    return pc.field(term.ref, *term.path)


_COMPARE = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_MATCH = {"starts_with": pc.starts_with, "ends_with": pc.ends_with, "contains": pc.match_substring}


def _is_nan(term):
    return pc.is_nan(term)


def _nan_compare(op: str, a, b):
    """``a op b`` with NaN above every number and equal to itself."""
    if op in ("<", "<="):
        return _nan_compare(">" if op == "<" else ">=", b, a)
    equal = (a == b) | (_is_nan(a) & _is_nan(b))
    if op == "=":
        return equal
    if op == "!=":
        return ~equal
    greater = (a > b) | (_is_nan(a) & ~_is_nan(b))
    return greater if op == ">" else greater | equal
