"""The filters Spark pushes to the data source, from pyspark's filter objects to the
scan's ``Filter`` in one step (``_core``'s ``condition_filter``, which applies the same rules
to every form Spark states a filter in)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import datasource
from pyspark.sql.datasource import Filter, Not

from ... import scan
from .._core import SPARK_FILTERS, FilterColumn, condition_filter

__all__ = ["pushed_filter"]

# pyspark's classes of the filters taken, which bear the names Spark's sources give them.
_NAMES = {getattr(datasource, name): name for name in SPARK_FILTERS}


def pushed_filter(spark_filter: Filter, columns: Mapping[str, FilterColumn]) -> scan.Filter | None:
    """The exact scan ``Filter`` of one pushed filter, or ``None`` to leave it to Spark."""
    return condition_filter(spark_filter, _shape, columns)


def _shape(spark_filter) -> tuple[str, tuple] | None:
    if isinstance(spark_filter, Not):
        return "Not", (spark_filter.child,)
    name = _NAMES.get(type(spark_filter))
    path = getattr(spark_filter, "attribute", None)
    if name is None or not isinstance(path, tuple) or len(path) != 1:
        return None  # nested fields are left to Spark
    return "leaf", (name, path[0], getattr(spark_filter, "value", None))
