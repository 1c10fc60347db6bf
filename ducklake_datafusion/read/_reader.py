"""Parquet data files -> Arrow batches in the table schema.

Two readers:

* :func:`scan_clean_files` reads many files that need no per-row work as **one**
  pyarrow dataset scan (row-group pruning, parallel decode, pushed filter and projection).
* :func:`read_data_file` streams one file row group by row group, tracking physical
  positions from the footer so deletes and rows of later snapshots can be dropped while
  row groups that cannot match the filter are still skipped; with a filter, row groups
  are late-materialised. Where each column comes from (field ids, name mapping,
  defaults) is ``_file_columns``' job.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import (
    DataFileCorruptError,
    DataFileError,
    DuckLakeError,
    UnsupportedFeatureError,
)
from ..pathres import StorageOptions, filesystem_for, parse_location, translate_storage_error
from ..scan import DataFileTask, FileRef, field_id
from ._deletes import deleted_positions, keep_mask
from ._encrypted import read_encrypted_file
from ._file_checks import check_data_file, reads_by_name
from ._file_columns import FileColumns, file_columns, physical_fields
from ._footers import parsed_fragment, require_regular_file
from ._request import FILE_ID, POSITION, ROW_ID, ReadRequest

__all__ = [
    "FILE_ID",
    "POSITION",
    "ROW_ID",
    "ReadRequest",
    "deleted_rows",
    "open_file",
    "read_data_file",
    "scan_clean_files",
]


@functools.cache
def parquet_format():
    """The Parquet format every fragment is made with. (``pyarrow.dataset`` and
    ``pyarrow.acero`` are imported on first use: both import pandas, 0.2 s that a Spark
    planner process, which reads no file at all for most requests, would pay at start.)"""
    import pyarrow.dataset as ds

    return ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True)
    )


def open_file(ref: FileRef, storage: StorageOptions):
    location = parse_location(ref.url)
    if location.scheme == "file":
        require_regular_file(location.path, ref.url)
    return filesystem_for(location, storage).open_input_file(location.path)


def read_error(exc: Exception, what: str) -> DuckLakeError:
    """``exc`` as our typed error naming the file, table and snapshot (``what``)."""
    if isinstance(exc, DuckLakeError):
        return _in_context(exc, what)
    if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowInvalid):
        return translate_storage_error(exc, what=what)
    return DataFileCorruptError(
        f"{what} is not a readable Parquet file ({exc}); it may be truncated or overwritten. "
        "Restore it from a backup or rewrite the table in DuckDB"
    )


def _in_context(exc: DuckLakeError, what: str) -> DuckLakeError:
    """``exc``, or the same kind of error prefixed with ``what`` when its message does
    not name the table and snapshot yet (a check that knew only the file's URL)."""
    if what in str(exc) or not isinstance(exc, DataFileError):
        return exc
    named = type(exc)(f"{what}: {exc}")
    named.__cause__ = exc
    return named


def scan_clean_files(tasks: list[DataFileTask], request: ReadRequest) -> Iterator[pa.RecordBatch]:
    """One pyarrow dataset scan over files whose columns match the table by name and type.

    Each file's footer (parsed once per process) is first checked against the catalog; a
    file whose columns carry the right field ids under other names is read by the
    per-file reader instead, which maps by field id.
    """
    fragments, by_field_id = [], []
    for task in tasks:
        what = f"data file {task.file.url} of table {request.table} (snapshot {request.snapshot})"
        try:
            fragment = parsed_fragment(task.file, request.storage, parquet_format())
            physical = fragment.physical_schema
        except Exception as exc:
            raise read_error(exc, what) from exc
        check_data_file(task, fragment.metadata, physical, request.columns, what)
        if reads_by_name(physical, request.columns):
            fragments.append(fragment)
        else:
            by_field_id.append(task)
    if fragments:
        yield from _scan_fragments(fragments, request)
    for task in by_field_id:
        yield from read_data_file(task, request)


def _scan_fragments(fragments: list, request: ReadRequest) -> Iterator[pa.RecordBatch]:
    import pyarrow.dataset as ds

    what = f"data files of table {request.table} (snapshot {request.snapshot})"
    try:
        schema = pa.schema([pa.field(c.name, c.arrow_type) for c in request.columns])
        dataset = ds.FileSystemDataset(fragments, schema, parquet_format(), fragments[0].filesystem)
        scanner = dataset.scanner(
            columns=list(request.output),
            filter=request.filter,
            batch_size=request.batch_size,
            use_threads=True,
        )
        for batch in scanner.to_batches():
            if batch.num_rows:
                yield batch
    except Exception as exc:
        raise read_error(exc, what) from exc


def _row_groups(fragment, parquet: pq.ParquetFile, request: ReadRequest, physical) -> list[int]:
    """Row groups that may hold matching rows (statistics), all when unsure."""
    count = parquet.metadata.num_row_groups
    if request.filter is None or count <= 1:
        return list(range(count))
    wanted = {c.name: c for c in request.columns}
    for name in request.filter_columns:
        column = wanted.get(name)
        if column is None or name not in physical.names:
            return list(range(count))
        phys = physical.field(name)
        if field_id(phys) != column.column_id or phys.type != column.arrow_type:
            return list(range(count))
    try:
        return [rg.id for rg in fragment.subset(filter=request.filter).row_groups]
    except Exception:  # noqa: BLE001 - pruning is an optimisation; never fail the read on it
        return list(range(count))


def read_data_file(
    task: DataFileTask, request: ReadRequest, *, positions: np.ndarray | None = None
) -> Iterator[pa.RecordBatch]:
    """Stream one data file with deletes, snapshot filtering and schema mapping applied."""
    what = f"data file {task.file.url} of table {request.table} (snapshot {request.snapshot})"
    try:
        if not request.with_positions:
            yield from _read(task, request, what, positions)
            return
        if task.encryption_key is not None:
            raise UnsupportedFeatureError(
                f"{what} is encrypted; rows of encrypted lakes are changed with DuckDB only"
            )
        for batch in _read(task, request, what, positions):
            file_ids = pa.array(np.full(batch.num_rows, task.data_file_id, dtype=np.int64))
            yield batch.append_column(FILE_ID, file_ids)
    except Exception as exc:
        raise read_error(exc, what) from exc


def deleted_rows(task: DataFileTask, request: ReadRequest) -> np.ndarray:
    """The data file's deleted positions at the request's snapshot (checked, cached)."""
    return deleted_positions_of(task, request.table, request.snapshot, request.storage)


def deleted_positions_of(
    task: DataFileTask, table: str, snapshot: int, storage: StorageOptions
) -> np.ndarray:
    """The data file's sorted deleted positions at ``snapshot`` (each delete file read
    once per process, checked; typed errors name the file, table and snapshot). Shared by
    every engine that applies deletes itself (the Rust scan, Spark's masks)."""
    what = f"data file {task.file.url} of table {table} (snapshot {snapshot})"
    return deleted_positions(
        task.deletes, snapshot, lambda ref: open_file(ref, storage), what, task.record_count
    )


def _read(task, request: ReadRequest, what: str, positions) -> Iterator[pa.RecordBatch]:
    deleted = positions if positions is not None else deleted_rows(task, request)
    if task.encryption_key is not None:
        yield from read_encrypted_file(task, request, deleted, what)
        return
    fragment = parsed_fragment(task.file, request.storage, parquet_format())
    metadata = fragment.metadata
    parquet = pq.ParquetFile(fragment.open(), metadata=metadata)
    check_data_file(task, metadata, parquet.schema_arrow, request.columns, what)
    physical = physical_fields(parquet.schema_arrow, task, request, metadata, what)
    layout = file_columns(physical, task, request, what)
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    read_row_group = _read_row_group if request.filter is None else _read_row_group_late
    for rg in _row_groups(fragment, parquet, request, physical):
        yield from read_row_group(parquet, rg, int(starts[rg]), layout, deleted)


def _visible(batch, layout: FileColumns, deleted: np.ndarray, offset: int, length: int):
    """Rows neither deleted nor written by a later snapshot (None: all of them)."""
    mask = keep_mask(deleted, offset, length)
    if layout.snapshot_field is not None:
        visible = pc.less_equal(batch.column(layout.snapshot_field.name), layout.request.snapshot)
        visible = visible.to_numpy(zero_copy_only=False)
        mask = visible if mask is None else (mask & visible)
    return mask


def _read_row_group(parquet, rg: int, offset: int, layout: FileColumns, deleted):
    """No filter: decode every requested column, drop invisible rows."""
    request = layout.request
    names = layout.physical(request.columns)
    names += [f.name for f in (layout.snapshot_field, layout.row_id_field) if f is not None]
    names = list(dict.fromkeys(names))
    for batch in parquet.iter_batches(
        batch_size=request.batch_size, row_groups=[rg], columns=names, use_threads=True
    ):
        length = batch.num_rows
        mask = _visible(batch, layout, deleted, offset, length)
        arrays = layout.arrays(batch, request.columns, length)
        names_out = [c.name for c in request.columns]
        if request.with_row_ids:
            arrays.append(layout.row_ids(batch, offset, length))
            names_out.append(ROW_ID)
        if request.with_positions:
            arrays.append(pa.array(np.arange(offset, offset + length, dtype=np.int64)))
            names_out.append(POSITION)
        out = pa.RecordBatch.from_arrays(arrays, names=names_out) if arrays else _empty(length)
        if mask is not None:
            out = out.filter(pa.array(mask))
        offset += length
        if out.num_rows:
            yield out.select(_output_names(request))


# The second pass decodes rows [0, last kept] in one batch, rounded up to this many rows
# (pyarrow's per-batch cost makes several small batches slower than one larger one).
LATE_BATCH_ROUNDING = 8_192


def _read_row_group_late(parquet, rg: int, offset: int, layout: FileColumns, deleted):
    """Late materialisation: decode the filter columns, then only what survives.

    Pass 1 decodes the columns the filter reads (and per-row snapshot ids), evaluates the
    filter together with deletes into the positions to keep. A row group with no match
    costs nothing more. Pass 2 decodes the other columns only up to the last kept row (a
    point lookup near the start of a row group decodes little of them) and takes the kept
    positions.
    """
    request = layout.request
    first = [c for c in request.columns if c.name in request.filter_columns]
    rest = [c for c in request.columns if c.name not in request.filter_columns]
    first_names = layout.physical(first)
    if layout.snapshot_field is not None:
        first_names.append(layout.snapshot_field.name)
    table = parquet.read_row_group(rg, columns=list(dict.fromkeys(first_names)), use_threads=True)
    length = table.num_rows
    if length == 0:
        return
    batch = table.combine_chunks().to_batches()[0] if table.num_columns else _empty(length)
    filtered = pa.table(layout.arrays(batch, first, length), names=[c.name for c in first])
    matches = _evaluate(filtered, request.filter, length)
    mask = _visible(batch, layout, deleted, offset, length)
    if mask is not None:
        matches = pc.and_(matches, pa.array(mask))
    keep = pc.indices_nonzero(matches)
    if len(keep) == 0:
        return
    everything = len(keep) == length
    columns = {c.name: a for c, a in zip(first, filtered.columns)}
    if not everything:
        columns = {name: a.take(keep) for name, a in columns.items()}
    taken = _second_pass(parquet, rg, offset, layout, rest, keep.to_numpy(), length)
    columns.update(taken)
    if request.with_positions:
        columns[POSITION] = pa.array(offset + keep.to_numpy().astype(np.int64))
    names = _output_names(request)
    if not names:
        yield _empty(len(keep))
        return
    arrays = [columns[name] for name in names]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    yield pa.RecordBatch.from_arrays(arrays, names=names)


def _second_pass(parquet, rg, offset, layout: FileColumns, rest, keep: np.ndarray, length):
    """Columns ``rest`` (and row ids) at positions ``keep`` of row group ``rg``."""
    request = layout.request
    if not rest and not request.with_row_ids:
        return {}
    names = layout.physical(rest)
    if request.with_row_ids and layout.row_id_field is not None:
        names.append(layout.row_id_field.name)
    names = list(dict.fromkeys(names))
    pieces: list[list[pa.Array]] = []
    last = int(keep[-1])
    step = -(-(last + 1) // LATE_BATCH_ROUNDING) * LATE_BATCH_ROUNDING
    step = max(min(step, length), 1)
    batches = (
        parquet.iter_batches(batch_size=step, row_groups=[rg], columns=names, use_threads=True)
        if names
        else _empty_batches(length, step)
    )
    start = 0
    for batch in batches:
        size = batch.num_rows
        lo, hi = np.searchsorted(keep, [start, start + size])
        if hi > lo:
            arrays = layout.arrays(batch, rest, size)
            if request.with_row_ids:
                arrays.append(layout.row_ids(batch, offset + start, size))
            if not (lo == 0 and hi - lo == size == length):
                positions = pa.array(keep[lo:hi] - start)
                arrays = [a.take(positions) for a in arrays]
            pieces.append(arrays)
        start += size
        if start > last:
            break  # nothing kept further on: stop decoding
    names_out = [c.name for c in rest] + ([ROW_ID] if request.with_row_ids else [])
    return {name: pa.chunked_array([p[i] for p in pieces]) for i, name in enumerate(names_out)}


def _empty_batches(length: int, step: int):
    for start in range(0, length, step):
        yield _empty(min(step, length - start))


def _evaluate(table: pa.Table, expression: pc.Expression, length: int) -> pa.ChunkedArray:
    """The filter's boolean value per row (null where it is null), without threads."""
    if table.num_columns == 0:  # a filter on no column (a constant) still needs the rows
        table = pa.table({"__rows": pa.nulls(length)})
    from pyarrow import acero

    declaration = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions([expression], ["match"])),
        ]
    )
    result = declaration.to_table(use_threads=False).column(0)
    return result if result.type == pa.bool_() else result.cast(pa.bool_())


def _output_names(request: ReadRequest) -> list[str]:
    return (
        list(request.output)
        + ([ROW_ID] if request.with_row_ids else [])
        + ([POSITION] if request.with_positions else [])
    )


def _empty(length: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.nulls(length)], names=["_"]).select([])
