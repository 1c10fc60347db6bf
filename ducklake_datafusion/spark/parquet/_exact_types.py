"""The DuckLake column types Spark's own Parquet reader returns exactly.

A table with any other column type is read by the Python data source (``read_table``),
its ``where=`` prunes nothing here (``_where``), and on pyspark 3.5 and 4.0 its change
feed is refused (``changes/_driver_feed``).
"""

from __future__ import annotations

import re

__all__ = ["SPARK_EXACT_TYPES", "spark_reads_exactly"]

# DuckLake types whose Parquet form Spark reads as exactly the value and Spark type our
# Spark schema declares (unsigned types widen as Spark's reader does; timestamp_s/_ms are
# whole microseconds; no nanosecond, time, uuid, interval, hugeint, json, variant,
# geometry or nested types).
SPARK_EXACT_TYPES = frozenset(
    [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float32", "float64", "varchar", "blob", "date", "timestamp",
        "timestamp_us", "timestamp_ms", "timestamp_s", "timestamptz",
    ]
)  # fmt: skip
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")


def spark_reads_exactly(type_name: str) -> bool:
    """Whether Spark's Parquet reader returns a column of this DuckLake type exactly."""
    name = type_name.lower()
    return name in SPARK_EXACT_TYPES or bool(_DECIMAL.match(name))
