"""Per-column statistics of a data file, in the catalog's text encoding, as DuckDB writes them.

Readers (DuckDB's, ours, anyone's) skip a file when a query's bounds miss its
``ducklake_file_column_stats``, so a bound that is too narrow is a wrong answer for every
user of the lake. The bounds here are therefore computed from the very values written,
batch by batch (the minimum and maximum of each batch kept, the file's taken over those),
never read back from the file, and encoded exactly as DuckDB's writer encodes them:

* integers and decimals as their digits (decimals at the column's scale), booleans ``0`` /
  ``1``, floats in their shortest form with NaN left out of the bounds and reported in
  ``contains_nan``;
* text as itself, but a bound longer than 256 bytes cut as DuckDB's Parquet writer cuts
  it: the minimum to a prefix, the maximum to a prefix whose last ASCII byte is raised by
  one (and no bounds at all when no byte can be raised); blobs the same in upper-case hex;
* dates, times and timestamps as DuckDB spells them (``infinity``, fractions trimmed,
  ``+00`` for UTC), by DuckDB's own cast to text; UUIDs in canonical lower case.

Value and null counts are the Parquet column chunks' own, which count as DuckDB does for
nested columns (a NULL or empty list is a null of its element column).
"""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec

__all__ = ["ColumnBounds", "cast_to_text", "encode_bound", "measure"]

MAX_TEXT_BOUND = 256
_TEMPORAL_PREFIXES = ("date", "time", "timestamp")


class ColumnBounds:
    """The running minimum and maximum (and NaN flag) of one leaf column of one file.

    ``add`` takes each batch's values of the leaf (nested values already flattened);
    ``encoded`` gives the catalog's text for the file's bounds.
    """

    __slots__ = ("_candidates", "_has_nan", "spec")

    def __init__(self, spec: ColumnSpec) -> None:
        self.spec = spec
        self._candidates: list[pa.Array] = []
        self._has_nan = False

    @property
    def is_float(self) -> bool:
        return self.spec.type_name in ("float32", "float64")

    def add(self, measured: tuple[pa.Array | None, bool]) -> None:
        """Take in one row group's :func:`measure` of this column."""
        candidates, has_nan = measured
        self._has_nan = self._has_nan or has_nan
        if candidates is not None:
            self._candidates.append(candidates)

    def contains_nan(self) -> bool | None:
        return self._has_nan if self.is_float else None

    def encoded(self) -> tuple[str | None, str | None, bool, bool]:
        """``(min, max, min is a value, max is a value)``: a bound cut to size is still a
        bound, but no longer a value of the file."""
        if not self._candidates:
            return None, None, True, True
        both = pc.min_max(pa.concat_arrays(self._candidates))
        low, high = both["min"], both["max"]
        upper = encode_bound(self.spec, high, upper=True)
        if upper is None:
            # no maximum could be cut to size: DuckDB then keeps no bounds at all
            return None, None, True, True
        return (
            encode_bound(self.spec, low, upper=False),
            upper,
            not _is_cut(low),
            not _is_cut(high),
        )


def measure(values: pa.Array, is_float: bool) -> tuple[pa.Array | None, bool]:
    """One row group's values of a leaf column: ``([min, max] or None, has NaN)``, NaN
    left out of the bounds. Taken on the thread that reads the rows, while the encoding
    thread writes the row group before."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.ExtensionArray):
        values = values.storage
    if pa.types.is_fixed_size_binary(values.type):
        values = values.cast(pa.binary())  # bytewise order, which is UUID order too
    has_nan = False
    if is_float:
        nan = pc.is_nan(values)
        if pc.any(nan).as_py():
            has_nan = True
            values = pc.filter(values, pc.invert(nan))
    if len(values) == values.null_count:
        return None, has_nan
    bounds = pc.min_max(values)
    return pa.array([bounds["min"], bounds["max"]], values.type), has_nan


def encode_bound(spec: ColumnSpec, value: pa.Scalar, *, upper: bool) -> str | None:
    """The catalog text of one bound; ``None`` when DuckDB would store none."""
    kind = spec.type_name.lower()
    if not value.is_valid:
        return None
    if kind == "boolean":
        return "1" if value.as_py() else "0"
    if kind.startswith(("int", "uint")):
        return str(value.as_py())
    if kind == "float32":
        return _float_text(float(value.as_py()), np.float32)
    if kind == "float64":
        return _float_text(float(value.as_py()), np.float64)
    if kind.startswith("decimal"):
        return format(value.as_py(), "f")
    if kind in ("varchar", "json"):
        return _cut_text(value.as_py().encode(), upper=upper, ceiling=0x7F, text=True)
    if kind == "blob":
        cut = _cut_bytes(value.as_py(), upper=upper, ceiling=0xFF)
        return None if cut is None else cut.hex().upper()
    if kind == "uuid":
        return str(uuid.UUID(bytes=value.as_py()))
    if kind.startswith(_TEMPORAL_PREFIXES):
        return cast_to_text(value)
    return None


def _is_cut(value: pa.Scalar) -> bool:
    """Whether the bound's text is cut (a string or blob longer than ``MAX_TEXT_BOUND``)."""
    if pa.types.is_string(value.type) or pa.types.is_large_string(value.type):
        return len(value.as_py().encode()) > MAX_TEXT_BOUND
    if pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type):
        return len(value.as_py()) > MAX_TEXT_BOUND
    return False


def _float_text(value: float, width) -> str:
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    # the shortest text that reads back as the same value (numpy's for float32)
    return repr(value) if width is np.float64 else str(width(value))


def _cut_text(data: bytes, *, upper: bool, ceiling: int, text: bool) -> str | None:
    cut = _cut_bytes(data, upper=upper, ceiling=ceiling, text=text)
    return None if cut is None else cut.decode("utf-8", errors="strict")


def _cut_bytes(data: bytes, *, upper: bool, ceiling: int, text: bool = False) -> bytes | None:
    """A bound of at most ``MAX_TEXT_BOUND`` bytes, still a bound (DuckDB's rule)."""
    if len(data) <= MAX_TEXT_BOUND:
        return data
    if not upper:
        size = MAX_TEXT_BOUND
        if text:  # a whole UTF-8 character: back up to the start of the one cut
            while size > 0 and (data[size] & 0xC0) == 0x80:
                size -= 1
        return data[:size]
    for position in range(MAX_TEXT_BOUND, 0, -1):
        if data[position - 1] < ceiling:
            return data[: position - 1] + bytes([data[position - 1] + 1])
    return None


_FORMAT_LOCK = threading.Lock()
_FORMATTER = None


def cast_to_text(value: pa.Scalar) -> str:
    """DuckDB's own text for a value (dates, times and timestamps in UTC, ``infinity``,
    trimmed fractions), by DuckDB's cast of it to VARCHAR."""
    global _FORMATTER
    import duckdb

    with _FORMAT_LOCK:
        if _FORMATTER is None:
            _FORMATTER = duckdb.connect(":memory:", config={"threads": 1})
        bound = pa.table({"v": pa.array([value], value.type)})  # noqa: F841 - read by name
        return _FORMATTER.execute("SELECT CAST(v AS VARCHAR) FROM bound").fetchone()[0]
