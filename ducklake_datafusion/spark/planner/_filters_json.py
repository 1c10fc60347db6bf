"""The filters the JVM catalog was pushed, from their JSON form to the scan's ``Filter``.

``DuckLakeScanBuilder`` (in the package's jar) receives Spark's ``sources.Filter`` objects
and sends each it can spell as JSON: ``{"op": "EqualTo", "attr": "k", "value": {"long":
5}}``, ``And`` / ``Or`` with ``left`` / ``right``, ``Not`` with ``child``, ``In`` with
``values``, ``IsNull`` / ``IsNotNull``, the ``String*`` matches. A literal is one of
``long`` (any integral type), ``double`` (its Java text, exact), ``string``, ``bool``,
``date`` (ISO) or ``decimal`` (its text); a filter on any other literal is not sent.

They are turned into the pyspark filter objects the data source receives and translated
by the same code (``_filters``), so the catalog prunes with exactly the conditions the data
source would. Spark evaluates every filter again after the scan (the catalog reports none
as handled): a filter left out here only prunes less.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from decimal import Decimal

from ...scan import Filter, Or
from .._core import FilterColumn, combine, sources, translate_filter

__all__ = ["json_filter"]

_VALUED = {
    "EqualTo": sources.EqualTo,
    "EqualNullSafe": sources.EqualNullSafe,
    "GreaterThan": sources.GreaterThan,
    "GreaterThanOrEqual": sources.GreaterThanOrEqual,
    "LessThan": sources.LessThan,
    "LessThanOrEqual": sources.LessThanOrEqual,
    "StringStartsWith": sources.StringStartsWith,
    "StringEndsWith": sources.StringEndsWith,
    "StringContains": sources.StringContains,
}
_UNARY = {"IsNull": sources.IsNull, "IsNotNull": sources.IsNotNull}
_UNKNOWN = object()


def json_filter(filters: Sequence[Mapping], columns) -> Filter | None:
    """The AND of the filters that translate exactly (``None``: nothing to prune with)."""
    by_name = {c.name: FilterColumn(c.name, c.arrow_type, True) for c in columns}
    found = [_translated(f, by_name) for f in filters]
    return combine([e for e in found if e is not None])


def _translated(spec: Mapping, columns) -> Filter | None:
    op = spec.get("op")
    if op in ("And", "Or"):
        left = _translated(spec["left"], columns)
        right = _translated(spec["right"], columns)
        if op == "And":
            return combine([e for e in (left, right) if e is not None])
        return None if left is None or right is None else Or((left, right))
    if op == "Not":
        child = _source_filter(spec["child"])
        return None if child is None else translate_filter(sources.Not(child), columns)
    found = _source_filter(spec)
    return None if found is None else translate_filter(found, columns)


def _source_filter(spec: Mapping):
    """The pyspark filter of one leaf, or ``None`` (a nested field, an unknown literal)."""
    op = spec.get("op")
    attribute = spec.get("attr")
    if not isinstance(attribute, str) or "." in attribute or "`" in attribute:
        return None  # a nested field or a quoted name: left to Spark
    path = (attribute,)
    if op in _UNARY:
        return _UNARY[op](path)
    if op == "In":
        values = [_value(v) for v in spec.get("values", ())]
        return None if any(v is _UNKNOWN for v in values) else sources.In(path, tuple(values))
    if op in _VALUED:
        value = _value(spec.get("value"))
        return None if value is _UNKNOWN else _VALUED[op](path, value)
    return None


def _value(spec):
    if not isinstance(spec, Mapping) or len(spec) != 1:
        return _UNKNOWN
    ((kind, text),) = spec.items()
    try:
        if kind == "long":
            return int(text)
        if kind == "double":
            return float(text)
        if kind == "string" and isinstance(text, str):
            return text
        if kind == "bool" and isinstance(text, bool):
            return text
        if kind == "date":
            return _dt.date.fromisoformat(text)
        if kind == "decimal":
            return Decimal(text)
    except (TypeError, ValueError, ArithmeticError):
        return _UNKNOWN
    return _UNKNOWN
