"""Positional delete files as DuckDB writes them.

A delete file names the rows of one data file that a snapshot deleted: Parquet with
``file_path`` (field id 2147483646: the data file, as the lake resolves its path) and
``pos`` (field id 2147483645: the row's physical position in it, ascending), named
``ducklake-<uuid v7>-delete.parquet`` in the table's directory. A data file that already
has deletes gets a new, cumulative file (its earlier positions and the new ones), with each
position's snapshot in ``_ducklake_internal_snapshot_id`` (field id 2147483539), so every
earlier snapshot still reads the rows deleted later; the catalog row then carries the
oldest snapshot as ``begin_snapshot`` and the newest as ``partial_max``. Checked against
DuckDB 1.5.5's own files and rows (``tests/write/test_deletes.py``).

The file is encoded in memory (a few bytes per position) and stored in one write.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..catalog import NewDeleteFile
from ..pathres import filesystem_for, join_path, parse_location, translate_storage_error
from ._files import uuid7

__all__ = ["WrittenDeleteFile", "write_delete_file"]

FILE_PATH_FIELD_ID = 2147483646
POSITION_FIELD_ID = 2147483645
SNAPSHOT_FIELD_ID = 2147483539


def _field(name: str, kind: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, kind, metadata={b"PARQUET:field_id": str(field_id).encode()})


PLAIN_SCHEMA = pa.schema(
    [
        _field("file_path", pa.string(), FILE_PATH_FIELD_ID),
        _field("pos", pa.int64(), POSITION_FIELD_ID),
    ]
)
WITH_SNAPSHOTS_SCHEMA = PLAIN_SCHEMA.append(
    _field("_ducklake_internal_snapshot_id", pa.int64(), SNAPSHOT_FIELD_ID)
)


def _with_dictionary_paths(schema: pa.Schema) -> pa.Schema:
    """``schema`` as written: ``file_path`` a dictionary (Parquet stores a string)."""
    paths = schema.field("file_path")
    return schema.set(0, paths.with_type(pa.dictionary(pa.int32(), pa.string())))


_WRITTEN_PLAIN = _with_dictionary_paths(PLAIN_SCHEMA)
_WRITTEN_WITH_SNAPSHOTS = _with_dictionary_paths(WITH_SNAPSHOTS_SCHEMA)


@dataclass(frozen=True, slots=True)
class WrittenDeleteFile:
    """A delete file on storage (its URL, to delete it if the commit fails) and its row."""

    url: str
    delete_file: NewDeleteFile


def write_delete_file(
    directory: str,
    storage,
    data_file_path: str,
    positions: np.ndarray,
    snapshots: np.ndarray | None,
    description: str,
) -> WrittenDeleteFile:
    """Write the delete file of one data file.

    Args:
        directory: the table's directory URL (ends with ``/``).
        data_file_path: the data file as ``file_path`` names it.
        positions: the deleted positions (any order; unique).
        snapshots: each position's snapshot (a cumulative file), or ``None`` (all of them
            the committing snapshot's, which the catalog row's ``begin_snapshot`` says).
    """
    order = np.argsort(positions, kind="stable")
    # file_path: one value, as a dictionary of one (Parquet's RLE_DICTIONARY, the bytes a
    # repeated string writes, three times faster than repeating it: 0.03 s for 500k rows)
    indices = pa.array(np.zeros(len(positions), dtype=np.int32))
    columns = [
        pa.DictionaryArray.from_arrays(indices, pa.array([data_file_path], pa.string())),
        pa.array(np.asarray(positions, dtype=np.int64)[order]),
    ]
    schema = _WRITTEN_PLAIN
    if snapshots is not None:
        columns.append(pa.array(np.asarray(snapshots, dtype=np.int64)[order]))
        schema = _WRITTEN_WITH_SNAPSHOTS
    table = pa.Table.from_arrays(columns, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", store_schema=False, write_statistics=True)
    data = sink.getvalue()
    name = f"ducklake-{uuid7()}-delete.parquet"
    url = join_path(directory, name, True)
    location = parse_location(url)
    try:
        filesystem = filesystem_for(location, storage)
        if location.scheme == "file":
            import os

            os.makedirs(os.path.dirname(location.path), exist_ok=True)
        with filesystem.open_output_stream(location.path) as out:
            out.write(data)
    except OSError as exc:
        raise translate_storage_error(
            exc, what=f"delete file {url} of {description}", options=storage
        ) from exc
    footer_size = int.from_bytes(data[-8:-4].to_pybytes(), "little")
    begin = partial_max = None
    if snapshots is not None and len(snapshots):
        begin, partial_max = int(np.min(snapshots)), int(np.max(snapshots))
    return WrittenDeleteFile(
        url,
        NewDeleteFile(
            path=name,
            delete_count=len(positions),
            file_size_bytes=data.size,
            footer_size=footer_size,
            begin_snapshot=begin,
            partial_max=partial_max,
        ),
    )
