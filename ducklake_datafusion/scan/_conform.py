"""Bring a column as stored (Parquet field, inlined value) to the table's current type.

Columns are matched by DuckLake column id, which the writer stores as the Parquet field
id of every field at every nesting level. A source field therefore carries
``PARQUET:field_id`` metadata (files written by DuckLake have it; name-mapped files and
inlined rows get it from :func:`annotate_by_names`). Matching by id is what makes renames,
drops, re-added names and struct-field evolution read correctly.
"""

from __future__ import annotations

import functools
import threading

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec, duckdb_type_for
from ..errors import UnsupportedTypeError
from ._hugeint import exact_wide_integers
from ._variant import variant_to_json

__all__ = [
    "FIELD_ID",
    "annotate_by_names",
    "conform",
    "default_array",
    "field_id",
    "with_field_id",
]

FIELD_ID = b"PARQUET:field_id"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_LAYOUT = (4, 2, 2, 2, 6)


def field_id(field: pa.Field) -> int | None:
    """The Parquet field id of a field, if it has one."""
    if field.metadata and FIELD_ID in field.metadata:
        return int(field.metadata[FIELD_ID])
    return None


def with_field_id(field: pa.Field, column_id: int, type_: pa.DataType | None = None) -> pa.Field:
    metadata = dict(field.metadata or {})
    metadata[FIELD_ID] = str(column_id).encode()
    return field.with_type(type_ or field.type).with_metadata(metadata)


def _children(field: pa.Field) -> list[pa.Field]:
    t = field.type
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    return []


def _find_child(field: pa.Field, column_id: int) -> tuple[int, pa.Field] | None:
    for index, child in enumerate(_children(field)):
        if field_id(child) == column_id:
            return index, child
    return None


def conform(array: pa.Array, source: pa.Field, target: ColumnSpec) -> pa.Array:
    """Convert ``array`` (described by ``source``) into ``target.arrow_type``."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = target.type_name.lower()
    if kind == "struct":
        return _conform_struct(array, source, target)
    if kind == "list":
        return _conform_list(array, source, target)
    if kind == "map":
        return _conform_map(array, source, target)
    if kind == "variant" and pa.types.is_struct(array.type):
        return variant_to_json(array, f"column {target.name!r}")
    return _conform_primitive(array, target)


def _valid_mask(array: pa.Array) -> pa.Array | None:
    return pc.is_null(array) if array.null_count else None


def _conform_struct(array: pa.Array, source: pa.Field, target: ColumnSpec) -> pa.Array:
    if not pa.types.is_struct(array.type):
        raise UnsupportedTypeError(f"column {target.name!r}: expected a struct, found {array.type}")
    children = []
    for child in target.children:
        found = _find_child(source, child.column_id)
        if found is None:  # a field added later: its initial default (NULL if none)
            default = default_array(child, len(array))
            if array.null_count and default.null_count < len(default):
                # NULL where the struct is NULL, so that reading the field gives NULL
                default = pc.if_else(pc.is_valid(array), default, pa.scalar(None, default.type))
            children.append(default)
        else:
            index, child_field = found
            children.append(conform(array.field(index), child_field, child))
    fields = [c.arrow_field() for c in target.children]
    if not fields:
        return pa.nulls(len(array), target.arrow_type)
    return pa.StructArray.from_arrays(children, fields=fields, mask=_valid_mask(array))


def _conform_list(array: pa.Array, source: pa.Field, target: ColumnSpec) -> pa.Array:
    element = target.children[0]
    source_element = _children(source)[0]
    values = conform(array.values, source_element, element)
    offsets = array.offsets
    if pa.types.is_large_list(array.type):
        offsets = offsets.cast(pa.int32())
    return pa.ListArray.from_arrays(
        offsets, values, type=target.arrow_type, mask=_valid_mask(array)
    )


def _conform_map(array: pa.Array, source: pa.Field, target: ColumnSpec) -> pa.Array:
    key, value = target.children
    source_key, source_value = _children(source)
    keys = conform(array.keys, source_key, key)
    items = conform(array.items, source_value, value)
    return pa.MapArray.from_arrays(
        array.offsets, keys, items, type=target.arrow_type, mask=_valid_mask(array)
    )


def _conform_primitive(array: pa.Array, target: ColumnSpec) -> pa.Array:
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    kind = target.type_name.lower()
    if kind == "uuid" and pa.types.is_fixed_size_binary(array.type):
        return _uuid_text(array)
    if kind == "interval" and pa.types.is_fixed_size_binary(array.type):
        return _parquet_interval(array)
    if array.type == target.arrow_type:
        return array
    if _coarser_timestamp(array.type, target.arrow_type):
        return _narrow_timestamps(array, target.arrow_type)
    return pc.cast(array, target.arrow_type)


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_I64 = np.iinfo(np.int64)


def _coarser_timestamp(source: pa.DataType, target: pa.DataType) -> bool:
    return (
        pa.types.is_timestamp(source)
        and pa.types.is_timestamp(target)
        and _UNIT_NANOS[target.unit] > _UNIT_NANOS[source.unit]
    )


def _narrow_timestamps(array: pa.Array, target: pa.DataType) -> pa.Array:
    """A finer timestamp file column (``ducklake_add_data_files``) in a coarser column.

    As DuckDB reads it: nanoseconds become microseconds by truncation toward zero;
    microseconds (and milliseconds) become a coarser unit rounded half away from zero
    (``'10:00:00.7'`` reads as ``10:00:01`` in a ``timestamp_s`` column). ±infinity (the
    int64 extremes) stays ±infinity.
    """
    values = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    infinite = (values == _I64.max) | (values == _I64.min)
    unit = array.type.unit
    if unit == "ns":
        values = np.sign(values) * (np.abs(values) // 1_000)
        unit = "us"
    factor = _UNIT_NANOS[target.unit] // _UNIT_NANOS[unit]
    if factor > 1:
        values = np.sign(values) * ((np.abs(values) + factor // 2) // factor)
    values = np.where(infinite, np.where(values > 0, _I64.max, _I64.min), values)
    mask = pc.is_null(array).to_numpy(zero_copy_only=False) if array.null_count else None
    return pa.array(values, type=pa.int64(), mask=mask).cast(target)


def _uuid_text(array: pa.Array) -> pa.Array:
    """16-byte UUIDs -> canonical lower-case text, vectorised with numpy."""
    n = len(array)
    raw = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    raw = raw[array.offset * 16 : (array.offset + n) * 16].reshape(n, 16)
    hexed = np.empty((n, 32), dtype=np.uint8)
    hexed[:, 0::2] = _HEX[raw >> 4]
    hexed[:, 1::2] = _HEX[raw & 0x0F]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    src = dst = 0
    for width in _UUID_LAYOUT:
        text[:, dst : dst + 2 * width] = hexed[:, src : src + 2 * width]
        src += 2 * width
        dst += 2 * width + 1
    offsets = pa.py_buffer(np.arange(0, 36 * (n + 1), 36, dtype=np.int32).tobytes())
    validity = array.buffers()[0] if array.null_count else None
    if validity is not None and array.offset:
        validity = pc.is_valid(array).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(), n, [validity, offsets, pa.py_buffer(text.tobytes())], array.null_count
    )


def _parquet_interval(array: pa.Array) -> pa.Array:
    """Parquet INTERVAL (LE uint32 months, days, millis) -> month_day_nano."""
    n = len(array)
    raw = np.frombuffer(array.buffers()[1], dtype="<u4")[array.offset * 3 : (array.offset + n) * 3]
    raw = raw.reshape(n, 3)
    out = np.zeros(n, dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
    out["months"] = raw[:, 0].astype(np.int32)
    out["days"] = raw[:, 1].astype(np.int32)
    out["nanos"] = raw[:, 2].astype(np.int64) * 1_000_000
    validity = pc.is_valid(array).buffers()[1] if array.null_count else None
    return pa.Array.from_buffers(
        pa.month_day_nano_interval(), n, [validity, pa.py_buffer(out.tobytes())], array.null_count
    )


_local = threading.local()


def _duckdb() -> duckdb.DuckDBPyConnection:
    if getattr(_local, "con", None) is None:
        _local.con = duckdb.connect()
    return _local.con


@functools.lru_cache(maxsize=1024)
def _default_value(text: str, target: ColumnSpec) -> pa.Array:
    """Parse a literal with DuckDB's own cast rules, into a one-element array."""
    sql_type = duckdb_type_for(target)
    result = _duckdb().sql(f"SELECT CAST(? AS {sql_type}) AS v", params=[text]).to_arrow_table()
    column = result.column(0).combine_chunks()
    return conform_duckdb_export(column, target)


def conform_duckdb_export(array: pa.Array, target: ColumnSpec) -> pa.Array:
    """Arrays exported by DuckDB (inlined rows, parsed literals) -> the target type,
    HUGEINT/UHUGEINT values made exact first (``_hugeint``)."""
    array = exact_wide_integers(array, target)
    source = pa.field(target.name, array.type)
    return conform(array, annotate_by_names(source, target), target)


def default_array(target: ColumnSpec, length: int) -> pa.Array:
    """The column's ``initial_default`` repeated ``length`` times (NULL if it has none).

    Raises:
        UnsupportedTypeError: the default has no value in the column's type.
    """
    if target.initial_default is None or target.initial_default.upper() == "NULL":
        return pa.nulls(length, target.arrow_type)
    try:
        single = _default_value(target.initial_default, target)
    except UnsupportedTypeError as exc:
        raise UnsupportedTypeError(
            f"the initial default {target.initial_default!r} of {exc}"
        ) from exc
    return single.take(pa.array(np.zeros(length, dtype=np.int32)))


def annotate_by_names(field: pa.Field, spec: ColumnSpec) -> pa.Field:
    """Give ``field`` (and its children, matched by name) the column ids of ``spec``.

    Used for inlined rows (column names of their layout) and DuckDB-exported values.
    """
    t = field.type
    if spec.children and pa.types.is_struct(t):
        by_name = {c.name: c for c in spec.children}
        kids = []
        for i in range(t.num_fields):
            child = t.field(i)
            match = by_name.get(child.name)
            kids.append(annotate_by_names(child, match) if match else child)
        t = pa.struct(kids)
    elif spec.children and pa.types.is_map(t):
        key, value = spec.children
        t = pa.map_(annotate_by_names(t.key_field, key), annotate_by_names(t.item_field, value))
    elif spec.children and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        element = annotate_by_names(t.value_field, spec.children[0])
        t = pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    return with_field_id(field, spec.column_id, t)
