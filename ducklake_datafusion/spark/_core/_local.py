"""Small Arrow tables (inlined rows, delete masks, a driver-side change feed) as Spark
DataFrames, exactly, on every supported pyspark.

pyspark 4.0+ takes a ``pyarrow.Table`` in ``createDataFrame`` and sends it to the JVM as
Arrow. pyspark 3.5 does not; its Arrow route goes through pandas, where a BIGINT column
with a NULL becomes float64 and loses every value beyond 2**53. There the rows go as
Python values instead (``Decimal``, ``datetime`` with its zone, ``bytes``), which Spark
converts exactly; these tables are small, so the slower route costs little.
"""

from __future__ import annotations

import functools

import pyarrow as pa

from ._versions import pyspark_at_least

__all__ = ["local_frame"]


@functools.cache
def _takes_arrow() -> bool:
    return pyspark_at_least(4, 0)


def local_frame(spark, table: pa.Table, schema):
    """``table`` (already in the Arrow types Spark expects) as a DataFrame of ``schema``."""
    if _takes_arrow():
        return spark.createDataFrame(table, schema=schema)
    columns = [column.to_pylist() for column in table.columns]
    rows = list(zip(*columns, strict=True)) if columns else [()] * table.num_rows
    return spark.createDataFrame(rows, schema=schema)
