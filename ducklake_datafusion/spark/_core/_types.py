"""DuckLake column types (as this package's Arrow types) -> Spark SQL types.

Spark reads the batches a Python data source yields without converting them: each Arrow
column must already have the exact type Spark derives from the declared Spark type
(``pyspark.sql.pandas.types.to_arrow_type``), or the JVM misreads or rejects it. So the
mapping is decided once here, from the Arrow type the core reader produces, and
:func:`spark_arrow_type` gives the Arrow type every batch is cast to.

Choices (Spark has no unsigned integers, no nanosecond timestamps, no 128-bit integers):

=============================  ==========================  ===================================
DuckLake                       Arrow (core reader)         Spark
=============================  ==========================  ===================================
utinyint / usmallint / uint    uint8 / uint16 / uint32     smallint / int / bigint (widened)
ubigint                        uint64                      decimal(20,0)
hugeint / uhugeint             decimal256(39,0)            decimal(38,0) (39 digits refused)
uuid, json, variant            string                      string (variant: JSON text)
time, timetz                   time64[us]                  time(6)
timestamp_s/_ms/(us)           timestamp[s/ms/us]          timestamp_ntz (exact)
timestamp_ns                   timestamp[ns]               timestamp_ntz (floored to us)
timestamptz                    timestamp[us, UTC]          timestamp
interval                       month_day_nano_interval     struct<months:int, days:int,
                                                           nanoseconds:bigint>
=============================  ==========================  ===================================

Spark's ``interval`` (CalendarIntervalType) cannot be returned through Arrow by a Python
data source (pyspark 4.1: "CalendarIntervalType() is not supported in conversion to
Arrow"), ``interval day to second`` cannot hold months and ``interval year to month``
cannot hold days, so an INTERVAL column is read as its three exact parts (pyarrow's
``MonthDayNano`` fields) rather than refused: a table with one INTERVAL column stays
readable, and ``make_interval(0, iv.months, 0, iv.days, 0, 0, CAST(iv.nanoseconds AS
DECIMAL(38, 0)) / 1000000000)`` rebuilds a Spark interval (to the microsecond) where one
is needed. Nanosecond timestamps are floored, not
truncated toward zero, so a value keeps its calendar second (see ``_arrow``).
"""

from __future__ import annotations

import inspect

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ...errors import UnsupportedTypeError
from ._versions import pyspark_version

try:
    from pyspark.sql.types import TimeType
except ImportError:  # pyspark < 4.1 has no TIME type
    TimeType = None
from ...catalog import ColumnSpec
from ...scan import WIDE_INTEGER_TYPE

__all__ = [
    "schema_from_ddl",
    "spark_arrow_field",
    "spark_arrow_type",
    "spark_schema",
    "spark_type",
]

_MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType limit

# INTERVAL as its exact parts; _arrow.INTERVAL_STRUCT is the Arrow form of this type.
_INTERVAL = StructType(
    [
        StructField("months", IntegerType(), nullable=True),
        StructField("days", IntegerType(), nullable=True),
        StructField("nanoseconds", LongType(), nullable=True),
    ]
)

_SIMPLE: dict[pa.DataType, DataType] = {
    pa.bool_(): BooleanType(),
    pa.int8(): ByteType(),
    pa.int16(): ShortType(),
    pa.int32(): IntegerType(),
    pa.int64(): LongType(),
    pa.uint8(): ShortType(),
    pa.uint16(): IntegerType(),
    pa.uint32(): LongType(),
    pa.uint64(): DecimalType(20, 0),
    pa.float32(): FloatType(),
    pa.float64(): DoubleType(),
    pa.string(): StringType(),
    pa.large_string(): StringType(),
    pa.string_view(): StringType(),
    pa.binary(): BinaryType(),
    pa.large_binary(): BinaryType(),
    pa.binary_view(): BinaryType(),
    pa.date32(): DateType(),
}


def spark_type(arrow_type: pa.DataType, column: str) -> DataType:
    """The Spark type of a column the core reader returns as ``arrow_type``.

    Args:
        arrow_type: the Arrow type of the column (``ColumnSpec.arrow_type``).
        column: the column's name or dotted path, for the error message.

    Raises:
        UnsupportedTypeError: the type has no faithful Spark form.
    """
    simple = _SIMPLE.get(arrow_type)
    if simple is not None:
        return simple
    if arrow_type == WIDE_INTEGER_TYPE:  # HUGEINT/UHUGEINT: values of 39 digits refused
        return DecimalType(38, 0)
    if pa.types.is_decimal(arrow_type) and arrow_type.precision <= _MAX_DECIMAL_PRECISION:
        return DecimalType(arrow_type.precision, arrow_type.scale)
    if pa.types.is_timestamp(arrow_type):
        return TimestampType() if arrow_type.tz is not None else TimestampNTZType()
    if pa.types.is_time(arrow_type):
        if TimeType is None:
            raise UnsupportedTypeError(
                f"column {column!r} is a TIME, which Spark has from pyspark 4.1 on (pyspark "
                f"{pyspark_version()} is installed); read the other columns by passing a "
                "schema without it, or use pyspark 4.1 to 4.3"
            )
        return TimeType(6)
    if pa.types.is_struct(arrow_type):
        return StructType(
            [
                StructField(f.name, spark_type(f.type, f"{column}.{f.name}"), nullable=True)
                for f in arrow_type
            ]
        )
    if pa.types.is_map(arrow_type):
        return MapType(
            spark_type(arrow_type.key_type, f"{column}.key"),
            spark_type(arrow_type.item_type, f"{column}.value"),
            valueContainsNull=True,
        )
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return ArrayType(spark_type(arrow_type.value_type, f"{column}.element"), containsNull=True)
    if pa.types.is_interval(arrow_type):
        return _INTERVAL
    raise UnsupportedTypeError(
        f"column {column!r} has Arrow type {arrow_type}, which has no Spark equivalent here; "
        "read the other columns by passing a schema without it (spark.read.schema(...))"
    )


def spark_schema(columns: tuple[ColumnSpec, ...]) -> StructType:
    """The Spark schema of a table: one nullable field per top-level column."""
    return StructType(
        [StructField(c.name, spark_type(c.arrow_type, c.name), nullable=True) for c in columns]
    )


# The Arrow schema a Python data source's batches must have: pyspark 4.2+ derives it with
# ``to_arrow_schema(schema, timezone="UTC")`` and refuses any other (4.1 took UTC itself).
_ARROW_OPTIONS = (
    {"timezone": "UTC"} if "timezone" in inspect.signature(to_arrow_type).parameters else {}
)


def spark_arrow_field(field: StructField, arrow_type: pa.DataType) -> pa.Field:
    """The Arrow field of a declared Spark field: its type and, as pyspark 4.2+ checks
    against the schema it derives, its nullability."""
    return pa.field(field.name, arrow_type, nullable=field.nullable)


def spark_arrow_type(data_type: DataType, column: str) -> pa.DataType:
    """The Arrow type Spark expects in the batches for a column declared as ``data_type``."""
    try:
        return to_arrow_type(data_type, **_ARROW_OPTIONS)
    except Exception as exc:  # pyspark raises its own TypeError subclasses
        raise UnsupportedTypeError(
            f"column {column!r} is declared as {data_type.simpleString()}, which Spark cannot "
            f"receive from a Python data source ({exc})"
        ) from exc


def schema_from_ddl(ddl: str) -> StructType:
    """``StructType.fromDDL`` (pyspark 4.0+), or Spark's own parser on 3.5."""
    if hasattr(StructType, "fromDDL"):
        return StructType.fromDDL(ddl)
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)
