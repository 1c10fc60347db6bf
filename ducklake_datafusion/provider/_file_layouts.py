"""Which tables and files the native scan (``_rust``) reads exactly, each file checked.

A column is read natively when DataFusion decodes its Parquet form (as DuckDB writes it)
to exactly the Arrow type this reader declares (:func:`native_type`); a file, when its
path is spelled by object-store paths as it is (:data:`SAFE_PATH`) and its columns map
onto the table's exactly by field id (``read/_layouts``). Every file is checked against
the catalog from its footer first (row count, field ids: ``read/_file_checks``), so a
damaged or missing file raises our typed error before DataFusion sees the table.
"""

from __future__ import annotations

import os
import re
import stat

from ..pathres import parse_location
from ..read import (
    PARQUET_FORMAT,
    FileLayout,
    check_data_file,
    file_layout,
    parsed_fragment,
    read_error,
    require_regular_file,
)

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
SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/=+@,-]+$")


def native_type(type_name: str) -> bool:
    """Whether DataFusion decodes a column of this DuckLake type exactly."""
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def table_signature(table) -> tuple:
    """The table's columns as a layout-cache key: field id, name and Arrow type."""
    return tuple((c.column_id, c.name, str(c.arrow_type)) for c in table.columns)


# Layouts per (file, size, rows, columns), None for files the native scan cannot map:
# the footer is cached too, but resolving it against the columns on every query cost
# ~1 ms for 40 files. Oldest first out: a table of more files than this re-reads the
# footers of the rest on every new lake version. Equal layouts are one shared object
# (_SHARED), so an entry costs ~0.35 KB (measured: 1.2 KB with a layout object each).
_LAYOUTS: dict[tuple, FileLayout | None] = {}
_LAYOUTS_MAX = 1 << 18
_SHARED: dict[FileLayout, FileLayout] = {}
_MISSING = object()


def checked_layout(task, plan, columns, signature, what: str) -> FileLayout | None:
    """Check the file against the catalog (raises if damaged); its layout if the native
    scan maps it exactly, else ``None``.

    A local file is stat-ed on every call, so a file removed or replaced by a FIFO since
    it was checked raises the typed error here, not inside DataFusion. Its footer is read
    and checked once per (file, size, rows, columns): a known layout needs no footer, so
    a new lake version of a table of 100,000 files costs 100,000 ``stat`` calls, not
    100,000 footer reads. (A remote file's footer is fetched once per process; the Rust
    scan checks every file it opens against the catalog's size and record count again.)
    """
    location = parse_location(task.file.url)
    key = (task.file.url, task.file.size, task.record_count, task.layout_current, signature)
    try:
        found = os.stat(location.path) if location.scheme == "file" else None
        if found is not None and not stat.S_ISREG(found.st_mode):
            require_regular_file(location.path, task.file.url)  # raises, naming the kind
        layout = _LAYOUTS.get(key, _MISSING)
        if layout is _MISSING:
            fragment = parsed_fragment(task.file, plan.storage, PARQUET_FORMAT)
    except Exception as exc:  # translated as the exact reader does
        raise read_error(exc, what) from exc
    if found is not None and task.file.size is not None and found.st_size != task.file.size:
        return None  # not the file the catalog lists: the exact path's checks decide
    if layout is not _MISSING:
        return layout
    physical = fragment.physical_schema
    check_data_file(task, fragment.metadata, physical, columns, what)
    while len(_LAYOUTS) >= _LAYOUTS_MAX:
        _LAYOUTS.pop(next(iter(_LAYOUTS)), None)
    layout = file_layout(physical, columns)
    if layout is not None:
        if len(_SHARED) >= 4096:
            _SHARED.clear()
        layout = _SHARED.setdefault(layout, layout)
    _LAYOUTS[key] = layout
    return layout
