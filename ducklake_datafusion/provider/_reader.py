"""Parquet data files -> Arrow batches in the table schema.

Two readers:

* :func:`scan_clean_files` reads many files that need no per-row work as **one**
  pyarrow dataset scan (row-group pruning, parallel decode, pushed filter and projection).
* :func:`read_data_file` streams one file row group by row group, tracking physical
  positions from the footer so deletes and rows of later snapshots can be dropped while
  row groups that cannot match the filter are still skipped. Columns are matched by
  field id, converted to the current types, and missing ones filled with defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyarrow import acero

from ..errors import DataFileCorruptError, DataFileError, DeleteFileError, DuckLakeError
from ..pathres import StorageOptions, filesystem_for, parse_location, translate_storage_error
from ..types import ColumnSpec
from ._conform import annotate_by_position, conform, default_array, field_id, with_field_id
from ._deletes import deleted_positions, keep_mask
from ._footers import parsed_fragment
from ._plan import DataFileTask, FileRef

__all__ = [
    "ROW_ID",
    "SNAPSHOT_FIELD_ID",
    "ReadRequest",
    "open_file",
    "read_data_file",
    "scan_clean_files",
]

SNAPSHOT_FIELD_ID = 2147483539
ROW_ID_FIELD_ID = 2147483540
ROW_ID = "rowid"
_FORMAT = ds.ParquetFileFormat(
    default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True)
)


@dataclass(frozen=True)
class ReadRequest:
    """What one execution wants from its tasks.

    Attributes:
        columns: table columns to materialise (output plus filter columns).
        output: output column names in order (may be empty, e.g. for ``count(*)``).
        filter: applied exactly after deletes; ``None`` for no filter.
        filter_columns: top-level column names the filter reads.
        with_row_ids: append a ``rowid`` column (for the change feed).
    """

    table: str
    snapshot: int
    columns: tuple[ColumnSpec, ...]
    output: tuple[str, ...]
    filter: pc.Expression | None
    filter_columns: frozenset[str]
    storage: StorageOptions
    with_row_ids: bool = False
    batch_size: int = 131_072


def _location(ref: FileRef, storage: StorageOptions):
    location = parse_location(ref.url)
    return filesystem_for(location, storage), location.path


def open_file(ref: FileRef, storage: StorageOptions):
    filesystem, path = _location(ref, storage)
    return filesystem.open_input_file(path)


def _fail(exc: Exception, what: str) -> DuckLakeError:
    if isinstance(exc, DuckLakeError):
        return exc
    if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowInvalid):
        return translate_storage_error(exc, what=what)
    return DataFileCorruptError(
        f"{what} is not a readable Parquet file ({exc}); it may be truncated or overwritten. "
        "Restore it from a backup or rewrite the table in DuckDB"
    )


def _fragment(ref: FileRef, storage: StorageOptions):
    filesystem, path = _location(ref, storage)
    return _FORMAT.make_fragment(path, filesystem=filesystem, file_size=ref.size)


def scan_clean_files(tasks: list[DataFileTask], request: ReadRequest) -> Iterator[pa.RecordBatch]:
    """One pyarrow dataset scan over files whose columns match the table by name and type."""
    what = f"data files of table {request.table}"
    try:
        fragments = [_fragment(t.file, request.storage) for t in tasks]
        schema = pa.schema([pa.field(c.name, c.arrow_type) for c in request.columns])
        dataset = ds.FileSystemDataset(fragments, schema, _FORMAT, fragments[0].filesystem)
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
        raise _fail(exc, what) from exc


def _physical_fields(parquet: pq.ParquetFile, task: DataFileTask, columns) -> pa.Schema:
    schema = parquet.schema_arrow
    if task.name_mapping is not None:
        return _apply_name_mapping(schema, task.name_mapping)
    if all(field_id(f) is None for f in schema):
        return annotate_by_position(schema, columns)
    return schema


def _apply_name_mapping(schema: pa.Schema, nodes) -> pa.Schema:
    children: dict[int | None, list] = {}
    for node in nodes:
        children.setdefault(node.parent_node, []).append(node)

    def annotate(field: pa.Field, level: list) -> pa.Field | None:
        match = _match_node(field.name, level)
        if match is None:
            return field
        return _annotate_children(with_field_id(field, match.target_field_id), children, match)

    return pa.schema([annotate(f, children.get(None, [])) for f in schema])


def _match_node(name: str, level: list):
    for node in level:
        if node.source_name == name:
            return node
    lowered = name.lower()
    for node in level:
        if node.source_name.lower() == lowered:
            return node
    return None


def _annotate_children(field: pa.Field, children: dict, node) -> pa.Field:
    level = children.get(node.node_id, [])
    if not level:
        return field
    t = field.type

    def sub(child: pa.Field, forced=None) -> pa.Field:
        match = forced or _match_node(child.name, level)
        if match is None:
            return child
        return _annotate_children(with_field_id(child, match.target_field_id), children, match)

    if pa.types.is_struct(t):
        t = pa.struct([sub(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_list(t):
        t = pa.list_(sub(t.value_field, level[0] if len(level) == 1 else None))
    elif pa.types.is_map(t):
        t = pa.map_(sub(t.key_field), sub(t.item_field))
    return field.with_type(t)


def _partition_value(url: str, name: str) -> str | None:
    from urllib.parse import unquote

    for segment in url.split("/"):
        if segment.startswith(name + "="):
            value = unquote(segment[len(name) + 1 :])
            return None if value == "__HIVE_DEFAULT_PARTITION__" else value
    return None


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
        yield from _read(task, request, what, positions)
    except (DataFileError, DeleteFileError):
        raise
    except Exception as exc:
        raise _fail(exc, what) from exc


@dataclass(frozen=True)
class _FileColumns:
    """Where each requested table column comes from in one data file.

    Attributes:
        sources: column id -> physical field (None: missing, filled with default/constant).
        snapshot_field: per-row snapshot ids of merged/flushed files (rows of later
            snapshots are dropped).
        row_id_field: embedded row ids (change feed), else computed from row_id_start.
        partition_values: hive partition values of name-mapped files.
    """

    task: DataFileTask
    request: ReadRequest
    what: str
    sources: dict
    snapshot_field: pa.Field | None
    row_id_field: pa.Field | None
    partition_values: dict

    def physical(self, columns) -> list[str]:
        """Physical column names holding ``columns`` (table columns)."""
        names = [self.sources[c.column_id].name for c in columns if self.sources[c.column_id]]
        return list(dict.fromkeys(names))

    def arrays(self, batch, columns, length: int) -> list[pa.Array]:
        """``columns`` in the table types, from ``batch`` (physical names) or defaults."""
        out = []
        for column in columns:
            source = self.sources[column.column_id]
            if source is not None:
                out.append(_convert(batch.column(source.name), source, column, self.what))
            elif column.name in self.partition_values:
                out.append(_constant(self.partition_values[column.name], column, length))
            else:
                out.append(default_array(column, length))
        return out

    def row_ids(self, batch, offset: int, length: int) -> pa.Array:
        return _row_ids(batch, self.row_id_field, self.task, offset, length, self.what)


def _read(task, request: ReadRequest, what: str, positions) -> Iterator[pa.RecordBatch]:
    deleted = positions
    if deleted is None:
        deleted = deleted_positions(
            task.deletes, request.snapshot, lambda ref: open_file(ref, request.storage), what
        )
    fragment = parsed_fragment(task.file, request.storage, _FORMAT)
    metadata = fragment.metadata
    parquet = pq.ParquetFile(fragment.open(), metadata=metadata)
    if metadata.num_rows != task.record_count:
        raise DataFileCorruptError(
            f"{what} has {metadata.num_rows} rows but the catalog records "
            f"{task.record_count}; the file was replaced or truncated. Restore it"
        )
    physical = _physical_fields(parquet, task, request.columns)
    by_id = {field_id(f): f for f in physical}
    layout = _FileColumns(
        task=task,
        request=request,
        what=what,
        sources={c.column_id: by_id.get(c.column_id) for c in request.columns},
        snapshot_field=by_id.get(SNAPSHOT_FIELD_ID),
        row_id_field=by_id.get(ROW_ID_FIELD_ID) if request.with_row_ids else None,
        partition_values=_mapped_partitions(task, request),
    )
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    read_row_group = _read_row_group if request.filter is None else _read_row_group_late
    for rg in _row_groups(fragment, parquet, request, physical):
        yield from read_row_group(parquet, rg, int(starts[rg]), layout, deleted)


def _visible(batch, layout: _FileColumns, deleted: np.ndarray, offset: int, length: int):
    """Rows neither deleted nor written by a later snapshot (None: all of them)."""
    mask = keep_mask(deleted, offset, length)
    if layout.snapshot_field is not None:
        visible = pc.less_equal(batch.column(layout.snapshot_field.name), layout.request.snapshot)
        visible = visible.to_numpy(zero_copy_only=False)
        mask = visible if mask is None else (mask & visible)
    return mask


def _read_row_group(parquet, rg: int, offset: int, layout: _FileColumns, deleted):
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
        out = pa.RecordBatch.from_arrays(arrays, names=names_out) if arrays else _empty(length)
        if mask is not None:
            out = out.filter(pa.array(mask))
        offset += length
        if out.num_rows:
            yield out.select(_output_names(request))


# The second pass decodes rows [0, last kept] in one batch, rounded up to this many rows
# (pyarrow's per-batch cost makes several small batches slower than one larger one).
LATE_BATCH_ROUNDING = 8_192


def _read_row_group_late(parquet, rg: int, offset: int, layout: _FileColumns, deleted):
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
    names = _output_names(request)
    if not names:
        yield _empty(len(keep))
        return
    arrays = [columns[name] for name in names]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    yield pa.RecordBatch.from_arrays(arrays, names=names)


def _second_pass(parquet, rg, offset, layout: _FileColumns, rest, keep: np.ndarray, length):
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
    declaration = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration("project", acero.ProjectNodeOptions([expression], ["match"])),
        ]
    )
    result = declaration.to_table(use_threads=False).column(0)
    return result if result.type == pa.bool_() else result.cast(pa.bool_())


def _output_names(request: ReadRequest) -> list[str]:
    return list(request.output) + ([ROW_ID] if request.with_row_ids else [])


def _convert(array: pa.Array, source: pa.Field, column: ColumnSpec, what: str) -> pa.Array:
    """conform() with an error that names the column instead of blaming the file."""
    try:
        return conform(array, source, column)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise DataFileError(
            f"column {column.name!r} of {what} holds values that cannot be read as "
            f"{column.type_name} ({exc}); e.g. HUGEINT values beyond 1e38 are stored as "
            "doubles by the writer and do not fit decimal(38, 0). Select other columns, "
            "or cast the column in DuckDB"
        ) from exc


def _empty(length: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.nulls(length)], names=["_"]).select([])


def _row_ids(batch, row_id_field, task, offset: int, length: int, what: str) -> pa.Array:
    if row_id_field is not None:
        return batch.column(row_id_field.name)
    if task.row_id_start is None:
        raise DataFileCorruptError(f"{what} has neither row_id_start nor embedded row ids")
    return pa.array(np.arange(task.row_id_start + offset, task.row_id_start + offset + length))


def _mapped_partitions(task: DataFileTask, request: ReadRequest) -> dict[str, str | None]:
    """Hive partition values of name-mapped files whose mapping marks them ``is_partition``."""
    if not task.name_mapping:
        return {}
    values = {}
    by_target = {n.target_field_id: n for n in task.name_mapping if n.is_partition}
    for column in request.columns:
        node = by_target.get(column.column_id)
        if node is not None:
            values[column.name] = _partition_value(task.file.url, node.source_name)
    return values


def _constant(text: str | None, column: ColumnSpec, length: int) -> pa.Array:
    if text is None:
        return pa.nulls(length, column.arrow_type)
    single = pa.array([text]).cast(column.arrow_type)
    return single.take(pa.array(np.zeros(length, dtype=np.int32)))
