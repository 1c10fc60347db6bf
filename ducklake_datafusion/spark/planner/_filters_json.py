"""The filters the JVM catalog was pushed, from their JSON form to the scan's ``Filter``.

``DuckLakeScanBuilder`` (in the package's jar) receives Spark's ``sources.Filter`` objects
and sends each it can spell as JSON: ``{"op": "EqualTo", "attr": "k", "value": {"long":
5}}``, ``And`` / ``Or`` with ``left`` / ``right``, ``Not`` with ``child``, ``In`` with
``values``, ``IsNull`` / ``IsNotNull``, the ``String*`` matches. A literal is one of
``long`` (any integral type), ``double`` (its Java text, exact), ``string``, ``bool``,
``date`` (ISO) or ``decimal`` (its text); a filter on any other literal is not sent.

Each JSON node is read as the tree the kernel translates (``_core``'s
``condition_filter``): the leaves by the same rules as the filters pushed to the data
source, so the catalog prunes with exactly the conditions the data source would. Spark
evaluates every filter again after the scan (the catalog reports none as handled): a
filter left out here only prunes less.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal

from ...errors import UnsupportedFeatureError
from ...scan import Filter
from .._core import SPARK_FILTERS, FilterColumn, combine, condition_filter

__all__ = ["json_filter", "whole_json_filter"]

_UNKNOWN = object()


def json_filter(filters: Sequence[Mapping], columns) -> Filter | None:
    """The AND of the filters that translate exactly (``None``: nothing to prune with)."""
    by_name = {c.name: FilterColumn(c.name, c.arrow_type, True) for c in columns}
    return combine([condition_filter(f, _shape, by_name) for f in filters])


def whole_json_filter(filters: Sequence[Mapping], columns) -> Filter | None:
    """The AND of all ``filters`` (``None``: no filter), raising ``UnsupportedFeatureError``
    when one does not translate whole: a delete's condition, which must not widen."""
    by_name = {c.name: FilterColumn(c.name, c.arrow_type, True) for c in columns}
    parts = []
    for spec in filters:
        part = condition_filter(spec, _shape, by_name, whole=True)
        if part is None:
            raise UnsupportedFeatureError(
                f"the condition {json.dumps(spec)} has no exact form in the lake's filters "
                "(a column of a nested or unsupported type, a function, a timestamp or "
                "binary literal)"
            )
        parts.append(part)
    return combine(parts)


def _shape(spec) -> tuple[str, tuple] | None:
    """What one JSON node is, as ``condition_filter`` reads it (``None``: left to Spark)."""
    if not isinstance(spec, Mapping):
        return None
    op = spec.get("op")
    if op in ("And", "Or"):
        return op, (spec.get("left"), spec.get("right"))
    if op == "Not":
        return "Not", (spec.get("child"),)
    if op not in SPARK_FILTERS:
        return None
    attribute = spec.get("attr")
    if not isinstance(attribute, str) or "." in attribute or "`" in attribute:
        return None  # a nested field or a quoted name: left to Spark
    if op == "In":
        value = tuple(_value(v) for v in spec.get("values", ()))
        if any(v is _UNKNOWN for v in value):
            return None
    elif op in ("IsNull", "IsNotNull"):
        value = None
    else:
        value = _value(spec.get("value"))
        if value is _UNKNOWN:
            return None
    return "leaf", (op, attribute, value)


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
