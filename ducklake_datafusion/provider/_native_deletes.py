"""Positional deletes on DataFusion's own Parquet reader: a keep-mask filter per scan.

Used with ``DuckLakeCatalog(native_deletes=True)``. A listing scan of files with deletes
is filtered by one vectorised Python UDF, ``ducklake_keep(input_file_name(),
file_row_index())``: ``file_row_index()`` is a row's physical position in its file
(stable under row-group, page and byte-range pruning; ``tests/test_native.py`` guards
it). A batch nearly always holds rows of one file, so the UDF checks that every row names
the same file (~26 µs per 8,192 rows) and answers with one ``take`` from that file's
bit-packed keep mask; a batch that a round-robin repartition merged from several files
is answered file by file. The masks hold exactly the positions the exact reader removes
(``read._deletes.deleted_positions``: every live delete file, per-position snapshots,
inlined deletes, deletion vectors).

Measured with ``bench/scan.py`` on table ``t`` (20 of 40 files with 10% deleted): full
aggregate 0.144-0.152 s vs 0.159-0.19 s on the streaming reader, group-by 0.120-0.123
vs 0.140-0.146 s, but a 0.5% range 9.6-9.8 vs 7.2-7.4 ms and a point lookup 11 vs 7 ms:
every surviving row's file name is materialised for the filter, while the streaming
reader prunes by catalog statistics and decodes late. Hence opt-in. One listing per file
with a position-only UDF was as fast on full scans but slower still on selective ones
(twenty more scans to plan); anti-joins, bitmask joins, ``IN`` lists and ``array_has``
were slower than both (``docs/benchmarks.md``).

Local files only: ``input_file_name()`` names a local file by its path, while on an
object store it names the key without its bucket, which two buckets could share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import DataFrame, udf
from datafusion import functions as F

from ..errors import DuckLakeError
from ..pathres import parse_location
from ..read._reader import deleted_positions_of
from ..scan import DataFileTask, ScanPlan

__all__ = ["UDF_NAME", "DeleteMasks", "delete_masks", "without_deleted"]

UDF_NAME = "ducklake_keep"


# Keep masks (``True``: the row is live) by the name ``input_file_name()`` gives a file.
DeleteMasks = dict[str, pa.BooleanArray]


def scan_name(task: DataFileTask) -> str:
    """What ``input_file_name()`` says for a local data file: its path, no leading '/'."""
    return parse_location(task.file.url).path.lstrip("/")


def delete_masks(plan: ScanPlan, tasks: Sequence[DataFileTask]) -> DeleteMasks:
    """The keep mask of each task at the plan's snapshot (raises the exact reader's typed
    error for a missing or damaged delete file)."""
    masks: DeleteMasks = {}
    for task in tasks:
        deleted = deleted_positions_of(task, plan.table, plan.snapshot_id, plan.storage)
        keep = np.ones(task.record_count, dtype=bool)
        keep[deleted] = False
        masks[scan_name(task)] = pa.array(keep)
    return masks


def without_deleted(scan: DataFrame, masks: DeleteMasks) -> DataFrame:
    """``scan`` (a listing over files in ``masks``) without the deleted rows."""

    def keep(names: pa.Array, positions: pa.Array) -> pa.Array:
        if len(names) == 0:
            return pa.array([], pa.bool_())
        first = names[0].as_py()
        if pc.all(pc.equal(names, first)).as_py():  # ~26 µs per 8,192 rows
            # Usually true: DataFusion's Parquet reader yields batches of one file. But a
            # round-robin repartition below this filter may merge batches of several
            # files (tests/test_native.py shows it), so every row's name is compared.
            return _mask(masks, first).take(positions)
        out = np.empty(len(names), dtype=bool)  # rows of several files: row by row
        spelled = names.to_numpy(zero_copy_only=False)
        where = positions.to_numpy(zero_copy_only=False)
        for name in set(spelled):
            rows = spelled == name
            out[rows] = (
                _mask(masks, name).take(pa.array(where[rows])).to_numpy(zero_copy_only=False)
            )
        return pa.array(out)

    keep_udf = udf(keep, [pa.string(), pa.int64()], pa.bool_(), "immutable", name=UDF_NAME)
    return scan.filter(keep_udf(F.input_file_name(), F.file_row_index()))


def _mask(masks: DeleteMasks, name: str) -> pa.BooleanArray:
    try:
        return masks[name]
    except KeyError:  # a file this filter was not built for: refuse, never guess
        raise DuckLakeError(
            f"the native delete filter got rows of {name!r}, a file it holds no mask for; "
            "read the table with DuckLakeCatalog(..., native=False) and report this"
        ) from None
