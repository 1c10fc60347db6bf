"""Spark's data source filter classes, or stand-ins of the same shape before pyspark 4.1.

``read_table(where=...)`` translates the filters Spark would push to a Parquet scan into
scan ``Filter``s through the same code (``_filters``) that translates the filters
pushed to the Python data source. That code matches on pyspark's ``Filter`` classes, which
exist from pyspark 4.1; on 3.5 and 4.0 these frozen dataclasses of the same names and
fields (``attribute``: a column path, ``value``; ``Not.child``) take their place, so the
translation is the same on every release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "EqualNullSafe",
    "EqualTo",
    "Filter",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "Not",
    "StringContains",
    "StringEndsWith",
    "StringStartsWith",
]

try:
    from pyspark.sql.datasource import (
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
except ImportError:  # pyspark 3.5 / 4.0: no filter pushdown API

    @dataclass(frozen=True)
    class Filter:
        """A condition on one column path (``attribute``)."""

    @dataclass(frozen=True)
    class _Valued(Filter):
        attribute: tuple[str, ...]
        value: Any

    @dataclass(frozen=True)
    class _Unary(Filter):
        attribute: tuple[str, ...]

    class EqualTo(_Valued):
        """``attribute = value``."""

    class EqualNullSafe(_Valued):
        """``attribute <=> value``."""

    class GreaterThan(_Valued):
        """``attribute > value``."""

    class GreaterThanOrEqual(_Valued):
        """``attribute >= value``."""

    class LessThan(_Valued):
        """``attribute < value``."""

    class LessThanOrEqual(_Valued):
        """``attribute <= value``."""

    class In(_Valued):
        """``attribute IN value`` (a tuple)."""

    class StringStartsWith(_Valued):
        """``attribute LIKE 'value%'``."""

    class StringEndsWith(_Valued):
        """``attribute LIKE '%value'``."""

    class StringContains(_Valued):
        """``attribute LIKE '%value%'``."""

    class IsNull(_Unary):
        """``attribute IS NULL``."""

    class IsNotNull(_Unary):
        """``attribute IS NOT NULL``."""

    @dataclass(frozen=True)
    class Not(Filter):
        """``NOT child``."""

        child: Filter
