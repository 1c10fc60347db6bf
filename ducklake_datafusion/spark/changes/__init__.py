"""The change feed in Spark: ``read_changes`` and the change-feed mode of the data source.

From pyspark 4.1 the executors read the two states of every change through the internal
``ducklake_change_side`` source (``_side_source``, ``_side_units``) and Spark joins them
on rowid (``_feed``); on pyspark 3.5 and 4.0 the driver computes the feed
(``_driver_feed``). Both, and the ``read_changes`` option of the ``ducklake`` format
(``spark/source``), resolve the bounds and build the feed's schema the same way
(``_range``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ._driver_feed import driver_changes_frame
from ._range import (
    ChangeRange,
    changes_schema,
    feed_table,
    feed_target,
    resolve_bounds,
    resolve_changes,
)

__all__ = [
    "ChangeRange",
    "changes_schema",
    "driver_changes_frame",
    "feed_table",
    "feed_target",
    "read_changes_frame",
    "resolve_bounds",
    "resolve_changes",
]


def read_changes_frame(spark, table: str, options: Mapping[str, str], schema=None):
    """The change feed of ``table`` as a Spark DataFrame computed on the executors.

    Needs pyspark 4.1+: the side scans are Python data sources, whose API older releases
    lack, so their module is imported only here. Arguments and errors as
    ``_feed.read_changes_frame``.
    """
    from ._feed import read_changes_frame as executor_feed

    return executor_feed(spark, table, options, schema)
