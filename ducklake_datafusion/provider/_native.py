"""Native DataFusion scans: a table's files on DataFusion's own Parquet reader.

``DuckLakeSchema.table()`` returns ``datafusion.catalog.Table(frame)`` for a DataFrame
that unions up to three parts, planned once for the table's pinned snapshot:

* *clean* files (written at the table's current column layout, no deletes, no name
  mapping, no encryption, local, with columns whose Parquet form DataFusion decodes to
  exactly the table's Arrow type): one ``ListingTable`` scan over the file list
  (``_listing``). Projection, filter pushdown, row-group and page pruning, parallel
  decode and the aggregation all stay in DataFusion; no batch crosses into Python.
* *masked* files, the same but carrying positional deletes: a second listing scan
  filtered by ``ducklake_live_rows(input_file_name(), file_row_index())``, a vectorised
  Python UDF that looks each batch's positions up in the file's sorted deleted
  positions. The positions are the exact reader's own (``read/_deletes``: every live
  delete file, per-position snapshots, inlined deletes, deletion vectors), read when
  the table is resolved, so a missing or damaged delete file raises our typed error.
* everything else (older layouts, name-mapped, encrypted or remote files, files with a
  type DataFusion would decode differently, inlined rows): the ``pyarrow.dataset``
  adapter (``_dataset``), told to skip the native files. It still sees the query's
  filter and prunes by catalog statistics.

Why this shape (measured, ``docs/benchmarks.md``): DataFusion's reader decodes the
benchmark lake 2-3x faster than the adapter's pyarrow path. Positional deletes have no
native operator reachable from Python: anti-joins and bitmask joins on (file, position)
cost 2-3x the scan, a 25k-literal ``IN`` list per file takes a second to plan, and
``array_has`` / ``array_element`` over literal lists are slower still. The UDF costs
about a third of the decode of the rows it filters.

What is given up: ``table()`` runs before DataFusion knows the query's filter, so the
native part cannot be pruned by catalog statistics; DataFusion prunes by the files'
own footers instead, at a per-file cost on every query. Tables with more than
``max_files`` candidate files therefore stay entirely on the adapter (its pruning
reads only the catalog).

Each native file is checked against the catalog first (row count, field ids under the
expected names, Arrow types: ``read/_file_checks``) from its footer, parsed once per
process; a file that fails goes to the adapter, which reads by field id, and a damaged
file raises, as on every other path.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import SessionContext, col, udf
from datafusion import functions as F
from datafusion.catalog import Table

from ..errors import DuckLakeError
from ..pathres import parse_location
from ..read._deletes import deleted_positions
from ..read._file_checks import check_data_file, reads_by_name
from ..read._footers import parsed_fragment
from ..read._reader import _FORMAT, _fail, open_file
from ..scan import DataFileTask, ScanPlan
from ._listing import listing_frame

__all__ = ["NATIVE_MAX_FILES", "NATIVE_TYPES", "NativeSplit", "native_table", "split_native"]

# Tables with more candidate files than this stay on the adapter: the native scan cannot
# be pruned by catalog statistics and costs ~50 µs per file and query (docs/benchmarks.md).
NATIVE_MAX_FILES = 256

# DuckLake types whose Parquet form (as DuckDB writes it) DataFusion decodes to exactly the
# Arrow type this reader declares. Time, nanosecond and second/millisecond timestamps,
# intervals, UUIDs, huge integers, JSON, variants, geometry and nested types take the
# adapter, which converts them.
NATIVE_TYPES = frozenset(
    [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float32", "float64", "varchar", "blob", "date", "timestamp",
        "timestamp_us", "timestamptz",
    ]
)  # fmt: skip
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")
# Local paths spelled the same by a URL, DataFusion's object-store path and
# ``input_file_name()``: no percent-encoding, globbing, spaces or non-ASCII characters.
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/=+@,-]+$")
_LIVE_ROWS = "ducklake_live_rows"


@dataclass(frozen=True)
class NativeSplit:
    """Which files of a plan DataFusion reads itself.

    Attributes:
        clean: files read by one listing scan as they are.
        masked: files read by a second listing scan, filtered by their deleted positions.
        live: each masked file's live-row mask (bit ``i`` clear: row ``i`` is deleted), by
            local path without the leading slash (how ``input_file_name()`` names it).
    """

    clean: tuple[DataFileTask, ...] = ()
    masked: tuple[DataFileTask, ...] = ()
    live: Mapping[str, pa.BooleanArray] = field(default_factory=dict)

    @property
    def file_ids(self) -> frozenset[int]:
        return frozenset(t.data_file_id for t in (*self.clean, *self.masked))


def native_type(type_name: str) -> bool:
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def split_native(table, plan: ScanPlan, max_files: int | None = None) -> NativeSplit:
    """The plan's files that DataFusion reads exactly (see the module docstring).

    ``max_files`` defaults to ``NATIVE_MAX_FILES``.
    """
    if not all(native_type(c.type_name) for c in table.columns):
        return NativeSplit()
    limit = NATIVE_MAX_FILES if max_files is None else max_files
    current = [t for t in plan.tasks if getattr(t, "layout_current", False)]
    if len(current) > limit:  # checked first: a 10,000-file table costs nothing more
        return NativeSplit()
    candidates = [t for t in current if _candidate(t)]
    if not candidates:
        return NativeSplit()
    schema = plan.table_schema
    signature = tuple((c.column_id, c.name, str(c.arrow_type)) for c in table.columns)
    clean, masked, live = [], [], {}
    for task in candidates:
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        if not _reads_natively(task, plan, table.columns, schema, signature, what):
            continue
        if task.deletes is None:
            clean.append(task)
            continue
        mask = _live_mask(task, plan, what)
        if mask is None:
            clean.append(task)
            continue
        masked.append(task)
        live[parse_location(task.file.url).path.lstrip("/")] = mask
    return NativeSplit(tuple(clean), tuple(masked), live)


# Verdicts of _reads_natively per (file, size, rows, columns): the footer is cached too,
# but comparing it with the columns on every query cost ~1 ms for 40 files.
_VERDICTS: dict[tuple, bool] = {}
_VERDICTS_MAX = 65536


def _reads_natively(task, plan, columns, schema, signature, what: str) -> bool:
    """Check the file against the catalog (raises if damaged); True if read by name.

    The file is stat-ed on every call (``parsed_fragment``), so a file removed or
    replaced by a FIFO since the last query raises the typed error here.
    """
    try:
        fragment = parsed_fragment(task.file, plan.storage, _FORMAT)
    except Exception as exc:  # translated as the exact reader does
        raise _fail(exc, what) from exc
    key = (task.file.url, task.file.size, task.record_count, signature)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        physical = fragment.physical_schema
        check_data_file(task, fragment.metadata, physical, columns, what)
        verdict = reads_by_name(physical, columns) and _same_types(physical, schema)
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        _VERDICTS[key] = verdict
    return verdict


class _LiveMasks:
    """Live-row masks by (data file, its deletes, snapshot), up to ``limit`` bytes.

    A mask is one bit per row (31 kB for 250k rows) and costs ~0.3 ms to build from the
    positions, so it is kept across queries; its key names every delete file, so a new
    DELETE (a new delete file) makes a new key.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._masks: dict[tuple, pa.BooleanArray | None] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple):
        with self._lock:
            return self._masks.get(key, False)

    def put(self, key: tuple, mask: pa.BooleanArray | None) -> None:
        size = 0 if mask is None else mask.nbytes
        with self._lock:
            if self._bytes + size > self._limit:
                self._masks.clear()
                self._bytes = 0
            self._masks[key] = mask
            self._bytes += size


live_masks = _LiveMasks(64 << 20)


def _live_mask(task: DataFileTask, plan: ScanPlan, what: str) -> pa.BooleanArray | None:
    """The file's live rows at the plan's snapshot (``None``: no row is deleted).

    From the exact reader's own ``deleted_positions``, which checks every delete file
    against the catalog and raises ``DeleteFileError`` when one cannot be trusted.
    """
    key = (task.file.url, task.record_count, task.deletes, plan.snapshot_id)
    mask = live_masks.get(key)
    if mask is not False:
        return mask
    positions = deleted_positions(
        task.deletes,
        plan.snapshot_id,
        lambda ref: open_file(ref, plan.storage),
        what,
        task.record_count,
    )
    mask = None
    if len(positions):
        keep = np.ones(task.record_count, dtype=bool)
        keep[positions] = False
        mask = pa.array(keep)
    live_masks.put(key, mask)
    return mask


def _candidate(task) -> bool:
    if not isinstance(task, DataFileTask) or not task.layout_current:
        return False
    if task.encryption_key is not None or task.name_mapping is not None:
        return False
    location = parse_location(task.file.url)
    return location.scheme == "file" and bool(_SAFE_PATH.match(location.path))


def _same_types(physical: pa.Schema, schema: pa.Schema) -> bool:
    """Each column's type in the file is the table's (string and binary kinds aside)."""
    for wanted in schema:
        have = physical.field(wanted.name).type
        if _kind(have) != _kind(wanted.type):
            return False
    return True


def _kind(type_: pa.DataType) -> pa.DataType:
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return pa.string()
    if pa.types.is_string_view(type_):
        return pa.string()
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        return pa.binary()
    if pa.types.is_binary_view(type_):
        return pa.binary()
    return type_


def _file_url(task: DataFileTask) -> str:
    return "file://" + parse_location(task.file.url).path


# ------------------------------------------------------------------------------------------
# The DataFrame


def native_table(table, plan: ScanPlan, split: NativeSplit, adapter) -> Table:
    """``Table(frame)``: the native parts of ``split`` unioned with ``adapter`` (or not).

    ``adapter`` is the ``pyarrow.dataset`` adapter for the other files, or ``None`` when
    every task is native. The frame is built on a thread of its own: ``table()`` runs
    inside DataFusion's planner, where planning on the same thread panics ("Cannot start
    a runtime from within a runtime").
    """
    outcome: dict = {}

    def build() -> None:
        try:
            outcome["frame"] = _frame(table, plan, split, adapter)
        except Exception as exc:  # noqa: BLE001 - re-raised on the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=build, name="ducklake-native", daemon=True)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return Table(outcome["frame"])


_BUILDER: SessionContext | None = None
_BUILDER_LOCK = threading.Lock()


def _builder() -> SessionContext:
    """The session the frames are built in; they run under the querying session."""
    global _BUILDER
    with _BUILDER_LOCK:
        if _BUILDER is None:
            _BUILDER = SessionContext()
        return _BUILDER


def _frame(table, plan: ScanPlan, split: NativeSplit, adapter):
    ctx = _builder()
    schema = plan.table_schema
    names = [col(f'"{f.name}"') for f in schema]
    parts = []
    if split.clean:
        parts.append(listing_frame(ctx, [_file_url(t) for t in split.clean], schema))
    if split.masked:
        scan = listing_frame(ctx, [_file_url(t) for t in split.masked], schema)
        live_rows = live_rows_udf(split.live, plan.table, plan.snapshot_id)
        parts.append(scan.filter(live_rows(F.input_file_name(), F.file_row_index())))
    if adapter is not None:
        parts.append(ctx.read_table(adapter))
    frame = parts[0].select(*names)
    for part in parts[1:]:
        frame = frame.union(part.select(*names))
    return frame


# ------------------------------------------------------------------------------------------
# The delete filter


def live_rows_udf(live: Mapping[str, pa.BooleanArray], table: str, snapshot: int):
    """``ducklake_live_rows(input_file_name(), file_row_index())`` over ``live``'s masks."""
    return udf(
        LiveRows(live, table, snapshot),
        [pa.string(), pa.int64()],
        pa.bool_(),
        "immutable",
        name=_LIVE_ROWS,
    )


class LiveRows:
    """The UDF's body: each row's bit in its file's live-row mask.

    Row-wise pure, so DataFusion may evaluate it on any batch or subset of rows. Batches
    straight from the Parquet scan hold the rows of one file in position order; those
    take the fast path, a zero-copy slice of the mask. The one-file check compares every
    name (about 4 ns a row), so a batch mixing files can never take a wrong mask.
    """

    def __init__(self, live: Mapping[str, pa.BooleanArray], table: str, snapshot: int) -> None:
        self._live = live
        self._resolved: dict[str, pa.BooleanArray] = {}
        self._what = f"native scan of table {table} (snapshot {snapshot})"

    def __call__(self, files: pa.StringArray, positions: pa.Int64Array) -> pa.BooleanArray:
        if len(positions) == 0:
            return pa.array([], pa.bool_())
        first = files[0].as_py()
        if files.null_count == 0 and pc.all(pc.equal(files, first)).as_py():
            return _rows_of(self._mask(first), positions)
        codes = files.dictionary_encode()
        indices = codes.indices.to_numpy(zero_copy_only=False)
        out = np.empty(len(positions), dtype=bool)
        for code, name in enumerate(codes.dictionary.to_pylist()):
            chosen = np.flatnonzero(indices == code)
            mask = _rows_of(self._mask(name), positions.take(pa.array(chosen)))
            out[chosen] = mask.to_numpy(zero_copy_only=False)
        return pa.array(out)

    def _mask(self, name: str | None) -> pa.BooleanArray:
        """The mask of the file ``input_file_name()`` names: its path without the leading
        slash, as the catalog gives it or with symbolic links resolved."""
        found = self._live.get(name)
        if found is None and name is not None:
            if not self._resolved:
                self._resolved.update(
                    {os.path.realpath("/" + p).lstrip("/"): m for p, m in self._live.items()}
                )
            found = self._resolved.get(name)
        if found is None:
            # Every file of the masked scan has a mask; anything else is a bug, reported
            # instead of returning deleted rows.
            raise DuckLakeError(
                f"{self._what} read a row of {name!r}, a file it has no delete mask for. "
                "Please report this; DuckLakeCatalog(..., native=False) reads through the "
                "exact path"
            )
        return found


def _rows_of(mask: pa.BooleanArray, positions: pa.Int64Array) -> pa.BooleanArray:
    """``mask[positions]``: a slice when the positions are one ascending run."""
    rows = positions.to_numpy()
    count, first = len(rows), int(rows[0])
    if int(rows[-1]) - first + 1 == count and (count == 1 or np.all(np.diff(rows) == 1)):
        return mask.slice(first, count)
    return mask.take(positions)  # a row selection or a subset; raises if out of range
