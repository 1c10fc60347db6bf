"""DuckLake column types -> Arrow types, and the column tree of a table.

DuckLake stores one ``ducklake_column`` row per column at every nesting level; the type of
a nested column is spelled ``struct``/``list``/``map`` and its shape comes from the child
rows. :class:`ColumnSpec` is that tree, built once per table and snapshot, with the Arrow
type of every node precomputed so executors never parse type strings on the hot path.

Representation choices (kept identical to DuckDB's own Arrow export where that export is
exact, so answers compare equal): ``uuid`` is its canonical lower-case text, ``json`` is a
string, ``variant`` is its JSON text (DuckDB's ``CAST(v AS JSON)``), ``int128`` /
``uint128`` are ``decimal256(39, 0)``, which holds every value of both (DuckDB exports
``decimal128(38, 0)``, one digit short and UHUGEINT wrapped: ``scan/_hugeint``),
``timetz`` is ``time64[us]`` in UTC (the Parquet copy has lost the offset anyway),
``interval`` is ``month_day_nano_interval``, ``geometry`` is WKB bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..errors import UnsupportedTypeError

__all__ = ["ColumnSpec", "arrow_schema", "arrow_type_for", "build_column_tree", "duckdb_type_for"]

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "int128": pa.decimal256(39, 0),
    "uint128": pa.decimal256(39, 0),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "varchar": pa.string(),
    "json": pa.string(),
    "variant": pa.string(),
    "uuid": pa.string(),
    "blob": pa.binary(),
    "geometry": pa.binary(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timetz": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamp_us": pa.timestamp("us"),
    "timestamp_s": pa.timestamp("s"),
    "timestamp_ms": pa.timestamp("ms"),
    "timestamp_ns": pa.timestamp("ns"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "interval": pa.month_day_nano_interval(),
}

_DUCKDB_NAMES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "int128": "HUGEINT",
    "uint128": "UHUGEINT",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "varchar": "VARCHAR",
    "json": "JSON",
    "variant": "VARIANT",
    "uuid": "UUID",
    "blob": "BLOB",
    "geometry": "BLOB",
    "date": "DATE",
    "time": "TIME",
    "timetz": "TIMETZ",
    "timestamp": "TIMESTAMP",
    "timestamp_us": "TIMESTAMP",
    "timestamp_s": "TIMESTAMP_S",
    "timestamp_ms": "TIMESTAMP_MS",
    "timestamp_ns": "TIMESTAMP_NS",
    "timestamptz": "TIMESTAMPTZ",
    "interval": "INTERVAL",
}

_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_NESTED = ("struct", "list", "map")


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A table column (or nested field) at one snapshot.

    Attributes:
        column_id: the DuckLake column id, which is also the Parquet field id.
        name: the column name at this snapshot.
        type_name: the DuckLake type string (``int32``, ``decimal(18,3)``, ``struct`` ...).
        arrow_type: the Arrow type this reader produces for it.
        initial_default: literal text that rows written before the column existed have.
        children: struct fields in order; the single ``element`` of a list; ``key`` and
            ``value`` of a map.
        since: the snapshot since which this column and every nested field have their
            current names and types (the newest ``begin_snapshot`` of their catalog rows).
    """

    column_id: int
    name: str
    type_name: str
    arrow_type: pa.DataType
    initial_default: str | None = None
    children: tuple[ColumnSpec, ...] = ()
    since: int = 0

    def arrow_field(self) -> pa.Field:
        """The Arrow field of this column (always nullable; NOT NULL is not enforced)."""
        return pa.field(self.name, self.arrow_type)

    def child_by_id(self, column_id: int) -> ColumnSpec | None:
        for child in self.children:
            if child.column_id == column_id:
                return child
        return None


def arrow_type_for(
    type_name: str, children: Sequence[ColumnSpec] = (), *, column: str = "?"
) -> pa.DataType:
    """Arrow type of a DuckLake type string whose children are already built."""
    name = type_name.lower()
    if name in _PRIMITIVES:
        return _PRIMITIVES[name]
    match = _DECIMAL.match(name)
    if match:
        precision, scale = int(match.group(1)), int(match.group(2))
        return pa.decimal128(precision, scale)
    if name == "struct":
        return pa.struct([c.arrow_field() for c in children])
    if name == "list":
        if len(children) != 1:
            raise UnsupportedTypeError(f"list column {column!r} has {len(children)} children")
        return pa.list_(children[0].arrow_field())
    if name == "map":
        if len(children) != 2:
            raise UnsupportedTypeError(f"map column {column!r} has {len(children)} children")
        key, value = children
        return pa.map_(key.arrow_field().with_nullable(False), value.arrow_field())
    raise UnsupportedTypeError(
        f"column {column!r} has DuckLake type {type_name!r}, which this reader cannot represent "
        "in Arrow; select the other columns, or cast the column in DuckDB before reading"
    )


def duckdb_type_for(spec: ColumnSpec) -> str:
    """DuckDB SQL type of a column, used to parse literal text (defaults, inlined text)."""
    name = spec.type_name.lower()
    if name in _DUCKDB_NAMES:
        return _DUCKDB_NAMES[name]
    if _DECIMAL.match(name):
        return name.upper()
    if name == "struct":
        fields = ", ".join(f"{_quote(c.name)} {duckdb_type_for(c)}" for c in spec.children)
        return f"STRUCT({fields})"
    if name == "list":
        return f"{duckdb_type_for(spec.children[0])}[]"
    if name == "map":
        key, value = spec.children
        return f"MAP({duckdb_type_for(key)}, {duckdb_type_for(value)})"
    raise UnsupportedTypeError(f"column {spec.name!r} has unsupported type {spec.type_name!r}")


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def build_column_tree(rows: Iterable) -> tuple[ColumnSpec, ...]:
    """Build the column tree from ``ducklake_column`` rows live at one snapshot.

    Args:
        rows: objects with ``column_id``, ``column_name``, ``column_type``,
            ``initial_default``, ``parent_column`` and ``column_order``.

    Returns:
        The top-level columns in ``column_order``, children nested.
    """
    rows = sorted(rows, key=lambda r: (r.column_order, r.column_id))
    by_parent: dict[int | None, list] = {}
    for row in rows:
        by_parent.setdefault(row.parent_column, []).append(row)

    def build(row) -> ColumnSpec:
        children = tuple(build(child) for child in by_parent.get(row.column_id, ()))
        arrow = arrow_type_for(row.column_type, children, column=row.column_name)
        return ColumnSpec(
            column_id=row.column_id,
            name=row.column_name,
            type_name=row.column_type,
            arrow_type=arrow,
            initial_default=row.initial_default,
            children=children,
            since=max([getattr(row, "begin_snapshot", 0), *(c.since for c in children)]),
        )

    return tuple(build(row) for row in by_parent.get(None, ()))


def arrow_schema(columns: Sequence[ColumnSpec]) -> pa.Schema:
    """The Arrow schema of a table: top-level fields without field-id metadata."""
    return pa.schema([pa.field(c.name, c.arrow_type) for c in columns])
