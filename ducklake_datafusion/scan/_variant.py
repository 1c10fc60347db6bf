"""VARIANT columns -> JSON text, the text DuckDB gives for ``CAST(v AS JSON)``.

DuckDB writes a VARIANT column to Parquet as the Parquet Variant logical type: a group of
``metadata`` (the dictionary of object keys) and ``value`` (the Variant binary encoding),
optionally *shredded*: a ``typed_value`` column holding the value (or, for objects and
arrays, its fields and elements, each again a ``value``/``typed_value`` pair) as plain
Parquet columns. Neither DataFusion nor Spark has a variant type, so a VARIANT column is
exposed as JSON text, decoded here from both forms (Parquet Variant specification,
``VariantEncoding.md`` and ``VariantShredding.md``).

Rendering follows DuckDB: objects and arrays compact (``{"a":1,"b":[1,2]}``), object keys
sorted by name (as DuckDB shows objects read back from Parquet), decimals with their scale,
dates/times/timestamps as DuckDB prints them (``"2024-01-02 03:04:05.5+00"``), binary as
DuckDB's blob text, doubles as their shortest round-trip text. A SQL NULL (the whole group
NULL) stays NULL; a variant null is the JSON ``null``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import struct
import uuid
from decimal import Decimal

import numpy as np
import pyarrow as pa

from ..errors import DataFileCorruptError, UnsupportedTypeError

__all__ = ["variant_to_json"]

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_I32 = np.iinfo(np.int32)
_I64 = np.iinfo(np.int64)
_MISSING = object()  # an object field that is not there (both value and typed_value NULL)


def variant_to_json(array: pa.Array, what: str) -> pa.Array:
    """A Parquet Variant struct array (maybe shredded) -> JSON text per row.

    Args:
        array: ``struct<metadata, value[, typed_value]>`` as pyarrow reads it.
        what: names the column and file for error messages.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pa.types.is_struct(array.type) or array.type.get_field_index("metadata") < 0:
        raise UnsupportedTypeError(
            f"{what}: a VARIANT column must be a Parquet Variant group (metadata, value), "
            f"found {array.type}"
        )
    typed_index = array.type.get_field_index("typed_value")
    typed_type = array.type.field(typed_index).type if typed_index >= 0 else None
    value_index = array.type.get_field_index("value")
    out: list[str | None] = []
    for row in array.to_pylist():
        if row is None:
            out.append(None)
            continue
        try:
            keys = _dictionary(row["metadata"])
            value = row["value"] if value_index >= 0 else None
            typed = row["typed_value"] if typed_index >= 0 else None
            text = _shredded(value, typed, typed_type, keys)
        except (IndexError, KeyError, struct.error, ValueError) as exc:
            raise DataFileCorruptError(
                f"{what} holds a VARIANT value that is not valid Parquet Variant encoding "
                f"({exc}); the file is damaged. Restore it from a backup"
            ) from exc
        out.append("null" if text is _MISSING else text)
    return pa.array(out, pa.string())


def _dictionary(metadata: bytes) -> list[str]:
    header = metadata[0]
    if header & 0x0F != 1:
        raise ValueError(f"unknown variant metadata version {header & 0x0F}")
    width = ((header >> 6) & 0x03) + 1
    size = _uint(metadata, 1, width)
    offsets = [_uint(metadata, 1 + width * (i + 1), width) for i in range(size + 1)]
    start = 1 + width * (size + 2)
    return [metadata[start + offsets[i] : start + offsets[i + 1]].decode() for i in range(size)]


def _uint(data: bytes, offset: int, width: int) -> int:
    return int.from_bytes(data[offset : offset + width], "little")


# -- the Variant binary encoding ----------------------------------------------------------


def _decode(data: bytes, offset: int, keys: list[str]) -> str:
    header = data[offset]
    basic, head = header & 0x03, header >> 2
    if basic == 0:
        return _primitive(data, offset + 1, head)
    if basic == 1:
        return _string(data[offset + 1 : offset + 1 + head].decode())
    if basic == 2:
        return _object(data, offset, head, keys)
    return _array(data, offset, head, keys)


def _object(data: bytes, offset: int, head: int, keys: list[str]) -> str:
    return _render_object(_object_fields(data, offset, keys))


def _by_key(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Fields in the order DuckDB shows objects read from Parquet: by key, bytewise."""
    return sorted(fields, key=lambda kv: kv[0].encode())


def _object_fields(data: bytes, offset: int, keys: list[str]) -> list[tuple[str, str]]:
    """``(key, JSON text)`` of each field of the object encoded at ``offset``."""
    head = data[offset] >> 2
    offset_width = (head & 0x03) + 1
    id_width = ((head >> 2) & 0x03) + 1
    large = (head >> 4) & 0x01
    count_width = 4 if large else 1
    count = _uint(data, offset + 1, count_width)
    ids_at = offset + 1 + count_width
    offsets_at = ids_at + count * id_width
    values_at = offsets_at + (count + 1) * offset_width
    fields = []
    for i in range(count):
        key = keys[_uint(data, ids_at + i * id_width, id_width)]
        start = _uint(data, offsets_at + i * offset_width, offset_width)
        fields.append((key, _decode(data, values_at + start, keys)))
    return _by_key(fields)


def _array(data: bytes, offset: int, head: int, keys: list[str]) -> str:
    offset_width = (head & 0x03) + 1
    large = (head >> 2) & 0x01
    count_width = 4 if large else 1
    count = _uint(data, offset + 1, count_width)
    offsets_at = offset + 1 + count_width
    values_at = offsets_at + (count + 1) * offset_width
    items = [
        _decode(data, values_at + _uint(data, offsets_at + i * offset_width, offset_width), keys)
        for i in range(count)
    ]
    return "[" + ",".join(items) + "]"


def _primitive(data: bytes, at: int, type_id: int) -> str:
    if type_id == 0:
        return "null"
    if type_id in (1, 2):
        return "true" if type_id == 1 else "false"
    if type_id in (3, 4, 5, 6):
        width = {3: 1, 4: 2, 5: 4, 6: 8}[type_id]
        return str(int.from_bytes(data[at : at + width], "little", signed=True))
    if type_id == 7:
        return _double(struct.unpack_from("<d", data, at)[0])
    if type_id == 14:
        return _double(float(np.float32(struct.unpack_from("<f", data, at)[0])))
    if type_id in (8, 9, 10):
        width = {8: 4, 9: 8, 10: 16}[type_id]
        unscaled = int.from_bytes(data[at + 1 : at + 1 + width], "little", signed=True)
        return _decimal(unscaled, data[at])
    if type_id == 11:
        return _string(_date(struct.unpack_from("<i", data, at)[0]))
    if type_id in (12, 13, 18, 19):
        raw = struct.unpack_from("<q", data, at)[0]
        nanos = type_id in (18, 19)
        return _string(_timestamp(raw, nanos=nanos, utc=type_id in (12, 18)))
    if type_id == 15:
        (length,) = struct.unpack_from("<I", data, at)
        return _string(_blob(data[at + 4 : at + 4 + length]))
    if type_id == 16:
        (length,) = struct.unpack_from("<I", data, at)
        return _string(data[at + 4 : at + 4 + length].decode())
    if type_id == 17:
        return _string(_time(struct.unpack_from("<q", data, at)[0]))
    if type_id == 20:
        return _string(str(uuid.UUID(bytes=bytes(data[at : at + 16]))))
    raise ValueError(f"unknown variant primitive type {type_id}")


# -- shredded values (typed_value columns) --------------------------------------------------


def _shredded(value: bytes | None, typed, typed_type: pa.DataType | None, keys: list[str]):
    """The JSON text of one shredded value, or ``_MISSING`` when neither part is set."""
    if typed is None:
        return _MISSING if value is None else _decode(value, 0, keys)
    if pa.types.is_struct(typed_type):  # a shredded object, maybe with residual fields
        fields = []
        for i in range(typed_type.num_fields):
            field = typed_type.field(i)
            part = typed.get(field.name)
            if part is None:
                continue
            sub_type = field.type
            text = _shredded(
                part.get("value"),
                part.get("typed_value"),
                _child_type(sub_type, "typed_value"),
                keys,
            )
            if text is not _MISSING:
                fields.append((field.name, text))
        if value is not None:  # fields that were not shredded: a variant object
            if value[0] & 0x03 != 2:
                raise ValueError("a shredded object's residual value is not an object")
            fields.extend(_object_fields(value, 0, keys))
        return _render_object(_by_key(fields))
    if pa.types.is_list(typed_type) or pa.types.is_large_list(typed_type):
        element_type = typed_type.value_type
        inner = _child_type(element_type, "typed_value")
        items = []
        for element in typed:
            text = _shredded(element.get("value"), element.get("typed_value"), inner, keys)
            items.append("null" if text is _MISSING else text)
        return "[" + ",".join(items) + "]"
    return _typed_primitive(typed, typed_type)


def _child_type(struct_type: pa.DataType, name: str) -> pa.DataType | None:
    index = struct_type.get_field_index(name)
    return struct_type.field(index).type if index >= 0 else None


def _typed_primitive(value, t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_integer(t):
        return str(int(value))
    if pa.types.is_floating(t):
        return _double(float(np.float32(value)) if pa.types.is_float32(t) else float(value))
    if pa.types.is_decimal(t):
        return _decimal(int(Decimal(value).scaleb(t.scale)), t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _string(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _string(_blob(value))
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 16:
        return _string(str(uuid.UUID(bytes=bytes(value))))
    if pa.types.is_date(t):
        days = (value - _EPOCH_DATE).days if isinstance(value, _dt.date) else int(value)
        return _string(_date(days))
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        raw = pa.scalar(value, t).cast(pa.int64()).as_py()
        if pa.types.is_time(t):
            return _string(_time(raw // 1000 if t.unit == "ns" else raw))
        return _string(_timestamp(raw, nanos=t.unit == "ns", utc=t.tz is not None))
    raise ValueError(f"unsupported shredded variant type {t}")


# -- rendering as DuckDB does -----------------------------------------------------------------


def _render_object(fields: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{_string(k)}:{v}" for k, v in fields) + "}"


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _double(value: float) -> str:
    """Shortest round-trip text, positional between 1e-7 and 1e21 (DuckDB's JSON style)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        power = int(exponent)
        if -7 < power < 21:
            text = np.format_float_positional(value, unique=True, trim="-")
            return text if "." in text else text + ".0"
        return f"{mantissa}e{power}"
    return text


def _decimal(unscaled: int, scale: int) -> str:
    if scale == 0:
        return str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    sign = "-" if unscaled < 0 else ""
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _date(days: int) -> str:
    if days in (_I32.max, _I32.min + 1, _I32.min):
        return "infinity" if days > 0 else "-infinity"
    return (_EPOCH_DATE + _dt.timedelta(days=days)).isoformat()


def _fraction(digits: int, width: int) -> str:
    text = str(digits).rjust(width, "0").rstrip("0")
    return "." + text if text else ""


def _timestamp(raw: int, *, nanos: bool, utc: bool) -> str:
    if raw in (_I64.max, _I64.min, _I64.min + 1):
        return "infinity" if raw > 0 else "-infinity"
    per_second = 1_000_000_000 if nanos else 1_000_000
    seconds, sub = divmod(raw, per_second)
    moment = _EPOCH + _dt.timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%d %H:%M:%S") + _fraction(sub, 9 if nanos else 6)
    return text + "+00" if utc else text


def _time(micros: int) -> str:
    seconds, sub = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}" + _fraction(sub, 6)


def _blob(data: bytes) -> str:
    """DuckDB's text of a BLOB: printable ASCII as is, everything else as ``\\xHH``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else f"\\x{b:02X}" for b in bytes(data))
