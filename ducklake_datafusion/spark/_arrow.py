"""Core reader batches -> batches in exactly the Arrow schema Spark expects.

pyspark passes the batches a data source yields straight to the JVM, which reads each
column by its Arrow type. A mismatch (an unsigned integer, a list whose element field is
named ``item`` instead of ``element``, nanosecond times) is misread or rejected there,
far from its cause, so every batch is cast here, column by column, only where needed.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidOptionError

__all__ = ["check_castable", "to_spark_batch", "to_spark_table"]


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    # allow_time_truncate: timestamp_ns -> microseconds (Spark's finest unit); integer
    # overflow and lossy decimals still raise.
    return pc.cast(array, options=pc.CastOptions(target, allow_time_truncate=True))


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Rename and cast ``batch`` (columns in ``target`` order) to ``target``."""
    if len(target) == 0:
        return batch.select([])
    arrays = []
    for index, field in enumerate(target):
        column = batch.column(index)
        arrays.append(column if column.type == field.type else _cast(column, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def to_spark_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """:func:`to_spark_batch` for a whole table (columns in ``target`` order)."""
    if len(target) == 0:
        return table.select([])
    arrays = []
    for index, field in enumerate(target):
        column = table.column(index)
        arrays.append(column if column.type == field.type else _cast(column, field.type))
    return pa.Table.from_arrays(arrays, schema=target)


def check_castable(source: pa.DataType, target: pa.DataType, column: str, declared: str) -> None:
    """Fail at planning time when a user-declared type cannot be produced from the column.

    Raises:
        InvalidOptionError: Arrow has no cast from the column's type to the declared one.
    """
    if source == target:
        return
    try:
        _cast(pa.array([], type=source), target)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InvalidOptionError(
            f"column {column!r} is {source} in the table and cannot be read as {declared} "
            f"as the given schema declares ({exc}); declare it with its own type"
        ) from exc
