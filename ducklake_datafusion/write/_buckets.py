"""``bucket(N)`` partition keys: the bucket of every value, as DuckDB's writer assigns it.

DuckDB puts a row in bucket ``(murmur3_32(value) & 2147483647) % N`` and prunes by it (an
equality filter on the column reads only the files of the value's bucket), so a bucket
computed differently from DuckDB's is a wrong answer for every DuckDB reader of the lake.
Its ``murmur3_32`` (Iceberg's 32-bit hash, seed 0) hashes a value by DuckDB's physical
form of its type:

* integers, booleans (0/1), dates (days), times and timestamps (in the type's own unit:
  seconds for ``timestamp_s``, UTC microseconds for ``timestamptz``) and decimals of up to
  18 digits (the unscaled integer) as one 8-byte little-endian integer;
* floats as the bits of the ``double`` (``-0.0`` as ``0.0``);
* text, JSON and blobs as their bytes;
* every other type as DuckDB's text of the value: unsigned integers (digits) and UUIDs
  (lowercase, hyphenated) are written here; the rest (decimals over 18 digits, nested
  types) are refused by name.

The hash itself runs in the Rust extension (``rust/src/murmur.rs``): every row is hashed.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedFeatureError

__all__ = ["BUCKET", "bucket_count", "bucket_values", "check_bucketable"]

BUCKET = re.compile(r"^bucket\((\d+)\)$")
_INTEGERS = ("boolean", "int8", "int16", "int32", "int64", "date", "time")
_UNITS = {
    "timestamp": 1,
    "timestamp_us": 1,
    "timestamptz": 1,
    "timestamp_ms": 1,
    "timestamp_ns": 1,
    # written as microseconds (Parquet has no seconds), hashed as DuckDB's seconds
    "timestamp_s": 1_000_000,
}
_TEXT = ("varchar", "json", "blob")
_DIGITS = ("uint8", "uint16", "uint32", "uint64")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def bucket_count(transform: str) -> int | None:
    """``N`` of ``bucket(N)``, or ``None`` for another transform."""
    match = BUCKET.match(transform)
    return int(match.group(1)) if match else None


def check_bucketable(type_name: str, description: str) -> None:
    """Refuse, by name, a column type whose bucket this package cannot compute exactly."""
    if _hash_form(type_name) is None:
        raise UnsupportedFeatureError(
            f"{description}: bucket partitioning of a {type_name} column is not written by "
            "this package (nothing was written); write to it with DuckDB"
        )


def bucket_values(column: pa.Array, type_name: str, count: int) -> pa.Array:
    """The bucket (0 to ``count - 1``) of every value of ``column`` (in the files' form of
    DuckLake type ``type_name``), as int32; NULL stays NULL."""
    from .._rust import murmur3_32

    hashes = murmur3_32(_hash_input(column, type_name))
    valid = hashes.is_valid().to_numpy(zero_copy_only=False)
    values = hashes.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    buckets = np.remainder(np.bitwise_and(values, 0x7FFFFFFF), count)
    return pa.array(buckets.astype(np.int32), pa.int32(), mask=~valid)


def _hash_form(type_name: str) -> str | None:
    kind = type_name.lower()
    if kind in _INTEGERS or kind in _UNITS:
        return "integer"
    if kind in ("float32", "float64"):
        return "double"
    if kind in _TEXT:
        return "bytes"
    if kind in _DIGITS:
        return "digits"
    if kind == "uuid":
        return "uuid"
    decimal = _DECIMAL.match(kind)
    if decimal and int(decimal.group(1)) <= 18:
        return "decimal"
    return None


def _hash_input(column: pa.Array, type_name: str) -> pa.Array:
    """``column`` in the form DuckDB hashes (int64, float64, or text/bytes)."""
    kind = type_name.lower()
    form = _hash_form(kind)
    if isinstance(column.type, pa.ExtensionType) and form != "uuid":
        column = column.storage  # JSON: its text
    if form == "integer":
        if pa.types.is_timestamp(column.type) or pa.types.is_time(column.type):
            column = column.cast(pa.int64())  # the stored integer, in its own unit
        elif pa.types.is_date(column.type):
            column = column.cast(pa.int32())
        integers = column.cast(pa.int64())
        unit = _UNITS.get(kind, 1)
        return integers if unit == 1 else _exact_divide(integers, unit)
    if form == "double":
        return column.cast(pa.float64())
    if form == "digits":
        return column.cast(pa.string())
    if form == "uuid":
        return _uuid_text(column)
    if form == "decimal":
        return _unscaled(column)
    return column  # text and bytes hash as they are


def _exact_divide(values: pa.Array, unit: int) -> pa.Array:
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    numbers = values.fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(np.floor_divide(numbers, unit), pa.int64(), mask=~valid)


def _unscaled(column: pa.Array) -> pa.Array:
    """A decimal of at most 18 digits as its unscaled integer (DuckDB keeps it in an
    int16/32/64): the low 8 bytes of each 16-byte little-endian value."""
    if not pa.types.is_decimal128(column.type):
        column = column.cast(pa.decimal128(column.type.precision, column.type.scale))
    data = np.frombuffer(column.buffers()[1], dtype=np.int64)
    lows = data[2 * column.offset : 2 * (column.offset + len(column)) : 2]
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return pa.array(lows, pa.int64(), mask=~valid)


_HEX = np.array([ord(c) for c in "0123456789abcdef"], dtype=np.uint8)
# where each of the 32 hex digits goes in DuckDB's 36-character text of a UUID
_DIGIT_AT = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuid_text(column: pa.Array) -> pa.Array:
    """16-byte UUIDs as DuckDB's text (``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``)."""
    storage = column.storage if isinstance(column.type, pa.ExtensionType) else column
    raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8)
    raw = raw[16 * storage.offset : 16 * (storage.offset + len(storage))].reshape(-1, 16)
    text = np.full((len(storage), 36), ord("-"), dtype=np.uint8)
    digits = np.empty((len(storage), 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 0x0F]
    text[:, _DIGIT_AT] = digits
    texts = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(36), len(storage), [None, pa.py_buffer(text.tobytes())]
    )
    texts = pc.if_else(storage.is_valid(), texts, pa.scalar(None, pa.binary(36)))
    return texts.cast(pa.binary()).cast(pa.string())
