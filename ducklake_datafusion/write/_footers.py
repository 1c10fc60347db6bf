"""A data file another engine wrote, described for the commit from its Parquet footer.

Spark's executors write a table's files with Spark's own Parquet writer and keep each
file's footer (its Thrift ``FileMetaData``: a few kilobytes). The commit needs the same
facts of such a file as of one written here (``_files``): rows, row groups, sizes, and per
leaf column the value and null counts and the bounds in the catalog's text encoding. They
are all in the footer, so nothing is read again from storage:

* counts and sizes are the column chunks' own, as for this package's files;
* bounds are the row groups' statistics, taken over the file and encoded by ``_stats``
  (text longer than 256 bytes cut as DuckDB cuts it). The writer keeps statistics whole
  up to a length above that cut (``parquet.statistics.truncate.length``), so the cut is
  taken from the value's own first bytes, as DuckDB's writer takes it;
* floats: Parquet's Java writer orders NaN above every number, so a column holding NaN has
  NaN as its maximum. Its bounds are then unknown (no bounds: never a bound that excludes
  a number of the file) and ``contains_nan`` is true; without NaN it is false.

Every leaf's field id must be the table's column id in the table's order: a file that does
not map onto the table is refused (a :class:`DataFileError` naming it), never committed.
"""

from __future__ import annotations

import decimal
import math
import struct
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..catalog import FileColumnStats, NewDataFile
from ..errors import DataFileError
from ._files import ROW_ID_FIELD
from ._stats import ColumnBounds
from ._types import FIELD_ID_KEY, file_schema, leaf_columns

__all__ = ["data_file_from_footer"]

_MAGIC = b"PAR1"


def data_file_from_footer(
    path: str,
    file_size: int,
    footer: bytes,
    columns: Sequence,
    partition_values: tuple[str | None, ...] = (),
    *,
    description: str,
    row_ids: bool = False,
) -> NewDataFile:
    """The commit's facts of the file at ``path`` (relative to the table's directory),
    ``file_size`` bytes long, whose footer is ``footer`` (without length and magic).
    ``row_ids``: its last column is the rows' ids (``_ducklake_internal_row_id``, an
    update's new rows), which has no statistics in the catalog."""
    try:
        buffer = _MAGIC + footer + struct.pack("<i", len(footer)) + _MAGIC
        meta = pq.read_metadata(pa.BufferReader(buffer))
        file_leaves = _leaf_fields(meta.schema.to_arrow_schema())
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise DataFileError(
            f"{description}: the footer of written file {path!r} cannot be read ({exc}); "
            "nothing was committed"
        ) from exc
    leaves = leaf_columns(columns)
    table_leaves = _leaf_fields(file_schema(columns))
    wanted = [spec.column_id for _, spec in leaves]
    if row_ids:
        wanted.append(int(ROW_ID_FIELD.metadata[b"PARQUET:field_id"]))
    found = [field_id for field_id, _ in file_leaves]
    if wanted != found:
        raise DataFileError(
            f"{description}: written file {path!r} has leaf field ids {found}, the table's "
            f"columns are {wanted}; it was not committed"
        )
    stats = []
    for index, ((_path, spec), (_, arrow_type), (_, written)) in enumerate(
        zip(leaves, table_leaves, file_leaves)
    ):
        stats.append(_column_stats(meta, index, spec, (written, arrow_type), path, description))
    return NewDataFile(
        path=path,
        record_count=meta.num_rows,
        file_size_bytes=file_size,
        footer_size=len(footer),
        row_group_count=meta.num_row_groups,
        columns=tuple(stats),
        partition_values=partition_values,
    )


def _leaf_fields(schema: pa.Schema) -> list[tuple[int | None, pa.DataType]]:
    """``(field id, type)`` of every leaf, in Parquet's column order."""
    leaves: list[tuple[int | None, pa.DataType]] = []

    def visit(field: pa.Field) -> None:
        kind = field.type
        if pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                visit(kind.field(i))
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            visit(kind.value_field)
        elif pa.types.is_map(kind):
            visit(kind.key_field)
            visit(kind.item_field)
        else:
            raw = (field.metadata or {}).get(FIELD_ID_KEY)
            leaves.append((int(raw) if raw is not None else None, kind))

    for field in schema:
        visit(field)
    return leaves


def _column_stats(meta, index: int, spec, types, path: str, description: str):
    written, arrow_type = types
    bounds = ColumnBounds(spec)
    values = nulls = size = 0
    bounds_known = True
    nan = False
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        if stats is None or not stats.has_null_count:
            raise DataFileError(
                f"{description}: written file {path!r} has no null count for column "
                f"{spec.name!r} in its footer; it was not committed"
            )
        values += chunk.num_values - stats.null_count
        nulls += stats.null_count
        size += chunk.total_compressed_size
        if chunk.num_values == stats.null_count:
            continue  # no values in this row group: nothing to bound
        if not stats.has_min_max:
            bounds_known = False
            continue
        low, high = stats.min_raw, stats.max_raw
        if isinstance(high, float) and (math.isnan(high) or math.isnan(low)):
            nan = True
            continue
        try:
            pair = pa.array([_value(v, written, arrow_type) for v in (low, high)], arrow_type)
        except (ValueError, UnicodeDecodeError, pa.ArrowException):
            bounds_known = False  # a bound this package cannot read back: leave it out
            continue
        bounds.add((pair, False))
    if nan or not bounds_known:
        low_text = high_text = None
        low_exact = high_exact = True
    else:
        low_text, high_text, low_exact, high_exact = bounds.encoded()
    is_float = spec.type_name in ("float32", "float64")
    contains_nan = (nan if (bounds_known or nan) else None) if is_float else None
    return FileColumnStats(
        column_id=spec.column_id,
        column_size_bytes=size,
        value_count=values,
        null_count=nulls,
        min_value=low_text,
        max_value=high_text,
        contains_nan=contains_nan,
        min_exact=low_exact,
        max_exact=high_exact,
    )


def _value(raw, written: pa.DataType, arrow_type: pa.DataType):
    """A footer statistic (its physical value, of the file's type ``written``) as a value
    of the column's Arrow type."""
    if pa.types.is_decimal(arrow_type):
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
        return decimal.Decimal(unscaled).scaleb(-arrow_type.scale)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if pa.types.is_date32(arrow_type):
        return pa.scalar(raw, pa.int32()).cast(arrow_type)
    if pa.types.is_timestamp(arrow_type):
        # in the file's own unit; a cast to the table's never drops a fraction silently
        return pa.scalar(raw, pa.int64()).cast(written).cast(arrow_type)
    return raw
