"""Core reader batches -> batches in exactly the Arrow schema Spark expects.

pyspark passes the batches a data source yields straight to the JVM, which reads each
column by its Arrow type. A mismatch (an unsigned integer, a list whose element field is
named ``item`` instead of ``element``, nanosecond times) is misread or rejected there,
far from its cause, so every batch is cast here, column by column, only where needed.

Two conversions are not plain casts, at any nesting depth:

* ``timestamp[ns]`` is floored to whole microseconds (Spark's finest unit), never
  truncated toward zero: ``1969-12-31 23:59:59.999999999`` reads as
  ``1969-12-31 23:59:59.999999``, in the same second, hour and year as the stored value
  and in the partition its epoch transform put it in; ``ts < X`` and ``ts >= X`` keep
  their answers for every microsecond literal ``X``.
* ``month_day_nano_interval`` (DuckDB's INTERVAL) becomes the struct
  ``{months: int, days: int, nanoseconds: bigint}``: the same three exact fields, as no
  Spark interval type can travel through a Python data source.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidOptionError, UnsupportedTypeError
from ...scan import WIDE_INTEGER_TYPE, zero_based

__all__ = [
    "INTERVAL_STRUCT",
    "check_castable",
    "interval_struct",
    "to_spark_batch",
    "to_spark_table",
]

# An INTERVAL in Spark, with pyarrow's MonthDayNano field names.
INTERVAL_STRUCT = pa.struct(
    [("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())]
)
_MONTH_DAY_NANO = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")])


def _cast(array: pa.Array | pa.ChunkedArray, target: pa.DataType):
    # allow_time_truncate: finer timestamps (already floored) -> microseconds; integer
    # overflow and lossy decimals still raise.
    array = _rewritten(array, target)
    return pc.cast(array, options=pc.CastOptions(target, allow_time_truncate=True))


@functools.lru_cache(maxsize=256)
def _needs_rewrite(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether casting ``source`` to ``target`` floors nanoseconds or splits an interval
    somewhere (a user schema may ask for other targets, e.g. BIGINT nanoseconds)."""
    if pa.types.is_timestamp(source):
        return source.unit == "ns" and pa.types.is_timestamp(target) and target.unit != "ns"
    if pa.types.is_interval(source):
        return pa.types.is_struct(target)
    pairs = _child_types(source, target)
    return pairs is not None and any(_needs_rewrite(s, t) for s, t in pairs)


def _child_types(source: pa.DataType, target: pa.DataType):
    """Pairs of (source, target) child types of two nested types of the same shape."""
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        if source.num_fields != target.num_fields:
            return None
        return [(source.field(i).type, target.field(i).type) for i in range(source.num_fields)]
    if pa.types.is_map(source) and pa.types.is_map(target):
        return [(source.key_type, target.key_type), (source.item_type, target.item_type)]
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(source) for f in lists) and any(f(target) for f in lists):
        return [(source.value_type, target.value_type)]
    return None


def _rewritten(array: pa.Array | pa.ChunkedArray, target: pa.DataType):
    """``array`` with nanosecond timestamps floored and intervals as structs where
    ``target`` wants microseconds or a struct (see above)."""
    if not _needs_rewrite(array.type, target):
        return array
    if isinstance(array, pa.ChunkedArray):
        chunks = [_rewrite(chunk, target) for chunk in array.chunks]
        if not chunks:
            return pa.chunked_array([], type=_rewrite(pa.array([], array.type), target).type)
        return pa.chunked_array(chunks)
    return _rewrite(array, target)


def _rewrite(array: pa.Array, target: pa.DataType) -> pa.Array:
    t = array.type
    if not _needs_rewrite(t, target):
        return array
    if pa.types.is_timestamp(t):
        return pc.floor_temporal(array, unit="microsecond")
    if pa.types.is_interval(t):
        return interval_struct(array)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(t):
        children = [
            _rewrite(child, target.field(i).type) for i, child in enumerate(array.flatten())
        ]
        fields = [pa.field(t.field(i).name, c.type) for i, c in enumerate(children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    offsets, start, length = zero_based(array)
    if pa.types.is_map(t):
        keys = _rewrite(array.keys.slice(start, length), target.key_type)
        items = _rewrite(array.items.slice(start, length), target.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, mask=mask)
    build = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
    values = _rewrite(array.values.slice(start, length), target.value_type)
    return build.from_arrays(offsets, values, mask=mask)


def interval_struct(array: pa.Array) -> pa.Array:
    """month_day_nano_interval -> ``{months, days, nanoseconds}`` (zero under NULLs)."""
    buffer = array.buffers()[1]
    if buffer is None or len(array) == 0:
        values = np.zeros(len(array), dtype=_MONTH_DAY_NANO)
    else:
        values = np.frombuffer(buffer, dtype=_MONTH_DAY_NANO)
        values = values[array.offset : array.offset + len(array)]
    children = [pa.array(values[field.name], type=field.type) for field in INTERVAL_STRUCT]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(INTERVAL_STRUCT), mask=mask)


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Rename and cast ``batch`` (columns in ``target`` order) to ``target``."""
    if len(target) == 0:
        return batch.select([])
    arrays = []
    for index, field in enumerate(target):
        column = batch.column(index)
        arrays.append(column if column.type == field.type else _cast_column(column, field))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def to_spark_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """:func:`to_spark_batch` for a whole table (columns in ``target`` order)."""
    if len(target) == 0:
        return table.select([])
    arrays = []
    for index, field in enumerate(target):
        column = table.column(index)
        arrays.append(column if column.type == field.type else _cast_column(column, field))
    return pa.Table.from_arrays(arrays, schema=target)


def _cast_column(column: pa.Array | pa.ChunkedArray, field: pa.Field):
    """``_cast`` of one column; a HUGEINT/UHUGEINT value of 39 digits, which no Spark
    decimal holds, raises our typed error naming the column."""
    try:
        return _cast(column, field.type)
    except pa.ArrowInvalid as exc:
        if not _holds_wide_integers(column.type):
            raise
        raise UnsupportedTypeError(
            f"column {field.name!r} holds a HUGEINT/UHUGEINT value of 39 digits, beyond "
            f"Spark's largest decimal, decimal(38, 0) ({exc}); select other columns, or "
            "read the table from DataFusion, which returns it as decimal256(39, 0)"
        ) from exc


def _holds_wide_integers(arrow_type: pa.DataType) -> bool:
    if arrow_type == WIDE_INTEGER_TYPE:
        return True
    if pa.types.is_struct(arrow_type):
        return any(_holds_wide_integers(f.type) for f in arrow_type)
    if pa.types.is_map(arrow_type):
        return _holds_wide_integers(arrow_type.key_type) or _holds_wide_integers(
            arrow_type.item_type
        )
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _holds_wide_integers(arrow_type.value_type)
    return False


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
