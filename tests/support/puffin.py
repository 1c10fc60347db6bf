"""Writing deletion vectors and Puffin files as DuckLake 1.1 writes them (tests only).

No 1.1 writer installs here, so the tests build 1.1's Puffin delete files themselves from
the deletes of a 1.0 lake, following the formats' specifications (Iceberg's
``deletion-vector-v1`` blob, the portable Roaring format, Puffin), with the property
DuckLake adds to each blob (``ducklake-snapshot-id``). The reader's decoder is ours too,
so the real 1.1 lake in ``../shared/lakes`` (written by the reference) checks both.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["deletion_vector", "puffin_file"]

_DV_MAGIC = b"\xd1\xd3\x39\x64"
_PUFFIN = b"PFA1"


def _roaring32(values: np.ndarray) -> bytes:
    """Portable 32-bit Roaring bitmap, no run containers (cookie 12346)."""
    values = np.unique(values.astype(np.uint32))
    keys = np.unique(values >> 16)
    containers = []
    for key in keys:
        low = (values[(values >> 16) == key] & 0xFFFF).astype(np.uint16)
        if len(low) > 4096:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            body = np.packbits(bits, bitorder="little").tobytes()
        else:
            body = low.astype("<u2").tobytes()
        containers.append((int(key), len(low), body))
    out = bytearray(struct.pack("<II", 12346, len(containers)))
    for key, count, _ in containers:
        out += struct.pack("<HH", key, count - 1)
    offset = len(out) + 4 * len(containers)
    for _, _, body in containers:
        out += struct.pack("<I", offset)
        offset += len(body)
    for _, _, body in containers:
        out += body
    return bytes(out)


def deletion_vector(positions: Iterable[int]) -> bytes:
    """An Iceberg ``deletion-vector-v1`` blob of the deleted row positions."""
    values = np.unique(np.asarray(list(positions), dtype=np.int64))
    highs = np.unique(values >> 32)
    vector = bytearray(struct.pack("<q", len(highs)))
    for high in highs:
        vector += struct.pack("<I", int(high))
        vector += _roaring32(values[(values >> 32) == high] & 0xFFFFFFFF)
    body = _DV_MAGIC + bytes(vector)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def puffin_file(
    vectors: Sequence[tuple[int | None, Iterable[int]]], data_file: str
) -> tuple[bytes, int]:
    """A Puffin file of one deletion vector per ``(snapshot id, positions)`` (cumulative,
    as DuckLake writes them), and its footer size as the catalog records it."""
    blobs = bytearray(_PUFFIN)
    entries = []
    for snapshot, positions in vectors:
        blob = deletion_vector(positions)
        properties = {
            "referenced-data-file": data_file,
            "cardinality": str(len(set(positions))),
        }
        if snapshot is not None:
            properties["ducklake-snapshot-id"] = str(snapshot)
        entries.append(
            {
                "type": "deletion-vector-v1",
                "fields": [],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": len(blobs),
                "length": len(blob),
                "properties": properties,
            }
        )
        blobs += blob
    payload = json.dumps(
        {"blobs": entries, "properties": {"created-by": "ducklake"}}, separators=(",", ":")
    ).encode()
    footer = _PUFFIN + payload + struct.pack("<II", len(payload), 0) + _PUFFIN
    return bytes(blobs) + footer, len(footer)
