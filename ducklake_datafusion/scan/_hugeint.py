"""HUGEINT and UHUGEINT values, exactly: ``decimal256(39, 0)``.

Both 128-bit integer types of DuckDB have values of 39 digits (HUGEINT from -2**127,
UHUGEINT up to 2**128 - 1), one more than ``decimal128`` holds, so this reader types them
as ``decimal256(39, 0)``, which holds every value of both exactly.

Where the values come from, and how each is made exact:

* Parquet files: DuckDB's writer stores both types as DOUBLE; the double's exact value
  is cast to ``decimal256(39, 0)`` (``_conform``), as DuckDB's own cast gives it.
* Values DuckDB itself exports to Arrow (inlined rows, parsed defaults, decrypted files):
  DuckDB hands both types over as ``decimal128(38, 0)`` holding the raw 128 bits (duckdb
  1.5.5). A HUGEINT is then bit-exact, only beyond the declared precision; a UHUGEINT of
  2**127 or more reads *negative* (its bits read as signed). :func:`exact_wide_integers`
  widens those arrays to ``decimal256(39, 0)`` without a precision check and adds 2**128
  to each negative UHUGEINT, at any nesting depth.

Spark has no decimal beyond 38 digits: there both types are ``decimal(38, 0)`` and a value
beyond 38 digits raises ``UnsupportedTypeError`` naming the column (``spark/_core/_arrow``).
"""

from __future__ import annotations

import functools
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec
from ._arrays import zero_based

__all__ = ["WIDE_INTEGER_TYPE", "exact_wide_integers"]

WIDE_INTEGER_TYPE = pa.decimal256(39, 0)
_WIDE = ("int128", "uint128")


@functools.cache
def _decimal_scalar(value: int) -> pa.Scalar:
    """A constant of the wide type, made on first use: ``pa.scalar`` of a ``Decimal``
    imports pandas, which made ``import ducklake_datafusion`` take 0.56 s instead of 0.41."""
    return pa.scalar(Decimal(value), WIDE_INTEGER_TYPE)


def exact_wide_integers(array: pa.Array, column: ColumnSpec) -> pa.Array:
    """``array`` as DuckDB exported it, with every HUGEINT/UHUGEINT value made exact.

    Leaves of other types, and wide leaves that are not DuckDB's ``decimal128`` export
    (doubles from a Parquet file, say), are returned as they are, for ``conform``.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not _has_wide(column):
        return array
    return _exact(array, column)


def _has_wide(column: ColumnSpec) -> bool:
    return column.type_name in _WIDE or any(_has_wide(c) for c in column.children)


def _exact(array: pa.Array, column: ColumnSpec) -> pa.Array:
    t = array.type
    if column.type_name in _WIDE:
        if not pa.types.is_decimal128(t) or t.scale != 0:
            return array
        return _unsigned(array) if column.type_name == "uint128" else _widened(array)
    if pa.types.is_struct(t) and column.children:
        by_name = {c.name: c for c in column.children}
        children = []
        for index in range(t.num_fields):
            spec = by_name.get(t.field(index).name)
            child = array.field(index)
            children.append(child if spec is None else exact_wide_integers(child, spec))
        fields = [t.field(i).with_type(c.type) for i, c in enumerate(children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=_nulls(array))
    if pa.types.is_map(t) and len(column.children) == 2:
        offsets, start, length = zero_based(array)
        keys = exact_wide_integers(array.keys.slice(start, length), column.children[0])
        items = exact_wide_integers(array.items.slice(start, length), column.children[1])
        return pa.MapArray.from_arrays(offsets, keys, items, mask=_nulls(array))
    if pa.types.is_list(t) and column.children:
        offsets, start, length = zero_based(array)
        values = exact_wide_integers(array.values.slice(start, length), column.children[0])
        return pa.ListArray.from_arrays(offsets, values, mask=_nulls(array))
    return array


def _widened(array: pa.Array) -> pa.Array:
    """The raw 128-bit values, in a type whose precision holds them (no check: the
    values are DuckDB's own and of at most 39 digits)."""
    return array.cast(WIDE_INTEGER_TYPE, safe=False)


def _unsigned(array: pa.Array) -> pa.Array:
    """UHUGEINT bits that DuckDB exported as signed: negative values are + 2**128."""
    wide = _widened(array)
    negative = pc.less(wide, _decimal_scalar(0))
    if not pc.any(negative).as_py():
        return wide
    shifted = pc.add(wide, _decimal_scalar(2**128)).cast(WIDE_INTEGER_TYPE, safe=False)
    return pc.if_else(negative, shifted, wide)


def _nulls(array: pa.Array) -> pa.Array | None:
    return pc.is_null(array) if array.null_count else None
