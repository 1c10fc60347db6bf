"""Deletes applied by a broadcast join of bit masks: Spark's reader as it is, no jar.

A session without the package's jar (``_deleted_rows``) reads the files with deletes with
one more ``spark.read.parquet`` carrying each row's file id (``_metadata``) and
``_metadata.row_index`` (its physical position in the file, stable under row-group and
page pruning), left-joined to a small broadcast table holding, per file and block of
16,384 rows, a bit mask of its deleted rows (256 longs). A row is kept when its bit is
clear. The deleted positions are built on the driver from the very positions the exact
reader removes (``read/_deletes``), so this join and the jar drop the same rows.

Why masks: a plain anti-join on (file, position), per-file ``IN`` lists (slow to analyse),
``mapInArrow`` (it blocks filter pushdown) and per-file scans with literal mask arrays
were all slower (``docs/benchmarks.md``). One row per 16,384-row block keeps the
broadcast table small (a 250k-row file: at most 16 rows; a block without deletes has
none), so its hash table stays in cache and Spark's (adaptive) broadcast is cheap, where
64-row blocks were slower on full and selective scans alike. A single bigint key,
``(file id << 24) + block``, makes the join a long-keyed broadcast hash join. The file id
is ``(length ^ modification time in ms) & (2**39 - 1)``, from ``_metadata.file_size`` and
``file_modification_time``, per-file constants: keying on Spark's
``hash(_metadata.file_path)`` hashed a 100-byte string per row (``docs/benchmarks.md``).
Files whose ids coincide are scanned apart, each scan with its own mask table, so a key
never names two files.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from ...pathres import parse_location
from ...read import deleted_positions_of
from .._core import local_frame
from ._files import read_files, union_frames
from ._hadoop import hadoop_url

__all__ = ["MASK_COLUMNS", "MAX_MASKED_ROWS", "masked_by_join"]

# Helper columns of the masked scan; a table using one of these names stays on the source.
_KEY, _INDEX, _MASK = "__ducklake_key", "__ducklake_row", "__ducklake_mask"
MASK_COLUMNS = (_KEY, _INDEX, _MASK)
# Rows per mask-table row: 256 longs of bits each. Fewer, wider rows keep the broadcast hash
# table small (a 250k-row file: 16 rows) and were the fastest measured (docs/benchmarks.md).
_BLOCK_SHIFT = 14
_WORDS = 1 << (_BLOCK_SHIFT - 6)
# The join key is (file id << 24) + block: files below 2**38 rows, file ids of 39 bits.
_ID_SHIFT = 24
_ID_MASK = (1 << (63 - _ID_SHIFT)) - 1
_ID_SQL = f"(_metadata.file_size ^ unix_millis(_metadata.file_modification_time)) & {_ID_MASK}"
MAX_MASKED_ROWS = 1 << (_BLOCK_SHIFT + _ID_SHIFT)  # block numbers must fit the join key


def masked_by_join(spark, schema, tasks, plan, storage, read_options):
    """The masked files' rows that were not deleted, by the mask join.

    Returns ``(frame, tasks read)``: local files keyed by ``os.stat`` (``_masked_local``),
    object-store files by Spark's own listing of them (``_masked_listed``).
    """
    local = [t for t in tasks if parse_location(t.file.url).scheme == "file"]
    remote = [t for t in tasks if parse_location(t.file.url).scheme != "file"]
    parts = [
        _masked_local(spark, schema, local, plan, storage) if local else (None, []),
        _masked_listed(spark, schema, remote, plan, storage, read_options)
        if remote
        else (None, []),
    ]
    frame = union_frames([frame for frame, _ in parts if frame is not None])
    return frame, [task for part, read in parts if part is not None for task in read]


def _masked_listed(spark, schema, tasks, plan, storage, read_options):
    """Masked object-store files, keyed by the lengths and modification times of Spark's
    own listing of them (the very ``FileStatus`` its ``_metadata`` is taken from).

    One listing serves both: the ids are read from the file index of the scan that is
    then joined, so a store's precision of modification times (seconds on S3) or a file
    rewritten meanwhile cannot make them differ. A file whose listed length is not the
    catalog's is left to the exact path. When ids coincide, each group of distinct ids
    is listed and scanned again; if the new listing disagrees, every masked file of the
    store goes to the exact path.
    """
    listed = read_files(spark, schema, tasks, read_options, storage)
    ids = _listed_ids(spark, listed, tasks, storage)
    identified = [
        (task, file_id) for task, file_id in zip(tasks, ids, strict=True) if file_id is not None
    ]
    groups = _distinct_ids(identified)
    if len(groups) == 1 and len(identified) == len(tasks):
        return _masked_scan(spark, schema, groups[0], plan, storage, listed), tasks
    frames = []
    for group in groups:
        group_tasks = [task for task, _ in group]
        rows = read_files(spark, schema, group_tasks, read_options, storage)
        if _listed_ids(spark, rows, group_tasks, storage) != [f for _, f in group]:
            return None, []
        frames.append(_masked_scan(spark, schema, group, plan, storage, rows))
    frame = union_frames(frames)
    return (frame, [task for task, _ in identified]) if frame is not None else (None, [])


def _listed_ids(spark, frame, tasks, storage) -> list[int | None]:
    """Each task's file id from the file index of ``frame`` (a ``spark.read.parquet``
    of the tasks' files): None where the file is not listed or its length is not the
    catalog's."""
    index = frame._jdf.queryExecution().analyzed().relation().location()
    statuses = index.allFiles()
    listed = {}
    for position in range(statuses.length()):
        status = statuses.apply(position)
        listed[status.getPath().toString()] = (status.getLen(), status.getModificationTime())
    path = spark._jvm.org.apache.hadoop.fs.Path
    ids: list[int | None] = []
    for task in tasks:
        found = listed.get(path(hadoop_url(task.file.url, storage)).toString())
        if found is None or task.file.size not in (None, found[0]):
            ids.append(None)
        else:
            ids.append((found[0] ^ found[1]) & _ID_MASK)
    return ids


def _masked_local(spark, schema, tasks, plan, storage):
    """Masked local files. The join key names a file by its length and modification
    time (``_file_id``), both per-file constants of Spark's ``_metadata``, which Hadoop's
    local file system takes from the same ``stat`` as the driver does here. Files whose
    ids coincide go to separate scans, each with its own mask table, so a key never
    names two files. A file whose length is not the catalog's, or that changes while
    Spark lists it, is left to the exact path (whose checks name it).
    """
    identified = [(task, _file_id(task)) for task in tasks]
    identified = [(task, file_id) for task, file_id in identified if file_id is not None]
    frames = []
    for group in _distinct_ids(identified):
        frame = _masked_scan(spark, schema, group, plan, storage)
        if any(_file_id(task) != file_id for task, file_id in group):
            return None, []  # changed under the listing: Spark may have seen either state
        frames.append(frame)
    frame = union_frames(frames)
    return (frame, [task for task, _ in identified]) if frame is not None else (None, [])


def _file_id(task) -> int | None:
    """``(length ^ modification time in ms) & (2**39 - 1)`` of a local data file.

    As Spark computes it from ``_metadata`` (``_ID_SQL``); None when the file is gone
    or its length is not the catalog's.
    """
    try:
        found = os.stat(parse_location(task.file.url).path)
    except OSError:
        return None  # the exact path raises the typed error naming the file
    if task.file.size not in (None, found.st_size):
        return None
    return (found.st_size ^ (found.st_mtime_ns // 1_000_000)) & _ID_MASK


def _distinct_ids(identified: list) -> list[list]:
    """Split ``(task, file id)`` pairs into groups in each of which every id occurs once."""
    groups: list[list] = []
    seen: dict[int, int] = {}
    for task, file_id in identified:
        rank = seen.get(file_id, 0)
        seen[file_id] = rank + 1
        if rank == len(groups):
            groups.append([])
        groups[rank].append((task, file_id))
    return groups


def _masked_scan(spark, schema, identified: list, plan, storage, rows=None):
    """One scan of files of distinct ids (``rows``: already listed), left-joined to their
    masks by (file id, block)."""
    from pyspark.sql import functions as F

    tasks = [task for task, _ in identified]
    keys, masks = _masks(tasks, [file_id for _, file_id in identified], plan, storage)
    mask_frame = local_frame(spark, pa.table({_KEY: keys, _MASK: masks}), _mask_schema())
    index = F.col("_metadata.row_index")
    if rows is None:
        rows = read_files(spark, schema, tasks)
    rows = rows.select(
        "*",
        (F.shiftleft(F.expr(_ID_SQL), _ID_SHIFT) + F.shiftright(index, _BLOCK_SHIFT)).alias(_KEY),
        index.alias(_INDEX),
    )
    word = f"element_at({_MASK}, cast(shiftright({_INDEX}, 6) & {_WORDS - 1} AS INT) + 1)"
    bit_clear = F.expr(f"shiftright({word}, cast({_INDEX} & 63 AS INT)) & 1") == 0
    kept = rows.join(F.broadcast(mask_frame), on=_KEY, how="left").where(
        F.col(_MASK).isNull() | bit_clear
    )
    return kept.select(*[F.col(f"`{f.name}`") for f in schema.fields])


def _mask_schema():
    """The Spark schema of the mask table: join key, then the block's 256 longs of bits."""
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    return StructType(
        [
            StructField(_KEY, LongType(), nullable=True),
            StructField(_MASK, ArrayType(LongType(), containsNull=True), nullable=True),
        ]
    )


def _masks(tasks, file_ids: list[int], plan, storage) -> tuple[np.ndarray, pa.ListArray]:
    """Per (file, block of 2**14 rows holding a deleted row): join key and bit masks.

    The masks are 256 longs: bit ``p & 63`` of long ``(p >> 6) % 256`` is set for each
    deleted position ``p`` of the block. The key is ``(file id << 24) + block``:
    unique as long as the ids are (equal ids are scanned apart, ``_distinct_ids``) and
    blocks stay below 2**24 (``MAX_MASKED_ROWS``: files below 2**38 rows).
    """
    keys, masks = [np.empty(0, np.int64)], [np.empty(0, np.uint64)]
    for task, file_id in zip(tasks, file_ids, strict=True):
        positions = deleted_positions_of(task, plan.table, plan.snapshot_id, storage)
        if len(positions) == 0:
            continue
        blocks = np.unique(positions >> _BLOCK_SHIFT)
        dense = np.zeros((len(blocks), _WORDS), dtype=np.uint64)
        row = np.searchsorted(blocks, positions >> _BLOCK_SHIFT)
        word = (positions >> 6) & (_WORDS - 1)
        np.bitwise_or.at(
            dense, (row, word), np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64))
        )
        masks.append(dense.ravel())
        keys.append((np.int64(file_id) << np.int64(_ID_SHIFT)) + blocks)
    key = np.concatenate(keys)
    offsets = np.arange(len(key) + 1, dtype=np.int32) * _WORDS
    values = pa.array(np.concatenate(masks).view(np.int64))
    return key, pa.ListArray.from_arrays(pa.array(offsets), values)
