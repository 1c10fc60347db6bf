"""``read_changes`` on pyspark 3.5 and 4.0: the change feed computed on the driver.

From pyspark 4.1, ``read_changes`` has the executors read the two states of every change
and Spark join them (``_feed``), through a Python data source those releases lack.
Here the driver computes the feed with the core's ``table_changes`` (the function behind
the SQL table function, exact on every lake) and hands it to Spark as a local DataFrame
(``spark/_core/_local``): the same rows and columns, but the feed must fit in the driver's
memory. Only tables whose every column Spark's own reader returns exactly
(``parquet/_exact_types``) are taken, the columns whose local conversion is exact on every
supported release; any other raises :class:`UnsupportedFeatureError` naming the table and
the column.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._core import SourceOptions, local_frame, require_data_source, schema_from_ddl
from ..parquet import spark_reads_exactly
from ._range import changes_schema, feed_table, feed_target, resolve_changes

__all__ = ["driver_changes_frame"]


def driver_changes_frame(spark, table: str, options: Mapping[str, str], schema=None):
    """The change feed of ``table`` (options as the ``ducklake`` format's, as text).

    Raises:
        UnsupportedFeatureError: a column's type is not one Spark's reader returns exactly.
        SnapshotNotFoundError, InvalidOptionError, TableNotFoundError: bad bounds, options
            or table (from the catalog, before any Spark job).
    """
    parsed = SourceOptions.parse({**options, "path": table})
    found = resolve_changes(parsed)
    for column in found.columns:
        if not spark_reads_exactly(column.type_name):
            require_data_source(
                f"the change feed of table {parsed.table_label} (snapshots {found.first} to "
                f"{found.last})",
                f"column {column.name} is {column.type_name}",
            )
    if isinstance(schema, str):
        schema = schema_from_ddl(schema)
    if schema is None:
        schema = changes_schema(found.columns)
    target, declared = feed_target(schema)
    rows = feed_table(parsed.pinned_changes(found.first, found.last), target, declared)
    return local_frame(spark, rows, schema)
