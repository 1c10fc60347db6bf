"""Deleted row positions of one data file at one snapshot, and the mask they make.

All delete handling lives here: the live delete file (Parquet ``file_path``/``pos``,
optionally with per-position ``_ducklake_internal_snapshot_id``; or an Iceberg
deletion-vector blob, alone or several in a Puffin file), unioned with the inlined
deletes from the catalog.

A Puffin file (DuckLake 1.1) holds one cumulative deletion vector per snapshot, each
tagged with its snapshot id; a reader at snapshot S uses the newest one at or before S.
Decoded once, it becomes positions with the snapshot each position was first deleted at,
the form Parquet delete files with per-position snapshots already have, so every reader
(and the change feed) filters both the same way; that the vectors really are cumulative
is checked, since a vector that dropped a position could not be read that way. Positions are
physical (0-based) positions in the data file. A delete file is decoded once per process
and kept in a bounded cache (files are never rewritten in place).
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..common import LRUCache
from ..errors import DataFileMissingError, DeleteFileError, UnsupportedFeatureError
from ..pathres import translate_storage_error
from ..scan import DeleteFile, DeleteSource
from ._encrypted import read_encrypted_bytes

__all__ = ["delete_file_positions", "deleted_positions", "keep_mask"]

SNAPSHOT_COLUMN = "_ducklake_internal_snapshot_id"
_DV_MAGIC = b"\xd1\xd3\x39\x64"
_PUFFIN_MAGIC = b"PFA1"
_DV_BLOB = "deletion-vector-v1"
_SNAPSHOT_PROPERTY = "ducklake-snapshot-id"


DELETE_CACHE_BYTES = 64 << 20


def _nbytes(decoded: tuple[np.ndarray, np.ndarray | None]) -> int:
    return sum(a.nbytes for a in decoded if a is not None)


# Delete files already decoded in this process, least recently used first out. DuckLake
# never rewrites a file in place (every file has a fresh UUID name), so a delete file is
# decoded once per (URL, size, format) and reused by later queries and snapshots: on
# object storage that saves a GET per delete file per query. Bounded by
# ``DELETE_CACHE_BYTES`` of decoded arrays; errors are never cached.
decoded_deletes: LRUCache[tuple, tuple[np.ndarray, np.ndarray | None]] = LRUCache(
    max_weight=DELETE_CACHE_BYTES, weigh=_nbytes
)


def deleted_positions(
    source: DeleteSource | None,
    snapshot: int,
    open_file,
    what: str,
    record_count: int | None = None,
) -> np.ndarray:
    """Sorted unique deleted positions (int64) visible at ``snapshot``.

    Every delete file is checked against the catalog before it is trusted: it must hold
    the ``delete_count`` positions the catalog records, and each position must lie inside
    the data file. A delete file that was replaced, emptied or belongs to another file
    would otherwise bring deleted rows back, or drop live ones, without a trace.

    Args:
        source: the delete files and inlined positions of the data file.
        snapshot: the snapshot being read.
        open_file: callable ``FileRef -> pyarrow NativeFile`` (storage access).
        what: description of the data file for error messages.
        record_count: physical rows of the data file (positions must be below it).
    """
    if source is None:
        return np.empty(0, dtype=np.int64)
    parts = [np.asarray(source.inlined_positions, dtype=np.int64)]
    for delete_file in source.files:
        positions, snapshots = _decoded(delete_file, open_file, what, record_count)
        parts.append(positions if snapshots is None else positions[snapshots <= snapshot])
    return _sorted_unique(parts)


def delete_file_positions(
    delete_file: DeleteFile, open_file, what: str, record_count: int | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """One delete file's positions and each one's snapshot (``None``: the file has no
    per-position snapshots; all are its ``begin_snapshot``'s), checked as every read checks
    them: what a delete that replaces it with a cumulative file starts from."""
    return _decoded(delete_file, open_file, what, record_count)


def _decoded(delete_file: DeleteFile, open_file, what: str, record_count: int | None):
    """``(positions, per-position snapshots or None)``, decoded once per process, checked."""
    ref = delete_file.file
    key = (ref.url, ref.size, delete_file.file_format)

    def decode_and_check() -> tuple[np.ndarray, np.ndarray | None]:
        # checked once: a delete file belongs to one data file for good
        decoded = _decode(delete_file, open_file, what)
        _check(delete_file, decoded[0], what, record_count)
        for array in decoded:
            if array is not None:
                array.setflags(write=False)  # shared by every later reader
        return decoded

    return decoded_deletes.get_or_compute(key, decode_and_check)


def _check(delete_file: DeleteFile, positions: np.ndarray, what: str, record_count) -> None:
    expected = delete_file.delete_count
    if expected is not None and len(positions) != expected:
        raise DeleteFileError(
            f"delete file {delete_file.file.url} of {what} holds {len(positions)} positions "
            f"but the catalog records {expected}; the file was replaced or truncated, so the "
            "rows it deletes are unknown. Restore the file from a backup"
        )
    if len(positions) and (
        positions.min() < 0 or (record_count is not None and positions.max() >= record_count)
    ):
        raise DeleteFileError(
            f"delete file {delete_file.file.url} of {what} deletes position "
            f"{int(positions.max() if positions.min() >= 0 else positions.min())}, outside "
            f"the data file's {record_count} rows; it belongs to another data file or was "
            "replaced. Restore the file from a backup"
        )


def _decode(delete_file: DeleteFile, open_file, what: str):
    """``(positions, per-position snapshot ids or None)`` of one delete file."""
    ref = delete_file.file
    try:
        handle = open_file(ref)
        if delete_file.file_format == "puffin":
            return _puffin_positions(handle.read())
        if delete_file.encryption_key is not None:
            return _encrypted_positions(handle.read(), delete_file, what)
        return _parquet_positions(handle)
    except (UnsupportedFeatureError, DeleteFileError) as exc:
        if ref.url in str(exc):
            raise
        raise type(exc)(f"delete file {ref.url} of {what}: {exc}") from None
    except OSError as exc:
        if not isinstance(exc, pa.ArrowInvalid):
            error = translate_storage_error(exc, what=f"delete file {ref.url} of {what}")
            if isinstance(error, DataFileMissingError):
                error = DeleteFileError(str(error))  # the README's promise: a delete file error
            raise error from exc
        raise _unreadable(delete_file, what, exc) from exc
    except Exception as exc:
        raise _unreadable(delete_file, what, exc) from exc


def _sorted_unique(parts: list[np.ndarray]) -> np.ndarray:
    """Union of position arrays; cheap when there is one already-sorted source (the
    common case: a delete file's ``pos`` column is strictly increasing)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.empty(0, dtype=np.int64)
    merged = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(parts) > 1 or not bool(np.all(merged[1:] > merged[:-1])):
        merged = np.sort(merged)
        merged = merged[np.concatenate(([True], merged[1:] != merged[:-1]))]
    return merged


def _unreadable(delete_file: DeleteFile, what: str, exc: Exception) -> DeleteFileError:
    return DeleteFileError(
        f"delete file {delete_file.file.url} of {what} cannot be read ({exc}); the rows it "
        "removes are unknown, so the scan stops instead of returning deleted rows. "
        "Restore the file or re-run the DELETE in DuckDB"
    )


def _parquet_positions(handle) -> tuple[np.ndarray, np.ndarray | None]:
    parquet = pq.ParquetFile(handle)
    names = parquet.schema_arrow.names
    columns = ["pos"] + ([SNAPSHOT_COLUMN] if SNAPSHOT_COLUMN in names else [])
    table = parquet.read(columns=columns)
    positions = table.column("pos").to_numpy(zero_copy_only=False).astype(np.int64)
    if SNAPSHOT_COLUMN not in names:
        return positions, None
    return positions, table.column(SNAPSHOT_COLUMN).to_numpy(zero_copy_only=False)


def _encrypted_positions(data: bytes, delete_file: DeleteFile, what: str):
    """Positions (and per-position snapshots) of an encrypted lake's delete file."""
    table = read_encrypted_bytes(
        data, delete_file.encryption_key, f"delete file {delete_file.file.url} of {what}"
    )
    positions = table.column("pos").to_numpy(zero_copy_only=False).astype(np.int64)
    if SNAPSHOT_COLUMN not in table.column_names:
        return positions, None
    return positions, table.column(SNAPSHOT_COLUMN).to_numpy(zero_copy_only=False)


def _puffin_positions(data: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """Positions (with the snapshot each was first deleted at, when the file holds vectors
    of several snapshots) of a deletion-vector file: a bare blob, or a Puffin file."""
    if not data.startswith(_PUFFIN_MAGIC):
        return _deletion_vector(data), None
    blobs = _puffin_blobs(data)
    if not blobs:
        return np.empty(0, dtype=np.int64), None
    snapshots = [snapshot for snapshot, _ in blobs]
    if all(s is None for s in snapshots):  # untagged: one vector in parts
        return _sorted_unique([_deletion_vector(blob) for _, blob in blobs]), None
    if any(s is None for s in snapshots):
        raise DeleteFileError(
            f"Puffin file tags some deletion vectors with {_SNAPSHOT_PROPERTY!r} and not others"
        )
    positions = np.empty(0, dtype=np.int64)
    first_deleted = np.empty(0, dtype=np.int64)
    for snapshot, blob in sorted(blobs, key=lambda b: b[0]):
        vector = np.unique(_deletion_vector(blob))
        if not np.all(np.isin(positions, vector, assume_unique=True)):
            raise DeleteFileError(
                f"the deletion vector of snapshot {snapshot} in a Puffin file lacks positions "
                "an earlier snapshot's vector deletes (vectors are cumulative)"
            )
        new = np.setdiff1d(vector, positions, assume_unique=True)
        positions = np.concatenate([positions, new])
        first_deleted = np.concatenate([first_deleted, np.full(len(new), snapshot, np.int64)])
    order = np.argsort(positions, kind="stable")
    return positions[order], first_deleted[order]


def _puffin_blobs(data: bytes) -> list[tuple[int | None, bytes]]:
    """``(snapshot id or None, blob)`` of every deletion vector in a Puffin file:
    ``PFA1 blob... PFA1 footer-json u32-le(footer length) u32-le(flags) PFA1``."""
    if len(data) < 20 or not data.endswith(_PUFFIN_MAGIC):
        raise DeleteFileError("not a Puffin file (no PFA1 magic at its end)")
    size, flags = struct.unpack_from("<II", data, len(data) - 12)
    if flags:
        raise UnsupportedFeatureError(
            f"Puffin file with footer flags {flags:#x} (a compressed footer), which this "
            "reader does not decode"
        )
    start = len(data) - 12 - size
    if start < 8 or data[start - 4 : start] != _PUFFIN_MAGIC:
        raise DeleteFileError("Puffin footer length does not match the file")
    try:
        footer = json.loads(data[start : start + size].decode("utf-8"))
        entries = footer["blobs"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DeleteFileError(f"Puffin footer is not valid ({exc})") from None
    blobs = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != _DV_BLOB:
            continue  # other blob types (statistics) delete nothing
        offset, length = entry.get("offset"), entry.get("length")
        if (
            not isinstance(offset, int)
            or not isinstance(length, int)
            or offset < 4
            or length < 0
            or offset + length > start - 4
        ):
            raise DeleteFileError(f"Puffin blob at offset {offset!r} lies outside the file")
        if entry.get("compression-codec") not in (None, "none"):
            raise UnsupportedFeatureError(
                f"Puffin blob compressed with {entry['compression-codec']!r}, which this "
                "reader does not decode"
            )
        properties = entry.get("properties") or {}
        snapshot = properties.get(_SNAPSHOT_PROPERTY)
        try:
            snapshot = None if snapshot is None else int(snapshot)
        except (TypeError, ValueError):
            raise DeleteFileError(
                f"Puffin blob has a {_SNAPSHOT_PROPERTY!r} that is no snapshot id: {snapshot!r}"
            ) from None
        blobs.append((snapshot, data[offset : offset + length]))
    return blobs


def _deletion_vector(blob: bytes) -> np.ndarray:
    """Decode DuckLake's deletion-vector file: an Iceberg DV blob (portable Roaring64)."""
    if len(blob) < 12 or blob[4:8] != _DV_MAGIC:
        raise DeleteFileError("not an Iceberg deletion-vector blob (bad magic)")
    length = struct.unpack(">I", blob[:4])[0]
    body = blob[4 : 4 + length]
    crc = struct.unpack(">I", blob[4 + length : 8 + length])[0]
    if zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise DeleteFileError("deletion-vector checksum mismatch")
    data = body[4:]
    (count,) = struct.unpack_from("<q", data, 0)
    offset, parts = 8, []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, offset)
        low, offset = _roaring32(data, offset + 4)
        parts.append((np.int64(high) << 32) | low.astype(np.int64))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _roaring32(data: bytes, offset: int) -> tuple[np.ndarray, int]:
    """Decode one portable 32-bit Roaring bitmap; returns (values, next offset)."""
    (cookie,) = struct.unpack_from("<I", data, offset)
    has_runs = (cookie & 0xFFFF) == 12347
    if has_runs:
        size = (cookie >> 16) + 1
        offset += 4
        run_bitmap = np.frombuffer(data, np.uint8, (size + 7) // 8, offset)
        offset += (size + 7) // 8
    elif cookie == 12346:
        (size,) = struct.unpack_from("<I", data, offset + 4)
        offset += 8
        run_bitmap = None
    else:
        raise DeleteFileError("unknown Roaring bitmap cookie in deletion vector")
    header = np.frombuffer(data, "<u2", 2 * size, offset).reshape(size, 2)
    offset += 4 * size
    if not has_runs or size >= 4:
        offset += 4 * size  # offset table, not needed when reading sequentially
    values = []
    for i in range(size):
        key, cardinality = int(header[i, 0]), int(header[i, 1]) + 1
        is_run = run_bitmap is not None and (run_bitmap[i // 8] >> (i % 8)) & 1
        if is_run:
            (runs,) = struct.unpack_from("<H", data, offset)
            pairs = np.frombuffer(data, "<u2", 2 * runs, offset + 2).reshape(runs, 2)
            offset += 2 + 4 * runs
            low = np.concatenate([np.arange(s, s + n + 1) for s, n in pairs.astype(np.int64)])
        elif cardinality > 4096:
            bits = np.frombuffer(data, np.uint8, 8192, offset)
            offset += 8192
            low = np.flatnonzero(np.unpackbits(bits, bitorder="little"))
        else:
            low = np.frombuffer(data, "<u2", cardinality, offset).astype(np.int64)
            offset += 2 * cardinality
        values.append((key << 16) | low.astype(np.int64))
    result = np.concatenate(values) if values else np.empty(0, dtype=np.int64)
    return result.astype(np.uint32), offset


def keep_mask(deleted: np.ndarray, start: int, length: int) -> np.ndarray | None:
    """Boolean mask for physical rows ``[start, start + length)``; None when nothing is deleted."""
    lo, hi = np.searchsorted(deleted, [start, start + length])
    if lo == hi:
        return None
    mask = np.ones(length, dtype=bool)
    mask[deleted[lo:hi] - start] = False
    return mask
