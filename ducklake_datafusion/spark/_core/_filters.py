"""Spark's pushed-down ``Filter`` objects -> the scan's ``Filter`` (``scan.Filter``).

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
false) in ours, also under ``Not``. Our ``In`` (as pyarrow's ``is_in``, which executors
apply) is false rather than NULL for a NULL input, so ``Not(In)`` is translated as ``x IS
NOT NULL AND NOT x IN (...)``.
pyspark 4.1 sends a conjunction as separate filters and never sends ``Or``; the accepted
ones are AND-ed.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa

from ... import scan
from ._filter_classes import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

__all__ = ["FilterColumn", "combine", "translate_filter"]

_COMPARISONS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}
_STRING_MATCH = {
    StringStartsWith: "starts_with",
    StringEndsWith: "ends_with",
    StringContains: "contains",
}
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


def combine(filters: list[scan.Filter]) -> scan.Filter | None:
    """AND the accepted filters together (``None`` when there are none)."""
    return scan.all_of(filters)


def translate_filter(
    spark_filter: Filter, columns: Mapping[str, FilterColumn]
) -> scan.Filter | None:
    """The exact scan ``Filter`` of one Spark filter, or ``None`` to leave it to Spark."""
    if isinstance(spark_filter, Not):
        child = spark_filter.child
        if isinstance(child, In):
            column = _column(child, columns)
            values = _literal_set(child.value, column)
            if values is None:
                return None
            field = scan.Column(column.table_name)
            return scan.And((scan.IsNull(field, negated=True), scan.Not(scan.In(field, *values))))
        inner = translate_filter(child, columns)
        return None if inner is None else scan.Not(inner)
    column = _column(spark_filter, columns)
    if column is None:
        return None
    field = scan.Column(column.table_name)
    if isinstance(spark_filter, IsNull):
        return scan.IsNull(field)
    if isinstance(spark_filter, IsNotNull):
        return scan.IsNull(field, negated=True)
    if not column.comparable:
        return None
    kind = type(spark_filter)
    if kind is EqualNullSafe:
        if spark_filter.value is None:
            return scan.IsNull(field)
        literal = _literal(spark_filter.value, column.arrow_type)
        # never NULL, so that Not(EqualNullSafe) keeps rows where the column is NULL
        if literal is None:
            return None
        return scan.And((scan.IsNull(field, negated=True), scan.Compare("=", field, literal)))
    if kind in _COMPARISONS:
        literal = _literal(spark_filter.value, column.arrow_type)
        return None if literal is None else scan.Compare(_COMPARISONS[kind], field, literal)
    if kind is In:
        values = _literal_set(spark_filter.value, column)
        return None if values is None else scan.In(field, *values)
    if kind in _STRING_MATCH:
        if not pa.types.is_string(column.arrow_type) or not isinstance(spark_filter.value, str):
            return None
        return scan.StringMatch(_STRING_MATCH[kind], field, spark_filter.value)
    return None


def _column(spark_filter: Filter, columns: Mapping[str, FilterColumn]) -> FilterColumn | None:
    path = getattr(spark_filter, "attribute", None)
    if not isinstance(path, tuple) or len(path) != 1:
        return None  # nested fields are left to Spark
    name = path[0]
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
