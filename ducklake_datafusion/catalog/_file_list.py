"""Step 5 of the read path: a table's live data files, with their delete files, in Arrow.

A table of 100,000 files must plan in vectorised code, so its file list is one Arrow
table (columns ``_sql.FILE_COLUMNS``) built from two plain queries joined in Arrow, not a
Python object per file. The full read (``_table_files``), the incremental refresh
(``_refresh``) and the cut all build their file tables with these functions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._backend import MetadataSession
from ._models import DeleteFileEntry, delete_file_entry
from ._sql import (
    DATA_FILES_SCHEMA,
    DATA_FILES_SQL,
    DELETE_COLUMNS,
    DELETE_FILES_SCHEMA,
    DELETE_FILES_SQL,
    FILE_COLUMNS,
)

__all__ = ["joined_delete_files", "read_delete_files", "read_file_table", "sorted_by_file_id"]


def read_file_table(
    session: MetadataSession, table_id: int, snapshot: int
) -> tuple[pa.Table, dict[int, tuple[DeleteFileEntry, ...]]]:
    """Step 5: one Arrow table with columns ``FILE_COLUMNS`` (sorted by data_file_id).

    Each row carries the data file's first live delete file (lowest ``delete_file_id``).
    A data file normally has at most one, but DuckDB's flush of inlined deletes into a
    file written by ``ducklake_rewrite_data_files`` adds a second one with a
    ``begin_snapshot`` in the past; any further live delete files are returned beside the
    table, by data_file_id, so that none is lost.
    """
    params = [table_id, snapshot, snapshot]
    data = session.arrow(DATA_FILES_SQL, params, DATA_FILES_SCHEMA)
    return joined_delete_files(data, read_delete_files(session, table_id, snapshot))


def read_delete_files(session: MetadataSession, table_id: int, snapshot: int) -> pa.Table:
    """The table's live delete files at ``snapshot`` (``DELETE_FILES_SCHEMA``)."""
    params = [table_id, snapshot, snapshot]
    return session.arrow(DELETE_FILES_SQL, params, DELETE_FILES_SCHEMA)


def joined_delete_files(
    data: pa.Table, deletes: pa.Table
) -> tuple[pa.Table, dict[int, tuple[DeleteFileEntry, ...]]]:
    """Data-file rows (``DATA_FILES_SCHEMA``) with their first live delete file, and the
    further ones by data_file_id (see :func:`read_file_table`)."""
    n = data.num_rows
    extra: dict[int, tuple[DeleteFileEntry, ...]] = {}
    if deletes.num_rows == 0:
        columns = [pa.nulls(n, pa.int64()) for _ in DELETE_COLUMNS]
    else:
        if deletes.num_rows > 1:
            order = [("data_file_id", "ascending"), ("delete_file_id", "ascending")]
            deletes = deletes.sort_by(order)
        owners = deletes.column("data_file_id").to_numpy(zero_copy_only=False)
        unique_owners, first_rows = np.unique(owners, return_index=True)
        extra = _extra_delete_files(deletes)
        ids = data.column("data_file_id").cast(pa.int64())
        found = pc.index_in(ids, value_set=pa.array(unique_owners, pa.int64()))
        positions = pc.take(pa.array(first_rows, pa.int64()), found)  # null: no delete file
        columns = [deletes.column(i).take(positions) for i in range(1, deletes.num_columns)]
    table = pa.Table.from_arrays(list(data.columns) + columns, names=list(FILE_COLUMNS))
    return sorted_by_file_id(table), extra


def sorted_by_file_id(table: pa.Table) -> pa.Table:
    """``table`` in ``data_file_id`` order (checked first: usually it already is, and a
    check reads the ids once where a sort would move every row)."""
    ids = table.column("data_file_id").to_numpy(zero_copy_only=False)
    if len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1])):
        return table
    return table.sort_by("data_file_id")


def _extra_delete_files(deletes: pa.Table) -> dict[int, tuple[DeleteFileEntry, ...]]:
    """Delete files after the first of their data file (``deletes`` sorted by data file)."""
    owners = deletes.column("data_file_id").to_numpy(zero_copy_only=False)
    if len(owners) < 2 or not (owners[1:] == owners[:-1]).any():
        return {}
    extra: dict[int, list[DeleteFileEntry]] = {}
    rows = deletes.to_pylist()
    for previous, row in itertools.pairwise(rows):
        if row["data_file_id"] == previous["data_file_id"]:
            extra.setdefault(int(row["data_file_id"]), []).append(delete_file_entry(row))
    return {k: tuple(v) for k, v in extra.items()}
