"""Refuse 128-bit integers that DuckDB's Arrow export hands over wrong.

HUGEINT and UHUGEINT are read as ``decimal128(38, 0)``, which holds 38 digits. Values
that DuckDB itself exports (inlined rows, parsed defaults, decrypted files) arrive in that
type unchecked (duckdb 1.5.5): a UHUGEINT of 2**127 or more comes out *negative* (its
bits read as signed), and any value of 39 digits comes out beyond the type's precision.
Both would be returned as a wrong number by every engine, so they are refused here,
naming the column; Parquet files need no check (the writer stores these types as
doubles, whose cast to decimal(38, 0) already fails on overflow).
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTypeError
from ..types import ColumnSpec

__all__ = ["check_hugeint_values"]

_WIDE = ("int128", "uint128")
_NAMES = {"int128": "HUGEINT", "uint128": "UHUGEINT"}


def check_hugeint_values(array: pa.Array | pa.ChunkedArray, column: ColumnSpec) -> None:
    """Raise if ``array`` (already in ``column``'s type) holds a 128-bit value it misreads.

    Raises:
        UnsupportedTypeError: a HUGEINT/UHUGEINT value (at any nesting depth) does not
            fit ``decimal(38, 0)``; the message names the column path.
    """
    if not _has_wide(column):
        return
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        _check(chunk, column, column.name)


def _has_wide(column: ColumnSpec) -> bool:
    return column.type_name in _WIDE or any(_has_wide(c) for c in column.children)


def _check(array: pa.Array, column: ColumnSpec, path: str) -> None:
    if column.type_name in _WIDE:
        if not _fits(array, unsigned=column.type_name == "uint128"):
            raise UnsupportedTypeError(
                f"column {path!r} holds a {_NAMES[column.type_name]} value beyond 38 digits, "
                "which this reader's type (decimal(38, 0)) cannot hold and DuckDB exports "
                "wrongly; cast the column in DuckDB (e.g. to VARCHAR) or select other columns"
            )
        return
    t = array.type
    if pa.types.is_struct(t) and column.children:
        by_name = {c.name: c for c in column.children}
        for index, child in enumerate(array.flatten()):
            spec = by_name.get(t.field(index).name)
            if spec is not None and _has_wide(spec):
                _check(child, spec, f"{path}.{spec.name}")
    elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and column.children:
        _check(array.flatten(), column.children[0], f"{path}.element")
    elif pa.types.is_map(t) and len(column.children) == 2:
        _check(array.keys, column.children[0], f"{path}.key")
        _check(array.items, column.children[1], f"{path}.value")


def _fits(array: pa.Array, *, unsigned: bool) -> bool:
    if not pa.types.is_decimal(array.type) or array.null_count == len(array):
        return True
    try:
        array.validate(full=True)  # checks every value against the precision
    except pa.ArrowInvalid:
        return False
    if unsigned:
        zero = pa.scalar(Decimal(0), type=array.type)
        return not pc.any(pc.less(array, zero)).as_py()
    return True
