"""The pipe between the JVM catalog and its planning process: length-prefixed frames.

A request is one frame: a big-endian unsigned 32-bit length, then that many bytes of
UTF-8 JSON (an object with an ``op``), then as many binary blobs as its ``blobs`` says
(none when absent). A response is a frame of JSON (the header), then as many blobs as the
header's ``blobs`` says. A blob is a big-endian unsigned 64-bit length and its bytes
(Arrow IPC streams: a plan export, rows; a row-level change's deleted rows). Frames, not
lines: a blob may hold any byte, and each side reads exactly what it was told to expect.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import BinaryIO

import pyarrow as pa

__all__ = ["arrow_stream", "read_request", "write_response"]

_HEADER = struct.Struct(">I")
_BLOB = struct.Struct(">Q")


def read_request(stream: BinaryIO) -> tuple[dict, list[bytes]] | None:
    """The next request (without its ``blobs`` count) and its blobs, or ``None`` once the
    JVM closed the pipe."""
    body = _frame(stream, _HEADER)
    if body is None:
        return None
    request = json.loads(body.decode("utf-8"))
    if not isinstance(request, dict):
        raise TypeError("a planner request must be a JSON object")
    count = request.pop("blobs", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise TypeError("a planner request's blob count must be a natural number")
    blobs = []
    for _ in range(count):
        blob = _frame(stream, _BLOB)
        if blob is None:
            return None
        blobs.append(blob)
    return request, blobs


def _frame(stream: BinaryIO, prefix: struct.Struct) -> bytes | None:
    """One length-prefixed frame's bytes, or ``None`` if the pipe closed inside it."""
    head = stream.read(prefix.size)
    if len(head) < prefix.size:
        return None
    (length,) = prefix.unpack(head)
    body = stream.read(length)
    return body if len(body) == length else None


def write_response(stream: BinaryIO, header: dict, blobs: Sequence[bytes] = ()) -> None:
    """Write one response: the header (``blobs`` set to their count), then each blob."""
    body = json.dumps({**header, "blobs": len(blobs)}, separators=(",", ":")).encode("utf-8")
    parts = [_HEADER.pack(len(body)), body]
    for blob in blobs:
        parts.append(_BLOB.pack(len(blob)))
        parts.append(blob)
    stream.write(b"".join(parts))
    stream.flush()


def arrow_stream(table: pa.Table) -> bytes:
    """``table`` as an Arrow IPC stream, the form of every blob of rows."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
