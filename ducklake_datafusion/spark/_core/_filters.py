"""Spark's filters -> the scan's ``Filter`` (``scan.Filter``), from any of Spark's forms.

Spark states a filter in several forms: the ``sources.Filter`` objects of the JVM (sent by
the catalog as JSON, ``planner/_filters_json``), pyspark's data source filters
(``source``), and the user's ``where=`` text (``parquet/_where``). Each adapter walks its
own form and hands this module the leaves in Spark's terms (the filter's name as Spark's
``sources`` spell it, a top-level column, a literal), so every form becomes the scan's
filter in one step, by the same rules.

A filter is taken only when the expression means exactly what Spark means, because Spark
does not re-check filters it was told are handled. Taken filters become the scan plan's
filter: the planner prunes files with catalog statistics, every executor applies it
exactly (after deletes). Anything else goes back to Spark unchanged:

* only top-level columns whose Spark type is the one this source derives (a column the
  user re-typed with ``spark.read.schema`` is compared by Spark, not by us);
* literals must convert to the column's Arrow type without changing value (``u8 > -1`` on
  an unsigned column, ``f4 = 1.1`` on a float, sub-second times on ``timestamp_s`` ...);
* no NULL or NaN literals (SQL ``= NULL`` is never true; NaN ordering is left to Spark);
  no filters on ``timestamp_ns`` columns, which Spark sees floored to microseconds, nor
  on nested or time columns.

SQL three-valued logic is kept: a filter that is NULL for a row in Spark is NULL (or
false) in ours, also under ``Not``, which is moved down to the leaves (``NOT (a AND b)`` is
``NOT a OR NOT b`` in three-valued logic too). Our ``In`` (as pyarrow's ``is_in``, which
executors apply) is false rather than NULL for a NULL input, so ``Not(In)`` is translated
as ``x IS NOT NULL AND NOT x IN (...)``. A conjunction keeps the parts that translate (the
filter then prunes less); a disjunction needs all of its parts.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from ... import scan

__all__ = ["SPARK_FILTERS", "FilterColumn", "combine", "condition_filter", "leaf_filter"]

_COMPARISONS = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}
_STRING_MATCH = {
    "StringStartsWith": "starts_with",
    "StringEndsWith": "ends_with",
    "StringContains": "contains",
}
_COMPLEMENTS = {
    "GreaterThan": "LessThanOrEqual",
    "GreaterThanOrEqual": "LessThan",
    "LessThan": "GreaterThanOrEqual",
    "LessThanOrEqual": "GreaterThan",
}
# The leaf filters taken, by the names Spark's ``sources.Filter`` classes have in Scala and
# in pyspark (FilterJson sends the same names).
SPARK_FILTERS = frozenset(
    [*_COMPARISONS, *_STRING_MATCH, "EqualNullSafe", "In", "IsNull", "IsNotNull"]
)
_CONVERT_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


@dataclass(frozen=True, slots=True)
class FilterColumn:
    """A column as Spark names it in filters, and what we may push for it.

    Attributes:
        table_name: the column's name in the DuckLake table.
        arrow_type: the type the executor filters on (the core reader's Arrow type).
        comparable: Spark sees the column with the type this source derives, so value
            comparisons mean the same on both sides. ``IS [NOT] NULL`` is pushed for
            every column regardless.
    """

    table_name: str
    arrow_type: pa.DataType
    comparable: bool


def combine(filters: list[scan.Filter | None]) -> scan.Filter | None:
    """AND the accepted filters together (``None`` when there are none)."""
    return scan.all_of(filters)


def condition_filter(
    node: Any,
    shape: Callable[[Any], tuple[str, tuple] | None],
    columns: Mapping[str, FilterColumn],
    *,
    negated: bool = False,
    whole: bool = False,
) -> scan.Filter | None:
    """The scan ``Filter`` of a condition tree in any of Spark's forms, or ``None``.

    Args:
        node: the tree's root, in the adapter's own form.
        shape: what a node is: ``("And", children)``, ``("Or", children)``, ``("Not",
            (child,))``, ``("leaf", (filter name, column name, value))`` (a name of
            :data:`SPARK_FILTERS`; ``value`` a tuple for ``In``), or ``None`` for anything
            else (left to Spark).
        negated: translate ``NOT node``.
        whole: all of the tree or ``None`` (a delete's condition must not widen), where
            by default a conjunction keeps the parts that translate (pruning by fewer
            conditions is still correct).
    """
    found = shape(node)
    if found is None:
        return None
    kind, args = found
    if kind == "Not":
        return condition_filter(args[0], shape, columns, negated=not negated, whole=whole)
    if kind in ("And", "Or"):
        parts = [condition_filter(c, shape, columns, negated=negated, whole=whole) for c in args]
        if (kind == "And") != negated and not (whole and None in parts):
            return combine(parts)  # a conjunction, also after moving NOT down
        return None if any(p is None for p in parts) else scan.Or(tuple(parts))
    if kind != "leaf":
        return None
    name, column_name, value = args
    return leaf_filter(name, column_name, value, columns, negated=negated)


def leaf_filter(
    name: str,
    column_name: str,
    value: Any,
    columns: Mapping[str, FilterColumn],
    *,
    negated: bool = False,
) -> scan.Filter | None:
    """The exact scan ``Filter`` of one Spark filter (``NOT`` it when ``negated``).

    ``name`` is the filter's class name in Spark's ``sources`` (:data:`SPARK_FILTERS`);
    ``column_name`` a top-level column as Spark names it; ``value`` its literal (a tuple
    for ``In``, unused for ``IsNull`` / ``IsNotNull``). ``None`` leaves it to Spark.
    """
    column = _column(column_name, columns)
    if column is None:
        return None
    if negated and name == "In":
        values = _literal_set(value, column)
        if values is None:
            return None
        field = scan.Column(column.table_name)
        return scan.And((scan.IsNull(field, negated=True), scan.Not(scan.In(field, *values))))
    if negated and name in _COMPLEMENTS:  # NOT (k >= 1) is k < 1, NULL where k is, as Spark
        name, negated = _COMPLEMENTS[name], False  # simplifies it (and pruning reads it)
    found = _leaf(name, column, value)
    if found is None or not negated:
        return found
    return scan.Not(found)


def _leaf(name: str, column: FilterColumn, value: Any) -> scan.Filter | None:
    field = scan.Column(column.table_name)
    if name == "IsNull":
        return scan.IsNull(field)
    if name == "IsNotNull":
        return scan.IsNull(field, negated=True)
    if not column.comparable:
        return None
    if name == "EqualNullSafe":
        if value is None:
            return scan.IsNull(field)
        literal = _literal(value, column.arrow_type)
        # never NULL, so that Not(EqualNullSafe) keeps rows where the column is NULL
        if literal is None:
            return None
        return scan.And((scan.IsNull(field, negated=True), scan.Compare("=", field, literal)))
    if name in _COMPARISONS:
        literal = _literal(value, column.arrow_type)
        return None if literal is None else scan.Compare(_COMPARISONS[name], field, literal)
    if name == "In":
        values = _literal_set(value, column)
        return None if values is None else scan.In(field, *values)
    if name in _STRING_MATCH:
        if not pa.types.is_string(column.arrow_type) or not isinstance(value, str):
            return None
        return scan.StringMatch(_STRING_MATCH[name], field, value)
    return None


def _column(name: object, columns: Mapping[str, FilterColumn]) -> FilterColumn | None:
    if not isinstance(name, str):
        return None
    if name in columns:
        return columns[name]
    matches = [c for key, c in columns.items() if key.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _literal_set(values, column: FilterColumn | None) -> tuple[tuple, str] | None:
    """``values`` as the values and DuckLake type of an ``In``, or ``None``."""
    if column is None or not column.comparable or not values:
        return None
    literals = [_literal(v, column.arrow_type) for v in values]
    if any(lit is None for lit in literals):
        return None
    return tuple(lit.value for lit in literals), literals[0].type


def _literal(value, arrow_type: pa.DataType) -> scan.Literal | None:
    """``value`` as a literal of ``arrow_type`` if that changes nothing, else ``None``."""
    if value is None or (isinstance(value, bool) and not pa.types.is_boolean(arrow_type)):
        return None
    try:
        if pa.types.is_boolean(arrow_type):
            ok = isinstance(value, bool)
        elif pa.types.is_integer(arrow_type):
            if isinstance(value, Decimal) and value == value.to_integral_value():
                value = int(value)
            ok = isinstance(value, int)
        elif pa.types.is_floating(arrow_type):
            ok = isinstance(value, (int, float)) and not math.isnan(value)
        elif pa.types.is_decimal(arrow_type):
            ok = isinstance(value, (int, Decimal)) and Decimal(value).is_finite()
            value = Decimal(value) if ok else value
        elif pa.types.is_string(arrow_type):
            ok = isinstance(value, str)
        elif pa.types.is_binary(arrow_type):
            ok = isinstance(value, (bytes, bytearray))
            value = bytes(value) if ok else value
        elif pa.types.is_date32(arrow_type):
            ok = isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)
        elif pa.types.is_timestamp(arrow_type):
            ok = (
                isinstance(value, _dt.datetime)
                and arrow_type.unit != "ns"
                and (value.tzinfo is None) == (arrow_type.tz is None)
            )
        else:
            ok = False
        if not ok:
            return None
        scalar = pa.scalar(value, type=arrow_type)
        return scan.literal_of(scalar) if scalar.as_py() == value else None
    except _CONVERT_ERRORS:  # literal_of's ValueError: no DuckLake type holds it
        return None
