"""Arrow types -> DuckLake column types, and the Arrow form in which each is written.

Two directions meet here. ``create_table`` turns a user's Arrow schema into DuckLake
columns (:func:`columns_for_schema`), refusing by name any type DuckDB's writer would not
store the same way. An append turns the table's columns back into the Arrow schema of the
Parquet files (:func:`file_schema`): every field carries ``PARQUET:field_id`` = the column
id, as DuckDB's writer does, and the physical form is DuckDB's (``timestamp_s`` is written
as microseconds, ``timestamptz`` as UTC microseconds, ``uuid`` as a 16-byte UUID).

A user's data is then cast to that schema (:func:`conform`) with Arrow's safe casts, so a
value that would change (an overflow, a truncated timestamp) is an error naming the
column, never a silently different value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec, constant_default
from ..errors import InvalidOptionError, UnsupportedFeatureError, UnsupportedTypeError

__all__ = [
    "NewColumnSpec",
    "columns_for_schema",
    "conform",
    "dictionary_columns",
    "file_schema",
    "leaf_columns",
]

FIELD_ID_KEY = b"PARQUET:field_id"

_SIMPLE: dict[pa.DataType, str] = {
    pa.bool_(): "boolean",
    pa.int8(): "int8",
    pa.int16(): "int16",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.uint8(): "uint8",
    pa.uint16(): "uint16",
    pa.uint32(): "uint32",
    pa.uint64(): "uint64",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.string(): "varchar",
    pa.large_string(): "varchar",
    pa.string_view(): "varchar",
    pa.binary(): "blob",
    pa.large_binary(): "blob",
    pa.binary_view(): "blob",
    pa.date32(): "date",
    pa.date64(): "date",
    pa.time32("s"): "time",
    pa.time32("ms"): "time",
    pa.time64("us"): "time",
}
_TIMESTAMPS = {"s": "timestamp_s", "ms": "timestamp_ms", "us": "timestamp", "ns": "timestamp_ns"}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")

# What each DuckLake type is written as (the nested ones are built from their children).
_WRITTEN: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "varchar": pa.string(),
    "json": pa.json_(pa.string()),
    "uuid": pa.uuid(),
    "blob": pa.binary(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamp_us": pa.timestamp("us"),
    # DuckDB writes TIMESTAMP_S as microseconds (Parquet has no seconds unit)
    "timestamp_s": pa.timestamp("us"),
    "timestamp_ms": pa.timestamp("ms"),
    "timestamp_ns": pa.timestamp("ns"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}


@dataclass(frozen=True, slots=True)
class NewColumnSpec:
    """A column of a table being created: its id, name, DuckLake type and children."""

    column_id: int
    name: str
    type_name: str
    children: tuple[NewColumnSpec, ...] = ()

    def walk(self, parent: int | None = None) -> Iterator[tuple[NewColumnSpec, int | None]]:
        """This column and every nested one, depth first, each with its parent's id."""
        yield self, parent
        for child in self.children:
            yield from child.walk(self.column_id)


def columns_for_schema(schema: pa.Schema, table: str) -> tuple[NewColumnSpec, ...]:
    """DuckLake columns for an Arrow schema, ids assigned depth first from 1 as DuckDB does.

    Raises:
        UnsupportedTypeError: a field whose type DuckLake cannot store as written (named).
        InvalidOptionError: no columns, or two columns of the same name.
    """
    if len(schema) == 0:
        raise InvalidOptionError(f"table {table}: a table needs at least one column")
    seen: set[str] = set()
    for name in schema.names:
        if name.lower() in seen:
            raise InvalidOptionError(
                f"table {table}: column {name!r} appears twice (DuckDB's names are "
                "case-insensitive); rename one"
            )
        seen.add(name.lower())
    next_id = iter(range(1, 1 << 30))

    def build(field: pa.Field, path: str) -> NewColumnSpec:
        column_id = next(next_id)
        kind = _type_name(field.type, table, path)
        children: tuple[NewColumnSpec, ...] = ()
        if kind == "struct":
            if field.type.num_fields == 0:
                raise UnsupportedTypeError(f"table {table}: struct column {path!r} has no fields")
            children = tuple(
                build(field.type.field(i), f"{path}.{field.type.field(i).name}")
                for i in range(field.type.num_fields)
            )
        elif kind == "list":
            children = (_renamed(build(field.type.value_field, f"{path}.element"), "element"),)
        elif kind == "map":
            key = _renamed(build(field.type.key_field, f"{path}.key"), "key")
            children = (key, _renamed(build(field.type.item_field, f"{path}.value"), "value"))
        return NewColumnSpec(column_id, field.name, kind, children)

    return tuple(build(field, field.name) for field in schema)


def _renamed(spec: NewColumnSpec, name: str) -> NewColumnSpec:
    return NewColumnSpec(spec.column_id, name, spec.type_name, spec.children)


def _type_name(arrow: pa.DataType, table: str, column: str) -> str:
    """The DuckLake type of an Arrow type, or a typed refusal naming the column."""
    if pa.types.is_dictionary(arrow):
        return _type_name(arrow.value_type, table, column)
    simple = _SIMPLE.get(arrow)
    if simple is not None:
        return simple
    if isinstance(arrow, pa.UuidType):
        return "uuid"
    if isinstance(arrow, pa.JsonType):
        return "json"
    if pa.types.is_timestamp(arrow):
        return "timestamptz" if arrow.tz is not None else _TIMESTAMPS[arrow.unit]
    if pa.types.is_decimal128(arrow) or (pa.types.is_decimal256(arrow) and arrow.precision <= 38):
        return f"decimal({arrow.precision},{arrow.scale})"
    if pa.types.is_fixed_size_binary(arrow):
        return "blob"
    if (
        pa.types.is_list(arrow)
        or pa.types.is_large_list(arrow)
        or pa.types.is_list_view(arrow)
        or pa.types.is_large_list_view(arrow)
        or pa.types.is_fixed_size_list(arrow)
    ):
        return "list"
    if pa.types.is_struct(arrow):
        return "struct"
    if pa.types.is_map(arrow):
        return "map"
    hint = {
        "time64[ns]": "cast it to time64('us') (DuckDB cannot write TIME_NS to Parquet)",
        "halffloat": "cast it to float32",
        "null": "give the column a type (pa.field(name, type))",
        "month_day_nano_interval": "DuckDB's Parquet intervals keep only milliseconds; "
        "store it as a duration in an integer column",
    }.get(str(arrow), "cast it to a type DuckLake stores (see the documentation's write page)")
    raise UnsupportedTypeError(
        f"table {table}: column {column!r} has Arrow type {arrow}, which DuckLake cannot "
        f"store as given; {hint}"
    )


def file_schema(columns: Sequence[ColumnSpec]) -> pa.Schema:
    """The Arrow schema data files of these columns are written with: DuckDB's physical
    form of every type, ``PARQUET:field_id`` on every field (nested ones too)."""
    return pa.schema([_file_field(c) for c in columns])


def _file_field(spec: ColumnSpec, name: str | None = None, nullable: bool = True) -> pa.Field:
    kind = spec.type_name.lower()
    if kind in _WRITTEN:
        arrow = _WRITTEN[kind]
    elif _DECIMAL.match(kind):
        arrow = spec.arrow_type
    elif kind == "struct":
        arrow = pa.struct([_file_field(c) for c in spec.children])
    elif kind == "list":
        arrow = pa.list_(_file_field(spec.children[0], "element"))
    elif kind == "map":
        key, value = spec.children
        arrow = pa.map_(_file_field(key, "key", nullable=False), _file_field(value, "value"))
    else:
        raise UnsupportedTypeError(
            f"column {spec.name!r} has DuckLake type {spec.type_name!r}, which this package "
            "cannot write yet (DuckDB can: write it with DuckDB)"
        )
    metadata = {FIELD_ID_KEY: str(spec.column_id).encode()}
    return pa.field(name or spec.name, arrow, nullable=nullable, metadata=metadata)


def leaf_columns(columns: Sequence[ColumnSpec]) -> list[tuple[tuple[str, ...], ColumnSpec]]:
    """Every leaf column (no struct/list/map parents), with its path of names in the
    written file's Arrow schema, in the order Parquet lays out column chunks."""
    leaves: list[tuple[tuple[str, ...], ColumnSpec]] = []

    def visit(spec: ColumnSpec, path: tuple[str, ...]) -> None:
        if spec.children:
            for child in spec.children:
                visit(child, (*path, child.name))
        else:
            leaves.append((path, spec))

    for column in columns:
        visit(column, (column.name,))
    return leaves


_DICTIONARY_TYPES = ("varchar", "json", "blob")


def dictionary_columns(columns: Sequence[ColumnSpec]) -> list[str]:
    """The Parquet paths of the text and blob leaves: the columns written with dictionary
    encoding (Parquet falls back to plain pages where a dictionary grows too large).

    Trying a dictionary on every column, pyarrow's default, cost twice the encoding time
    on numbers and dates that are mostly distinct (10M rows: 1.8 s against 0.8 s) and made
    the file larger (138 MB against 92 MB; DuckDB's own: 97 MB).
    """
    paths = []

    def visit(spec: ColumnSpec, path: str) -> None:
        kind = spec.type_name.lower()
        if kind == "struct":
            for child in spec.children:
                visit(child, f"{path}.{child.name}")
        elif kind == "list":
            visit(spec.children[0], f"{path}.list.element")
        elif kind == "map":
            visit(spec.children[0], f"{path}.key_value.key")
            visit(spec.children[1], f"{path}.key_value.value")
        elif kind in _DICTIONARY_TYPES:
            paths.append(path)

    for column in columns:
        visit(column, column.name)
    return paths


def conform(data: pa.Table, schema: pa.Schema, table: str, defaults=None) -> pa.Table:
    """``data`` cast to the file schema, columns matched by name (case-insensitively,
    as DuckDB matches them); missing columns are NULL, or their default (``defaults``:
    ``{name: (ColumnSpec, text, kind)}``, a literal default, as DuckDB's ``INSERT`` fills
    it), extra ones refused by name.

    Raises:
        InvalidOptionError: a column the table does not have, or one given twice.
        UnsupportedTypeError: a value that does not cast exactly to the column's type.
        UnsupportedFeatureError: a missing column whose default is an expression.
    """
    by_name: dict[str, int] = {}
    for index, name in enumerate(data.schema.names):
        key = name.lower()
        if key in by_name:
            raise InvalidOptionError(f"table {table}: the data has column {name!r} twice")
        by_name[key] = index
    wanted = {field.name.lower() for field in schema}
    extra = [name for name in data.schema.names if name.lower() not in wanted]
    if extra:
        raise InvalidOptionError(
            f"table {table} has no column {extra[0]!r} (its columns: "
            f"{', '.join(schema.names)}); rename or drop it before writing"
        )
    arrays = []
    for field in schema:
        index = by_name.get(field.name.lower())
        if index is None:
            default = (defaults or {}).get(field.name)
            if default is None:
                arrays.append(pa.nulls(data.num_rows, field.type))
            else:
                arrays.append(_cast(_default(default, data.num_rows, table), field, table))
            continue
        arrays.append(_cast(data.column(index), field, table))
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast(column: pa.ChunkedArray, field: pa.Field, table: str) -> pa.ChunkedArray:
    source = column.type
    if source == field.type:
        return column
    if pa.types.is_dictionary(source):
        column = column.cast(source.value_type)
        source = column.type
    try:
        if isinstance(field.type, pa.UuidType):
            return _to_uuid(column, field, table)
        if isinstance(field.type, pa.JsonType):
            # (JSON data of this very type returned above) text becomes JSON as it is
            storage = column.cast(pa.string())
            chunks = [pa.ExtensionArray.from_storage(field.type, c) for c in storage.chunks]
            return pa.chunked_array(chunks, type=field.type)
        both_timestamps = pa.types.is_timestamp(field.type) and pa.types.is_timestamp(source)
        if both_timestamps and (source.tz is None) != (field.type.tz is None):
            raise UnsupportedTypeError(
                f"table {table}: column {field.name!r} is "
                f"{'TIMESTAMPTZ' if field.type.tz else 'TIMESTAMP'} but the data is {source}; "
                "give the data a time zone (or drop it) to match"
            )
        return pc.cast(column, field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnsupportedTypeError(
            f"table {table}: column {field.name!r} cannot take the data's {source} values as "
            f"{field.type} exactly ({exc}); cast the data first"
        ) from exc


def _to_uuid(column: pa.ChunkedArray, field: pa.Field, table: str) -> pa.ChunkedArray:
    """UUIDs given as text (DuckDB's and our reader's form) or as 16 bytes."""
    import uuid

    source = column.type
    if isinstance(source, pa.UuidType):
        return column
    if pa.types.is_string(source) or pa.types.is_large_string(source):
        values = [None if v is None else uuid.UUID(v).bytes for v in column.to_pylist()]
        storage = pa.array(values, pa.binary(16))
    elif pa.types.is_fixed_size_binary(source) and source.byte_width == 16:
        storage = column.combine_chunks()
    else:
        raise UnsupportedTypeError(
            f"table {table}: column {field.name!r} is UUID but the data is {source}; give "
            "UUIDs as text or 16 bytes"
        )
    return pa.chunked_array([pa.ExtensionArray.from_storage(field.type, storage)], type=field.type)


def _default(default, length: int, table: str) -> pa.Array:
    """A missing column's default, ``length`` times."""
    from dataclasses import replace

    from ..scan import default_array

    spec, text, kind = default
    if kind != "literal":  # (DuckDB writes some literals as expressions: DEFAULT true)
        constant = constant_default(text)
        if constant is not None:
            text, kind = constant, "literal"
    if kind != "literal":
        raise UnsupportedFeatureError(
            f"table {table}: column {spec.name!r} has the default {text} (an expression), "
            "which this package does not evaluate; give the column's values"
        )
    return default_array(replace(spec, initial_default=text), length)
