"""Parquet statistics no reader can misread: no min/max for a float chunk that holds NaN.

pyarrow's writer leaves NaN out of a float column chunk's ``min``/``max`` (a chunk of
1.0, NaN, 3.0 gets 1.0 / 3.0; a chunk of only NaN gets NaN / NaN). Parquet's format gives
those bounds no NaN rule readers agree on, and the readers our users run read them as
bounds of every value: DuckDB orders NaN above every number, so its Parquet reader drops
the chunk for ``f > 3`` although its NaN rows match; DataFusion's reader drops it for
``f = 'nan'``. DuckDB's own writer writes no min/max at all for such a chunk, and so do we:
the footer pyarrow wrote is edited, before it reaches storage, to drop ``min``/``max``
(and their exactness flags) of exactly the float chunks the writer saw NaN in. Every other
chunk keeps its statistics, so pruning by them keeps working; null counts stay.

The edit works on the footer's Thrift tree (``_thrift``), field ids from parquet.thrift:
``FileMetaData.row_groups`` (4) -> ``RowGroup.columns`` (1) -> ``ColumnChunk.meta_data``
(3) -> ``ColumnMetaData.statistics`` (12) -> ``Statistics`` ``max`` (1), ``min`` (2),
``max_value`` (5), ``min_value`` (6), ``is_max_value_exact`` (7), ``is_min_value_exact``
(8). Offsets in the footer point before it, so a shorter footer moves nothing else.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ._thrift import Field, Sequence, ThriftError, decode_struct, encode_struct

__all__ = ["BOUND_FIELDS", "FooterSink", "without_bounds"]

_MAGIC = b"PAR1"
ROW_GROUPS, COLUMNS, META_DATA, STATISTICS = 4, 1, 3, 12
BOUND_FIELDS = frozenset({1, 2, 5, 6, 7, 8})  # max, min, max_value, min_value, exactness


def without_bounds(footer: bytes, chunks: Iterable[tuple[int, int]]) -> bytes:
    """``footer`` (the Thrift ``FileMetaData``) with no min/max for the column chunks
    ``(row group, leaf column)``; the other chunks' statistics untouched."""
    wanted = set(chunks)
    if not wanted:
        return footer
    metadata = decode_struct(footer)
    groups = _child(metadata, ROW_GROUPS)
    if not isinstance(groups, Sequence):
        raise ThriftError("the footer has no row groups")
    for group_index, column_index in wanted:
        group = groups.values[group_index]
        columns = _child(group, COLUMNS)
        meta = _child(columns.values[column_index], META_DATA)
        statistics = _child(meta, STATISTICS)
        if statistics is not None:
            statistics[:] = [f for f in statistics if f.id not in BOUND_FIELDS]
    return encode_struct(metadata)


def _child(fields: list[Field], field_id: int):
    for field in fields:
        if field.id == field_id:
            return field.value
    return None


class FooterSink:
    """The stream pyarrow's ``ParquetWriter`` writes a file into: everything goes to
    ``stream`` as it comes, but once :meth:`hold_footer` is called the rest (the footer
    ``close()`` writes) is held, so :meth:`release_footer` can edit it before it is
    written. A file-like object, as pyarrow wraps any Python stream."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self._held: bytearray | None = None
        self.closed = False

    def write(self, data) -> int:
        if self._held is not None:
            self._held += data
        else:
            self.stream.write(data)
        return len(data)

    def tell(self) -> int:
        return self.stream.tell() + (len(self._held) if self._held is not None else 0)

    def flush(self) -> None:
        if self._held is None:
            self.stream.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:  # the owner closes ``stream`` once the footer is out
        self.closed = True

    def hold_footer(self) -> None:
        self._held = bytearray()

    def release_footer(self, chunks: Iterable[tuple[int, int]]) -> None:
        """Write the held footer, without min/max for ``chunks`` (see ``without_bounds``)."""
        held, self._held = bytes(self._held or b""), None
        if len(held) < 8 or held[-4:] != _MAGIC:
            raise ThriftError("the writer's footer does not end with the Parquet magic")
        (size,) = struct.unpack("<i", held[-8:-4])
        before, footer = held[: -8 - size], held[-8 - size : -8]
        edited = without_bounds(footer, chunks)
        self.stream.write(before + edited + struct.pack("<i", len(edited)) + _MAGIC)
