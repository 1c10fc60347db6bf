"""Files of encrypted lakes, decrypted and read by DuckDB's Parquet reader.

An encrypted lake (``ATTACH ... (ENCRYPTED)``) stores every data and delete file with
Parquet modular encryption under its own AES key, kept base64-encoded in the catalog.
DuckDB's writer leaves out the additional authenticated data that the Parquet
specification requires, so pyarrow (and arrow-rs) refuse the files even with the right
key ("Failed decryption finalization"); DuckDB's own reader decrypts them with
``read_parquet(path, encryption_config = {footer_key_value: from_base64(key)})``.

So these files are read by the ``duckdb`` package (a dependency anyway), one file at a
time: columns are selected **by Parquet field id** through ``read_parquet``'s ``schema``
map (which also fills columns the file lacks with their ``initial_default``, cast by
DuckDB itself), with ``file_row_number`` giving the physical positions that deletes and
row ids need. Everything after that (deletes, rows of later snapshots, row ids, the
filter, the table types) is the same as for any other file.

Keys are secrets: they are bound as query parameters (never formatted into SQL, which
DuckDB may quote in errors) and never appear in a message. Files on object storage are
fetched through the lake's pyarrow filesystem into a private temporary file first.
Nested columns are matched below the top level by name, so an encrypted file written
before a nested column changed (a struct field added, renamed or re-added) is refused
rather than guessed.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec, duckdb_type_for
from ..errors import (
    DataFileCorruptError,
    DataFileError,
    DuckLakeError,
    UnsupportedFeatureError,
)
from ..pathres import StorageOptions, filesystem_for, parse_location, translate_storage_error
from ..scan import DataFileTask, FileRef, conform_duckdb_export
from ._file_columns import ROW_ID_FIELD_ID, SNAPSHOT_FIELD_ID
from ._footers import require_regular_file
from ._request import ROW_ID

__all__ = ["read_encrypted_bytes", "read_encrypted_file", "read_encrypted_table"]

_local = threading.local()
_READ = (
    "SELECT * FROM read_parquet(?, encryption_config = {footer_key_value: from_base64(?)}{options})"
)


def _connection() -> duckdb.DuckDBPyConnection:
    if getattr(_local, "con", None) is None:
        _local.con = duckdb.connect(":memory:")
    return _local.con


@contextmanager
def _local_path(ref: FileRef, storage: StorageOptions) -> Iterator[str]:
    """A local path holding the file: itself, or a private copy fetched from storage."""
    location = parse_location(ref.url)
    if location.scheme == "file":
        require_regular_file(location.path, ref.url)
        yield location.path
        return
    handle, path = tempfile.mkstemp(prefix="ducklake-encrypted-", suffix=".parquet")
    try:
        with os.fdopen(handle, "wb") as out:
            source = filesystem_for(location, storage).open_input_stream(location.path)
            with source:
                while chunk := source.read(8 << 20):
                    out.write(chunk)
        yield path
    finally:
        os.remove(path)


def read_encrypted_table(
    ref: FileRef, key: str, storage: StorageOptions, what: str, options: str = ""
) -> pa.Table:
    """Decrypt and read one file with DuckDB; ``options`` are more read_parquet arguments."""
    try:
        with _local_path(ref, storage) as path:
            return _read(path, key, what, options)
    except OSError as exc:
        if isinstance(exc, DuckLakeError):
            raise
        raise translate_storage_error(exc, what=what, options=storage) from exc


def read_encrypted_bytes(data: bytes, key: str, what: str, options: str = "") -> pa.Table:
    """As :func:`read_encrypted_table`, for a (small) file already read into memory."""
    handle, path = tempfile.mkstemp(prefix="ducklake-encrypted-", suffix=".parquet")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return _read(path, key, what, options)
    finally:
        os.remove(path)


def _read(path: str, key: str, what: str, options: str) -> pa.Table:
    try:
        sql = _READ.replace("{options}", options)
        return _connection().sql(sql, params=[path, key]).to_arrow_table()
    except duckdb.Error as exc:
        text = str(exc)
        if "AES tag" in text or "encrypt" in text.lower():
            raise DataFileCorruptError(
                f"{what} cannot be decrypted with the key the catalog records ({text}); the "
                "file was replaced, or the catalog row belongs to another file. Restore it"
            ) from exc
        raise DataFileCorruptError(
            f"{what} is not a readable encrypted Parquet file ({text}); restore it from a backup"
        ) from exc


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _schema_map(columns: tuple[ColumnSpec, ...]) -> str:
    """read_parquet's ``schema`` map: field id -> (our name, DuckDB type, initial default)."""
    entries = []
    for index, column in enumerate(columns):
        sql_type = duckdb_type_for(column)
        default = column.initial_default
        if default is None or default.upper() == "NULL":
            default_sql = "NULL"
        else:
            default_sql = f"CAST({_literal(default)} AS {sql_type})"
        entries.append(
            f"{int(column.column_id)}: {{name: 'c{index}', type: {_literal(sql_type)}, "
            f"default_value: {default_sql}}}"
        )
    for field_id, name in ((SNAPSHOT_FIELD_ID, "snap"), (ROW_ID_FIELD_ID, "rid")):
        entries.append(f"{field_id}: {{name: '{name}', type: 'BIGINT', default_value: NULL}}")
    return "MAP {" + ", ".join(entries) + "}"


def read_encrypted_file(task: DataFileTask, request, deleted: np.ndarray, what: str):
    """The visible rows of one encrypted data file, shaped by ``request``."""

    if task.name_mapping is not None:
        raise UnsupportedFeatureError(
            f"{what} is encrypted and mapped by name (ducklake_add_data_files); this reader "
            "cannot read that combination. Read the table with DuckDB"
        )
    nested = [c.name for c in request.columns if c.children and c.since > task.begin_snapshot]
    if nested:
        raise UnsupportedFeatureError(
            f"{what} is encrypted and was written before a change to the nested column(s) "
            f"{nested}, whose fields could only be matched by name (wrong after a field is "
            "renamed or re-added). Read the table with DuckDB, or rewrite the file "
            "(ducklake_rewrite_data_files) so it has the current layout"
        )
    options = f", file_row_number = true, schema = {_schema_map(request.columns)}"
    table = read_encrypted_table(task.file, task.encryption_key, request.storage, what, options)
    if table.num_rows != task.record_count:
        raise DataFileCorruptError(
            f"{what} has {table.num_rows} rows but the catalog records {task.record_count}; "
            "the file was replaced or truncated. Restore it from a backup"
        )
    positions = table.column("file_row_number").to_numpy()
    keep = np.ones(table.num_rows, dtype=bool)
    if len(deleted):
        keep[np.isin(positions, deleted)] = False
    snapshots = table.column("snap")
    if snapshots.null_count < len(snapshots):
        later = pc.fill_null(pc.greater(snapshots, request.snapshot), False)
        keep &= ~later.to_numpy(zero_copy_only=False)
    arrays, names = [], []
    for index, column in enumerate(request.columns):
        try:
            arrays.append(conform_duckdb_export(table.column(f"c{index}"), column))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise DataFileError(
                f"column {column.name!r} of {what} cannot be read as {column.type_name} ({exc})"
            ) from exc
        names.append(column.name)
    if request.with_row_ids:
        embedded = table.column("rid")
        if embedded.null_count == len(embedded) and task.row_id_start is None:
            raise DataFileCorruptError(f"{what} has neither row_id_start nor embedded row ids")
        start = task.row_id_start or 0
        computed = pa.array(positions + start, pa.int64())
        arrays.append(
            pc.coalesce(embedded, computed) if embedded.null_count < len(embedded) else computed
        )
        names.append(ROW_ID)
    rows = pa.table(arrays, names=names) if arrays else pa.table({"_": pa.nulls(table.num_rows)})
    rows = rows.filter(pa.array(keep))
    if request.filter is not None:
        rows = rows.filter(request.filter)
    output = list(request.output) + ([ROW_ID] if request.with_row_ids else [])
    if not output:
        if rows.num_rows:
            yield pa.RecordBatch.from_arrays([pa.nulls(rows.num_rows)], names=["_"]).select([])
        return
    yield from rows.select(output).combine_chunks().to_batches()
