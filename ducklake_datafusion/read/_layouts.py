"""How one data file's columns become the table's on an engine's by-name Parquet reader.

A file written before a column was renamed, added, dropped or widened still holds each
of its columns under the field id DuckDB gave it, so the exact reader maps columns by id,
batch by batch (``read/_file_columns``). Spark's Parquet reader matches by name, but the
mapping is the same for every file written at the same columns, so a native scan
resolves it once per file *layout*: a by-name scan schema of the physical fields the
table needs, and per table column the physical column under the table's name, its
widening cast, or the column's initial default as a literal. Merged and flushed files
hold per-row snapshot ids; their layout also drops the rows of later snapshots, as the
exact reader does. Spark builds the projections (``spark/_native``); the Rust scan maps
by field id itself (``rust/src/layouts.rs``) and takes from a layout only whether the
file is mapped exactly, is of the current layout and holds per-row snapshot ids.

Only conversions exact for every value are taken: the same type (string and binary
encodings aside), an integer widened to an integer type that holds all its values, float
or an integer of up to 32 bits to double, a decimal to one with at least as many digits
on each side of the point. For anything else :func:`file_layout` returns ``None`` and the
file stays on the exact path, which converts as DuckDB does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..catalog import ColumnSpec
from ..scan import field_id
from ._file_columns import SNAPSHOT_FIELD_ID

__all__ = ["ColumnSource", "FileLayout", "file_layout", "same_kind"]


@dataclass(frozen=True)
class ColumnSource:
    """Where one table column comes from in the files of a layout.

    Attributes:
        column: the table column's name.
        physical: the file's column holding it (``None``: the column's initial default).
        cast: the file's type is narrower and is widened (exactly) to the table's.
    """

    column: str
    physical: str | None
    cast: bool = False


@dataclass(frozen=True)
class FileLayout:
    """The by-name scan of one group of files and how it becomes the table's columns.

    Attributes:
        read: the listing schema, ``(physical name, Arrow type)`` per field read.
        sources: one per table column, in the table's order.
        snapshot_column: per-row snapshot ids; rows of later snapshots are dropped.
    """

    read: tuple[tuple[str, pa.DataType], ...]
    sources: tuple[ColumnSource, ...]
    snapshot_column: str | None = None

    @property
    def current(self) -> bool:
        """Every column is read under its own name and type: a plain by-name scan."""
        return self.snapshot_column is None and all(
            s.physical == s.column and not s.cast for s in self.sources
        )

    @property
    def read_schema(self) -> pa.Schema:
        return pa.schema([pa.field(name, type_) for name, type_ in self.read])


def file_layout(physical: pa.Schema, columns: Sequence[ColumnSpec]) -> FileLayout | None:
    """The layout reading ``columns`` from a file of ``physical`` schema (with field ids),
    or ``None`` if a column would need a conversion this module does not do exactly.

    A file with a top-level field lacking a field id is left to the exact path: DuckDB
    maps such a file by position (``_file_checks.legacy_positional``) or refuses it.
    """
    by_id: dict[int, pa.Field] = {}
    for field in physical:
        number = field_id(field)
        if number is None:
            return None
        if number in by_id:
            return None  # two fields claim one id: leave the verdict to the exact path
        by_id[number] = field
    names = [f.name for f in physical]
    if len(set(names)) != len(names):
        return None  # a by-name scan could not tell the fields apart
    read: list[tuple[str, pa.DataType]] = []
    sources: list[ColumnSource] = []
    for column in columns:
        found = by_id.get(column.column_id)
        if found is None:
            sources.append(ColumnSource(column.name, None))
            continue
        if same_kind(found.type, column.arrow_type):
            read.append((found.name, column.arrow_type))
            sources.append(ColumnSource(column.name, found.name))
        elif _widens_exactly(found.type, column.arrow_type):
            read.append((found.name, found.type))
            sources.append(ColumnSource(column.name, found.name, cast=True))
        else:
            return None
    if not read:
        return None  # a scan of no column: leave such files to the exact path
    snapshot = by_id.get(SNAPSHOT_FIELD_ID)
    if snapshot is not None:
        if not pa.types.is_integer(snapshot.type):
            return None
        read.append((snapshot.name, snapshot.type))
    return FileLayout(tuple(read), tuple(sources), snapshot.name if snapshot else None)


def same_kind(found: pa.DataType, wanted: pa.DataType) -> bool:
    """The same type, up to the string and binary encodings Arrow readers choose."""
    return _kind(found) == _kind(wanted)


def _kind(type_: pa.DataType) -> pa.DataType:
    if (
        pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_string_view(type_)
    ):
        return pa.string()
    if (
        pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
        or pa.types.is_binary_view(type_)
    ):
        return pa.binary()
    return type_


def _widens_exactly(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Every value of ``found`` converts to ``wanted`` unchanged (DuckLake's widenings
    that lose nothing; a 64-bit integer in a double may round, so it takes the exact
    path, which refuses to round)."""
    if pa.types.is_floating(wanted):
        if pa.types.is_float32(found):
            return pa.types.is_float64(wanted)
        return pa.types.is_float64(wanted) and pa.types.is_integer(found) and found.bit_width <= 32
    if pa.types.is_decimal(found) and pa.types.is_decimal(wanted):
        return (
            wanted.scale >= found.scale
            and wanted.precision - wanted.scale >= found.precision - found.scale
        )
    if not (pa.types.is_integer(found) and pa.types.is_integer(wanted)):
        return False
    found_signed = pa.types.is_signed_integer(found)
    wanted_signed = pa.types.is_signed_integer(wanted)
    if found_signed and not wanted_signed:
        return False
    if found_signed == wanted_signed:
        return wanted.bit_width >= found.bit_width
    return wanted.bit_width > found.bit_width  # unsigned into a wider signed type
