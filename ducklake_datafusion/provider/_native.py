"""Native DataFusion scans: a table's files on DataFusion's own Parquet reader.

When no live file of a table's snapshot has deletes, encryption or a name mapping, every
file is local (or on S3 with the session's store: ``_object_stores``), every column has a
type whose Parquet form DataFusion decodes to exactly the table's Arrow type, and every
file's columns map onto the table's exactly (``read/_layouts``),
``DuckLakeSchema.table()`` returns ``datafusion.catalog.Table(frame)``: one
``ListingTable`` scan per file layout over its file list (``_listing``), projected onto
the table's columns by field id, plus the inlined rows from memory, in one union.
Projection, filter pushdown, row-group and page pruning, parallel decode and the
aggregation all stay in DataFusion, and no batch crosses into Python. Every other table
goes through the ``pyarrow.dataset`` adapter (``_dataset``), the exact path, which sees
the query's filter and prunes by catalog statistics.

Why all or nothing (measured, ``docs/benchmarks.md``): a union of a native scan and the
adapter was slower than the adapter alone on the benchmark lake (0.218 vs 0.184 s). The
adapter's partitions block DataFusion's runtime threads while Python reads, so the
native partitions wait for them on 2 cores.

Files with deletes (measured, ``docs/benchmarks.md``): read natively only with
``DuckLakeCatalog(native_deletes=True)``, through a keep-mask filter per listing
(``_native_deletes``). It makes full scans of the benchmark's table with deletes 20-30%
faster than the streaming reader, but selective queries ~4 ms slower (1.6-1.9x DuckDB
instead of 1.0-1.2x): the filter needs every surviving row's file name and position,
while the streaming reader prunes by catalog statistics and decodes late. Anti-joins,
bitmask joins, ``IN`` lists and ``array_has`` were slower than both.

What is given up: ``table()`` runs before DataFusion knows the query's filter, so the
native scan cannot be pruned by catalog statistics; DataFusion prunes by the files' own
footers instead, at a per-file cost on every query. Tables with more than
``NATIVE_MAX_FILES`` files therefore stay on the adapter, whose pruning reads only the
catalog.

Each native file is checked against the catalog first (row count and field ids:
``read/_file_checks``; how its columns map: ``read/_layouts``) from its footer, parsed
once per process; a file whose columns need a conversion the native scan does not do
exactly sends the table to the adapter, and a damaged or missing file raises our typed
error, as on every other path.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import stat
import threading
from dataclasses import dataclass

import pyarrow as pa
from datafusion import SessionContext
from datafusion.catalog import Table

from ..pathres import parse_location
from ..read._file_checks import check_data_file, files_unchanged
from ..read._footers import parsed_fragment, require_regular_file
from ..read._layouts import FileLayout, file_layout, same_kind
from ..read._reader import _FORMAT, _fail
from ..scan import DataFileTask, InlinedRowsTask, ScanPlan
from ..scan._plan import balanced_groups
from ._listing import ListingUnsupported, listing_frame
from ._native_deletes import DeleteMasks, delete_masks, without_deleted
from ._native_layouts import layout_frame
from ._object_stores import SessionStores
from ._threads import on_own_thread

__all__ = [
    "NATIVE_MAX_FILES",
    "NATIVE_SCAN_CHUNKS",
    "NATIVE_TYPES",
    "NativeSplit",
    "native_table",
    "split_native",
]

log = logging.getLogger("ducklake_datafusion")

# Tables with more files than this stay on the adapter: the native scan cannot be
# pruned by catalog statistics and costs ~50 µs per file and query (docs/benchmarks.md).
NATIVE_MAX_FILES = 256

# Listing scans per file layout. DataFusion splits one listing into at most
# ``target_partitions`` partitions (by default the number of cores); a union of several
# listings has that many per listing, which keeps both cores busy to the end of a scan.
# Measured with bench/scan.py on table p (48 files, 2 cores, default session; medians of
# 15): full aggregate 0.164-0.190 s with one listing, 0.136 s with 2, 0.098-0.110 s with
# 4, 0.101 s with 8; group-by 0.073 / 0.068 / 0.063 / 0.068 s (docs/benchmarks.md).
NATIVE_SCAN_CHUNKS = 4

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
# Local paths a file:// URL spells without percent-encoding or globbing.
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/=+@,-]+$")


@dataclass(frozen=True)
class NativeSplit:
    """A plan DataFusion reads itself (all of its tasks, or none).

    Attributes:
        groups: the data files by layout: one listing scan per layout, projected onto
            the table's columns (``read/_layouts``).
        inlined: rows held in the catalog, scanned from memory.
    """

    groups: tuple[tuple[FileLayout, tuple[DataFileTask, ...]], ...] = ()
    inlined: tuple[InlinedRowsTask, ...] = ()

    @property
    def files(self) -> tuple[DataFileTask, ...]:
        return tuple(task for _, tasks in self.groups for task in tasks)

    def __bool__(self) -> bool:
        return bool(self.groups or self.inlined)


def native_type(type_name: str) -> bool:
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def split_native(
    table,
    plan: ScanPlan,
    max_files: int | None = None,
    *,
    remote: bool = False,
    deletes: bool = False,
) -> NativeSplit:
    """All of the plan's tasks if DataFusion reads every one exactly, else none.

    ``max_files`` defaults to ``NATIVE_MAX_FILES``; ``remote`` admits S3 files (when the
    querying session has their stores: ``_object_stores``), ``deletes`` local files with
    deletes (``_native_deletes``). Raises the exact reader's
    typed error for a candidate file that is missing, not a regular file or not what the
    catalog says.
    """
    if not all(native_type(c.type_name) for c in table.columns):
        return NativeSplit()
    limit = NATIVE_MAX_FILES if max_files is None else max_files
    files = [t for t in plan.tasks if isinstance(t, DataFileTask)]
    inlined = tuple(t for t in plan.tasks if isinstance(t, InlinedRowsTask))
    if not plan.tasks or len(files) > limit:  # checked first: 10,000 files cost nothing
        return NativeSplit()
    if not all(_candidate(t, remote, deletes) for t in files):
        return NativeSplit()  # all or nothing (see the module docstring)
    signature = _signature(table)
    groups: dict[FileLayout, list[DataFileTask]] = {}
    for task in files:
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        layout = _native_layout(task, plan, table.columns, signature, what)
        if layout is None:
            return NativeSplit()
        groups.setdefault(layout, []).append(task)
    return NativeSplit(tuple((k, tuple(v)) for k, v in groups.items()), inlined)


def _signature(table) -> tuple:
    return tuple((c.column_id, c.name, str(c.arrow_type)) for c in table.columns)


def _candidate(task: DataFileTask, remote: bool, deletes: bool) -> bool:
    """Without encryption or name mapping; without deletes unless ``deletes`` (local
    files only: ``_native_deletes``); local, or on S3 if ``remote``; plainly spelled."""
    if task.encryption_key is not None or task.name_mapping is not None:
        return False
    location = parse_location(task.file.url)
    if task.deletes is not None and not (deletes and location.scheme == "file"):
        return False
    if location.scheme == "file":
        return bool(_SAFE_PATH.match(location.path))
    return remote and location.scheme == "s3" and bool(_SAFE_PATH.match("/" + location.path))


# Layouts per (file, size, rows, columns), None for files the native path cannot read:
# the footer is cached too, but resolving it against the columns on every query cost
# ~1 ms for 40 files. Oldest first out: a table of more files than this re-reads the
# footers of the rest on every new lake version. Equal layouts are one shared object
# (_SHARED), so an entry costs ~0.35 KB (measured: 1.2 KB with a layout object each).
_LAYOUTS: dict[tuple, FileLayout | None] = {}
_LAYOUTS_MAX = 1 << 18
_SHARED: dict[FileLayout, FileLayout] = {}
_MISSING = object()


def _native_layout(task, plan, columns, signature, what: str) -> FileLayout | None:
    """Check the file against the catalog (raises if damaged); its layout if native.

    A local file is stat-ed on every call, so a file removed or replaced by a FIFO since
    it was checked raises the typed error here, not inside DataFusion. Its footer is read
    and checked once per (file, size, rows, columns): a known layout needs no footer, so
    a new lake version of a table of 100,000 files costs 100,000 ``stat`` calls, not
    100,000 footer reads. (A remote file's footer is fetched once per process; see the
    README's limits. The Rust scan checks every file it opens against the catalog's size
    and record count again.)
    """
    location = parse_location(task.file.url)
    key = (task.file.url, task.file.size, task.record_count, task.layout_current, signature)
    try:
        found = os.stat(location.path) if location.scheme == "file" else None
        if found is not None and not stat.S_ISREG(found.st_mode):
            require_regular_file(location.path, task.file.url)  # raises, naming the kind
        layout = _LAYOUTS.get(key, _MISSING)
        if layout is _MISSING:
            fragment = parsed_fragment(task.file, plan.storage, _FORMAT)
    except Exception as exc:  # translated as the exact reader does
        raise _fail(exc, what) from exc
    if found is not None and task.file.size is not None and found.st_size != task.file.size:
        return None  # not the file the catalog lists: the exact path's checks decide
    if layout is not _MISSING:
        return layout
    physical = fragment.physical_schema
    check_data_file(task, fragment.metadata, physical, columns, what)
    while len(_LAYOUTS) >= _LAYOUTS_MAX:
        _LAYOUTS.pop(next(iter(_LAYOUTS)), None)
    layout = file_layout(physical, columns)
    if layout is not None:
        if len(_SHARED) >= 4096:
            _SHARED.clear()
        layout = _SHARED.setdefault(layout, layout)
    _LAYOUTS[key] = layout
    return layout


def _file_url(task: DataFileTask) -> str:
    location = parse_location(task.file.url)
    return (
        f"{location.scheme}://{location.path}"
        if location.scheme == "s3"
        else f"file://{location.path}"
    )


def _buckets(tasks) -> frozenset[str]:
    return frozenset(
        location.authority
        for location in (parse_location(t.file.url) for t in tasks)
        if location.scheme == "s3"
    )


# ------------------------------------------------------------------------------------------
# The table DataFusion scans


@dataclass(frozen=True)
class _Built:
    table: Table
    files: tuple[DataFileTask, ...]
    buckets: frozenset[str]  # S3 buckets whose stores the querying session needs
    backend: object  # held, so that its id in the key cannot be reused while cached


# Native tables by (catalog, table incl. its UUID, snapshot, columns, data path,
# storage): a snapshot's files never change, so planning and building (~1.5 ms, as much
# as a selective query's scan) happen once; every later lookup only checks that the
# native files are still regular files of the catalog's size (if not, the lookup takes
# the full path, whose checks raise the typed error).
_built: dict[tuple, _Built | None] = {}
_BUILT_MAX = 128
_LOCK = threading.Lock()


def native_table(
    table, stores: SessionStores | None = None, *, deletes: bool = False
) -> Table | None:
    """``Table(frame)`` for ``table``'s snapshot, or ``None`` unless every task is native.

    ``stores``: the sessions the catalog was registered in by ``register()``; S3 files are
    read natively only with one (``_object_stores``). ``deletes``: files with positional
    deletes are read natively too (``_native_deletes``).
    """
    lake = table.lake
    remote = bool(stores)
    key = (
        id(lake.backend),
        lake.description,
        lake.data_path_override,
        lake.storage,
        table.entry,
        table.snapshot,
        _signature(table),
        remote,
        deletes,
    )
    with _LOCK:
        built = _built.get(key, False)
    if built is not False and (built is None or files_unchanged(built.files)):
        if built is None:
            return None
        if built.buckets and not stores.provide(built.buckets, lake.storage):
            return None
        return built.table
    plan = table.scan_plan()
    split = split_native(table, plan, remote=remote, deletes=deletes)
    built = None
    buckets = _buckets(split.files)
    if buckets and not stores.provide(buckets, lake.storage):
        split = NativeSplit()  # the options do not translate into DataFusion's store
    if split:
        masks = delete_masks(plan, [t for t in split.files if t.deletes is not None])
        try:
            frame = on_own_thread(lambda: _frame(plan, split, masks), "ducklake-native")
        except ListingUnsupported as exc:  # a datafusion release changed the plan format
            _warn_once(f"native scans are off: {exc}; every table takes the exact path")
            return None
        except _NotNative as exc:
            _warn_once(f"{exc}; the table takes the exact path")
            return None
        built = _Built(Table(frame), split.files, buckets, lake.backend)
    with _LOCK:
        if len(_built) >= _BUILT_MAX:
            _built.pop(next(iter(_built)))
        _built[key] = built
    return None if built is None else built.table


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


_BUILDER: SessionContext | None = None


def _builder() -> SessionContext:
    """The session the frames are built in; they run under the querying session."""
    global _BUILDER
    with _LOCK:
        if _BUILDER is None:
            _BUILDER = SessionContext()
        return _BUILDER


def _frame(plan: ScanPlan, split: NativeSplit, masks: DeleteMasks):
    """One frame of the table's columns: listing scans per file layout (files with
    deletes apart, filtered by their keep masks), projected onto the table's columns,
    and the inlined rows from memory, in one union."""
    builder = _builder()
    columns = plan.columns
    frames = []
    for layout, tasks in split.groups:
        for with_deletes in (False, True):
            part = [t for t in tasks if (t.deletes is not None) == with_deletes]
            for chunk in balanced_groups(part, NATIVE_SCAN_CHUNKS):
                scan = listing_frame(builder, [_file_url(t) for t in chunk], layout.read_schema)
                if with_deletes:
                    scan = without_deleted(scan, masks)
                frames.append(layout_frame(scan, layout, columns, plan.snapshot_id))
    names = [c.name for c in columns]
    for task in split.inlined:
        if task.rows.num_rows:
            frames.append(_in_memory(builder, task.rows.select(names)))
    if not frames:  # inlined rows only, all of them deleted
        frames.append(_in_memory(builder, plan.table_schema.empty_table()))
    for frame in frames:
        found = frame.schema()
        if found.names != names or not all(
            same_kind(f.type, w.type) for f, w in zip(found, plan.table_schema, strict=True)
        ):
            raise _NotNative(f"a native frame of {plan.table} came out as {found}")
    union = frames[0]
    for frame in frames[1:]:
        union = union.union(frame)
    return union


class _NotNative(RuntimeError):
    """The native frame would not have the table's schema (a bug): take the exact path."""


_in_memory_names = itertools.count()


def _in_memory(builder: SessionContext, rows: pa.Table):
    """A frame over ``rows`` that does not stay registered in the builder session."""
    name = f"__ducklake_inlined_{next(_in_memory_names)}"
    frame = builder.create_dataframe([rows.to_batches()], name=name, schema=rows.schema)
    builder.deregister_table(name)  # the frame's plan holds the table itself
    return frame
