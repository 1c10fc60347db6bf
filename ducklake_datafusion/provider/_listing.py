"""A DataFusion Parquet scan over an exact list of files, built through a plan's protobuf.

datafusion-python 55 reads Parquet from one path (a file, a directory or a glob); a
DuckLake table's live files are a list that no directory or glob spells. DataFusion's own
``ListingTable`` takes any list of URLs, and its serialised logical plan
(``LogicalPlan.to_bytes``, datafusion-proto's ``ListingTableScanNode``) lists them in one
repeated field. So the scan is planned for the first file with ``read_parquet`` and the
protobuf's path field is repeated for the others; everything else in the scan (schema,
Parquet options, file extension) stays DataFusion's own encoding. The resulting
DataFrame is a ``DataSourceExec`` over all files: projection, filter pushdown, row-group
and page pruning and parallel decode are DataFusion's.

Only two protobuf facts are relied on, and ``tests/test_native.py`` fails loudly if a
datafusion release changes them: the plan is one ``LogicalPlanNode`` whose field 1 is the
``ListingTableScanNode``, and that node's field 2 holds the paths.

The wire format needs no library: varints and length-delimited fields, which this module
reads and writes for exactly these two messages (other fields pass through as bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from datafusion import DataFrame, SessionContext
from datafusion.plan import LogicalPlan

__all__ = ["ListingUnsupported", "listing_frame"]

_LISTING_SCAN = 1  # LogicalPlanNode.listing_scan
_PATHS = 2  # ListingTableScanNode.paths
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


class ListingUnsupported(RuntimeError):
    """The plan DataFusion built is not the shape this module edits (a datafusion change)."""


def listing_frame(ctx: SessionContext, urls: Sequence[str], schema: pa.Schema) -> DataFrame:
    """One Parquet scan over ``urls`` (``file://`` or object-store URLs) with ``schema``.

    The table schema is given, so nothing is inferred and no file is opened here; files
    are opened when the scan runs, in the session that runs it. ``file_extension`` is
    empty because DuckLake file names need not end in ``.parquet``.
    """
    template = ctx.read_parquet(urls[0], schema=schema, file_extension="")
    plan = _fields(template.logical_plan().to_bytes())
    if len(plan) != 1 or plan[0][:2] != (_LISTING_SCAN, _BYTES):
        raise ListingUnsupported("read_parquet did not plan a listing table scan")
    scan = _fields(plan[0][2])
    paths = [i for i, (number, wire, _) in enumerate(scan) if number == _PATHS]
    if len(paths) != 1 or scan[paths[0]][1] != _BYTES:
        raise ListingUnsupported("the listing table scan does not hold exactly one path")
    spelled = scan[paths[0]][2].decode()
    if spelled != urls[0]:
        raise ListingUnsupported(f"the listing spelled {urls[0]!r} as {spelled!r}")
    at = paths[0]
    scan[at : at + 1] = [(_PATHS, _BYTES, url.encode()) for url in urls]
    data = _encode([(_LISTING_SCAN, _BYTES, _encode(scan))])
    return ctx.create_dataframe_from_logical_plan(LogicalPlan.from_bytes(ctx, data))


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int, object]]:
    """The message's fields in order as ``(number, wire type, value)``."""
    fields, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, at = _varint(data, at)
        elif wire == _BYTES:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            value, at = data[at : at + size], at + size
        else:
            raise ListingUnsupported(f"protobuf wire type {wire} in a DataFusion plan")
        fields.append((number, wire, value))
    return fields


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _encode(fields: list[tuple[int, int, object]]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        _put_varint(out, number << 3 | wire)
        if wire == _VARINT:
            _put_varint(out, value)
        elif wire == _BYTES:
            _put_varint(out, len(value))
            out += value
        else:
            out += value
    return bytes(out)
