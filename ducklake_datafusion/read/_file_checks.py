"""Check a data file against what the catalog records, before any of its rows is used.

A data file replaced by another valid Parquet file (fewer rows, other columns, no field
ids) would otherwise be read without complaint and give a smaller count, NULL columns, or
columns matched by position. These checks use only the footer, which the reader has
parsed anyway (and caches), so they cost no I/O:

* the row count in the footer equals the catalog's ``record_count``;
* a file without a name mapping carries Parquet field ids, as every file DuckDB writes
  does. The one exception is DuckDB's own: a file registered by an older DuckLake with
  ``ducklake_add_data_files`` has neither, and DuckDB maps its top-level columns onto the
  table's by position (``legacy_positional``); any other such file is not one DuckLake
  wrote, and is refused;
* a file written at the table's current column layout holds every requested column by
  field id.
"""

from __future__ import annotations

import os
import stat

import pyarrow as pa

from ..catalog import ColumnSpec
from ..errors import DataFileCorruptError
from ..pathres import parse_location
from ..scan import DataFileTask, field_id

__all__ = ["check_data_file", "files_unchanged", "legacy_positional", "reads_by_name"]


def check_data_file(
    task: DataFileTask, metadata, physical: pa.Schema, columns: tuple[ColumnSpec, ...], what: str
) -> None:
    """Raise :class:`DataFileCorruptError` when the file is not what the catalog says.

    A file DuckDB maps by position (``legacy_positional``) passes: only the exact
    reader maps such files; native scans leave them to it.

    Args:
        task: the catalog's view of the file.
        metadata: the file's parsed ``FileMetaData``.
        physical: the file's Arrow schema (field ids in the field metadata).
        columns: the table columns this read wants.
        what: names the file, table and snapshot for the message.
    """
    if metadata.num_rows != task.record_count:
        raise DataFileCorruptError(
            f"{what} has {metadata.num_rows} rows but the catalog records "
            f"{task.record_count}; the file was replaced or truncated. Restore it from a "
            "backup (DuckLake never rewrites a file in place)"
        )
    if task.name_mapping is not None or legacy_positional(task, metadata, physical):
        return
    ids = {field_id(f) for f in physical}
    ids.discard(None)
    if not ids and len(physical):
        raise DataFileCorruptError(
            f"{what} has no Parquet field ids, the catalog records no name mapping for it, "
            "and its footer is not the one the catalog registered, so it is not a file "
            "DuckLake wrote or registered (every column would be a guess). Restore the "
            "original file, or register outside files with ducklake_add_data_files"
        )
    if task.layout_current:
        missing = [c for c in columns if c.column_id not in ids]
        if missing:
            names = ", ".join(f"{c.name!r} (field id {c.column_id})" for c in missing)
            raise DataFileCorruptError(
                f"{what} lacks column(s) {names} although it was written with the table's "
                "current columns; the file was replaced. Restore it from a backup"
            )


def legacy_positional(task: DataFileTask, metadata, physical: pa.Schema) -> bool:
    """Whether this file's columns map onto the table's by position, as DuckDB maps them.

    DuckDB's rule (``ducklake_multi_file_reader``) is a file with no name mapping in the
    catalog and a top-level column without a Parquet field id: a file registered with
    ``ducklake_add_data_files`` by a DuckLake that recorded no name mappings yet. File
    column *i* is then table column *i*, for as many columns as both have. We apply it
    only while the file's footer is the one the catalog registered (its recorded
    ``footer_size``), so a file replaced later by some other Parquet file is refused
    instead of read by position.
    """
    if task.name_mapping is not None or not len(physical):
        return False
    if all(field_id(f) is not None for f in physical):
        return False
    return task.file.footer_size in (None, metadata.serialized_size)


def reads_by_name(physical: pa.Schema, columns: tuple[ColumnSpec, ...]) -> bool:
    """Whether a by-name Parquet scan reads exactly ``columns`` from this file.

    True when each column's name holds the field with the column's id and (after the
    table's own cast) type; otherwise the file needs the per-file reader, which maps by
    field id.
    """
    for column in columns:
        index = physical.get_field_index(column.name)
        if index < 0 or field_id(physical.field(index)) != column.column_id:
            return False
    return True


def files_unchanged(tasks: tuple[DataFileTask, ...]) -> bool:
    """Every local file is still a regular file of the catalog's size (one ``stat`` each:
    cheap enough to repeat on every scan of a cached plan).

    Native scans built for a snapshot are cached; this is what a cached scan re-checks
    before reuse (a file gone or replaced sends the lookup back through the full checks).
    """
    for task in tasks:
        location = parse_location(task.file.url)
        if location.scheme != "file":
            continue
        try:
            found = os.stat(location.path)
        except OSError:
            return False
        if not stat.S_ISREG(found.st_mode):
            return False
        if task.file.size is not None and found.st_size != task.file.size:
            return False
    return True
