"""Which tables and files the native scan (``_rust``) reads exactly, each file checked.

A column is read natively when DataFusion decodes its Parquet form (as DuckDB writes it)
to exactly the Arrow type this reader declares (:func:`native_type`); a file, when its
path is spelled by object-store paths as it is (:data:`SAFE_PATH`) and its columns map
onto the table's exactly by field id (``read/_layouts``). Every file is checked against
the catalog from its footer first (row count, field ids: ``read.checked_file``, shared
with Spark's native scan), so a damaged or missing file raises our typed error before
DataFusion sees the table.
"""

from __future__ import annotations

import re

from ..pathres import PLAIN_PATH
from ..read import FileLayout, checked_file

__all__ = ["NATIVE_TYPES", "SAFE_PATH", "checked_layout", "native_type", "table_signature"]

# DuckLake types whose Parquet form (as DuckDB writes it) DataFusion decodes to exactly the
# Arrow type this reader declares. Time, nanosecond and second/millisecond timestamps,
# intervals, UUIDs, huge integers, JSON, variants, geometry and nested types take the
# exact reader, which converts them.
NATIVE_TYPES = frozenset(
    [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float32", "float64", "varchar", "blob", "date", "timestamp",
        "timestamp_us", "timestamptz",
    ]
)  # fmt: skip
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")
# Paths object-store paths spell as they are: no percent-encoding, spaces or globs.
SAFE_PATH = PLAIN_PATH


def native_type(type_name: str) -> bool:
    """Whether DataFusion decodes a column of this DuckLake type exactly."""
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def table_signature(table) -> tuple:
    """The table's columns as a layout-cache key: field id, name and Arrow type."""
    return tuple((c.column_id, c.name, str(c.arrow_type)) for c in table.columns)


def checked_layout(
    task, plan, columns, signature, what: str, *, locating: bool = False
) -> FileLayout | None:
    """Check the file against the catalog (raises if damaged); its layout if the native
    scan maps it exactly, else ``None``. ``locating``: the scan gives each row's location
    too (``rust/src/locations.rs``), which it computes only for files whose row ids are
    ``row_id_start`` plus the position, without per-row snapshots (else ``None``).

    The check and the layout are ``read.checked_file``'s, kept per (file, size, rows,
    columns): a local file is stat-ed on every call, a known layout needs no footer, so a
    new lake version of a table of 100,000 files costs 100,000 ``stat`` calls, not
    100,000 footer reads. (A remote file's footer is fetched once per process; the Rust
    scan checks every file it opens against the catalog's size and record count again.)
    The Rust scan maps any exact layout by field id itself (``rust/src/layouts.rs``).
    """
    checked = checked_file(task, plan.storage, columns, what, signature=signature)
    if checked is None or checked.layout is None:
        return None
    if locating and (
        checked.row_ids or task.row_id_start is None or checked.layout.snapshot_column
    ):
        return None
    return checked.layout
