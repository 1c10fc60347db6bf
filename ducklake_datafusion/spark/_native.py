"""Files Spark can read itself, on Spark's own Parquet reader, deletes applied in it or by a join.

``read_table`` splits a table's snapshot four ways:

* *clean* files (no deletes, no name mapping, no encryption) written at the table's
  current column layout hold exactly the table's rows under the table's column names:
  one ``spark.read.parquet`` over them (vectorised decoding, column pruning, row-group
  and page filters, all Spark's). Files of an older layout (a column renamed, added,
  widened or dropped since; merged files with per-row snapshots) are read the same way,
  one scan per layout, under their physical names and types, then projected onto the
  table's columns (``read/_layouts``: fields matched by field id, exact widenings as
  casts, missing columns as their default literal, rows of later snapshots dropped);
* *masked* files, the same but carrying positional deletes. Where the session has the
  package's jar (``spark.jars``), Spark's own reader flags each row as kept or deleted
  from its position and the file's deleted positions (``_deleted_rows``), and a filter
  drops the deleted (the benchmark lake's full scan at 1.26x ``spark.read.parquet``
  ignoring its deletes, against 1.80x by the join). Otherwise, the mask join: one more
  ``spark.read.parquet`` with each row's file id (``_metadata``) and
  ``_metadata.row_index`` (its physical position in the file, stable under row-group and
  page pruning), left-joined to a small broadcast table holding, per file and block of
  16,384 rows, a bit mask of its deleted rows (256 longs). A row is kept when its bit is
  clear. Either way the deleted positions are built on the driver from the very positions
  the exact reader removes (``read/_deletes``: every live delete file, per-position
  snapshots, inlined deletes, deletion vectors), so both paths drop the same rows;
* *inlined* rows (stored in the catalog, converted to Arrow by the planner): a small local
  DataFrame, cast as the data source casts its batches;
* everything else (name-mapped or encrypted files, layouts needing a conversion that is
  not exact or a timestamp default, files on a store whose Hadoop connector the cluster
  lacks (``_hadoop``), tables with a type Spark's reader does not return exactly) goes
  through the Python data source, told to skip the files read here. The parts are
  unioned.

The DataFrame of a snapshot is built once per Spark session and reused (``native_scan``):
listing, masks and analysis cost ~0.1-0.2 s for 40 files, as much as a selective query.

Why masks: a plain anti-join on (file, position) costs up to 14x the scan, per-file ``IN``
lists take seconds to analyse, ``mapInArrow`` blocks filter pushdown, and per-file scans
with literal mask arrays were slower still (measured; see ``docs/benchmarks.md``). One row
per 16,384-row block keeps the broadcast table small (a 250k-row file: at most 16 rows; a
block without deletes has none), so its hash table stays in cache and Spark's (adaptive)
broadcast is cheap: 64-row blocks, one long each, were 20% slower on full scans and twice
as slow on selective ones. A single bigint key, ``(file id << 24) + block``, makes the
join a long-keyed broadcast hash join. The file id is ``(length ^ modification time in
ms) & (2**39 - 1)``, from ``_metadata.file_size`` and ``file_modification_time``, per-file
constants: keying on Spark's ``hash(_metadata.file_path)`` hashed a 100-byte string per
row and made masked rows 30% slower (docs/benchmarks.md). Files whose ids coincide are
scanned apart, each scan with its own mask table, so a key never names two files; the
length alone coincided for 2 of the benchmark's 20 files, and a second scan with its own
broadcast cost ~60 ms.

Each native file is first checked against the catalog on the driver (row count, field
ids under the expected names: ``read/_file_checks``), from its footer, which is
parsed once per process; a damaged file raises, as on every other path.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..pathres import parse_location
from ..read._file_checks import check_data_file, files_unchanged, reads_by_name
from ..read._footers import parsed_fragment
from ..read._layouts import FileLayout, file_layout
from ..read._reader import _FORMAT, _fail, deleted_positions_of
from ..scan import DataFileTask, InlinedRowsTask
from ..scan._conform import default_array
from ._arrow import to_spark_table
from ._deleted_rows import KEEP, ROW_INDEX, has_reader, read_keeping
from ._hadoop import hadoop_url, native_store
from ._local import local_frame
from ._types import spark_arrow_type, spark_schema, spark_type

__all__ = ["NATIVE_TYPES", "NativeScan", "native_scan"]

# DuckLake types whose Parquet form Spark reads as exactly the value and Spark type our
# Spark schema declares (unsigned types widen as Spark's reader does; timestamp_s/_ms are
# whole microseconds; no nanosecond, time, uuid, interval, hugeint, json, variant,
# geometry or nested types).
NATIVE_TYPES = frozenset(
    [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float32", "float64", "varchar", "blob", "date", "timestamp",
        "timestamp_us", "timestamp_ms", "timestamp_s", "timestamptz",
    ]
)  # fmt: skip
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")
_GLOB = re.compile(r"([\\*?\[\]{}])")
# Spark lists more than this many paths with a distributed job (~0.6 s); the files are
# known, so the listing stays on the driver.
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
# Helper columns of the masked scan; a table using one of these names stays on the source.
_KEY, _INDEX, _MASK = "__ducklake_key", "__ducklake_row", "__ducklake_mask"
_RESERVED = frozenset(["_metadata", _KEY, _INDEX, _MASK, ROW_INDEX, KEEP])
# Rows per mask-table row: 256 longs of bits each. Fewer, wider rows keep the broadcast hash
# table small (a 250k-row file: 16 rows) and were the fastest measured (docs/benchmarks.md).
_BLOCK_SHIFT = 14
_WORDS = 1 << (_BLOCK_SHIFT - 6)
# The join key is (file id << 24) + block: files below 2**38 rows, file ids of 39 bits.
_ID_SHIFT = 24
_ID_MASK = (1 << (63 - _ID_SHIFT)) - 1
_ID_SQL = f"(_metadata.file_size ^ unix_millis(_metadata.file_modification_time)) & {_ID_MASK}"


@dataclass(frozen=True)
class NativeScan:
    """The natively read part of a table: a DataFrame and the data files it covers.

    Attributes:
        frame: the union of the clean and masked scans (None when no file qualifies).
        data_file_ids: the files ``frame`` reads; the Python source skips them.
        complete: ``frame`` covers every task of the plan (nothing is left to the Python
            source).
        clean_files / masked_files / inlined_tasks: what each native part reads (for logs).
        left_over: why the rest is left to the Python source (``"2 encrypted files"``).
    """

    frame: object | None
    data_file_ids: tuple[int, ...]
    complete: bool = False
    clean_files: int = 0
    masked_files: int = 0
    inlined_tasks: int = 0
    left_over: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Built:
    scan: NativeScan
    files: tuple[DataFileTask, ...]  # re-checked (local files) before each reuse
    session: object  # held, so that its id in the key cannot be reused while cached


# Native scans by (Spark session, catalog, data path, storage, table incl. its UUID,
# snapshot, columns): a snapshot's files and deletes never change, so listing the files,
# building the masks and analysing the join (~0.1-0.2 s for 40 files) happen once per
# session; later calls re-stat the local files and reuse the DataFrame.
_built: OrderedDict[tuple, _Built] = OrderedDict()
_BUILT_MAX = 32
_LOCK = threading.Lock()


def native_type(type_name: str) -> bool:
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def native_scan(spark, table, storage, prune: pc.Expression | None = None) -> NativeScan:
    """The files of ``table``'s snapshot that Spark reads itself (cached per session).

    ``prune``: only files that may hold rows matching it (by catalog statistics) are read;
    the caller filters the rows.
    """
    lake = table.lake
    key = (
        id(spark),
        lake.description,
        lake.data_path_override,
        storage,
        table.entry,
        table.snapshot,
        tuple((c.column_id, c.name, c.type_name) for c in table.columns),
        None if prune is None else str(prune),
    )
    with _LOCK:
        built = _built.get(key)
        if built is not None:
            _built.move_to_end(key)
    if built is not None and files_unchanged(built.files):
        return built.scan
    plan = table.scan_plan(filter=prune)
    scan, files = _build(spark, table, plan, storage)
    with _LOCK:
        _built[key] = _Built(scan, files, spark)
        while len(_built) > _BUILT_MAX:
            _built.popitem(last=False)
    return scan


def _build(spark, table, plan, storage) -> tuple[NativeScan, tuple[DataFileTask, ...]]:
    """Read the plan's files natively where their layout allows, and its inlined rows."""
    for column in table.columns:
        if not native_type(column.type_name):
            reason = f"column {column.name} is {column.type_name}, which Spark's reader changes"
            return NativeScan(None, (), left_over=(reason,)), ()
    schema = spark_schema(table.columns)
    left_over: Counter[str] = Counter()
    groups: dict[FileLayout | None, tuple[list, list]] = {}  # layout -> (clean, masked)
    read_options: dict[str, str] = {}
    masks_allowed = not any(c.name in _RESERVED for c in table.columns)
    stores: dict[tuple[str, str], dict[str, str] | None] = {}  # per (scheme, bucket)
    for task in plan.tasks:
        if not isinstance(task, DataFileTask):
            continue
        reason = _not_candidate(task, masks_allowed)
        if reason is not None:
            left_over[reason] += 1
            continue
        location = parse_location(task.file.url)
        where = (location.scheme, location.authority)
        if where not in stores:
            stores[where] = native_store(spark, task.file.url, storage)
        store = stores[where]
        if store is None:
            left_over[f"{location.scheme}:// files, which Spark's connector cannot read here"] += 1
            continue
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        try:
            fragment = parsed_fragment(task.file, storage, _FORMAT)
            physical = fragment.physical_schema
        except Exception as exc:  # our typed error naming the file, as the exact path's
            raise _fail(exc, what) from exc
        check_data_file(task, fragment.metadata, physical, table.columns, what)
        native, layout = _layout(task, physical, table.columns)
        if native:
            read_options.update(store)
            clean, masked = groups.setdefault(layout, ([], []))
            (clean if task.deletes is None else masked).append(task)
        else:
            left_over["files of a layout Spark's reader cannot map exactly"] += 1
    frames, files, clean_files, masked_files = [], [], 0, 0
    for layout, (clean, masked) in groups.items():
        read_schema = schema if layout is None else _read_schema(layout)
        parts = []
        if clean:
            parts.append(_read_parquet(spark, read_schema, clean, read_options, storage))
            files.extend(clean)
            clean_files += len(clean)
        if masked:
            frame, read = _masked_read(spark, read_schema, masked, plan, storage, read_options)
            if len(read) < len(masked):
                left_over[
                    "files with deletes whose size or time in Spark's listing differ "
                    "from the driver's (changed since planning?)"
                ] += len(masked) - len(read)
            masked = read
            if frame is not None:
                parts.append(frame)
                files.extend(masked)
                masked_files += len(masked)
        for part in parts:
            frames.append(part if layout is None else _projected(part, layout, table, schema))
    inlined = [task.rows for task in plan.tasks if isinstance(task, InlinedRowsTask)]
    if inlined:
        frames.append(_inlined_frame(spark, schema, inlined))
    ids = tuple(t.data_file_id for t in files)
    complete = len(ids) + len(inlined) == len(plan.tasks)
    reasons = tuple(f"{count} {what}" for what, count in left_over.items())
    frame = _union(frames)
    if frame is None:
        if not complete:
            return NativeScan(None, (), left_over=reasons), ()
        frame = spark.createDataFrame([], schema)  # no rows at this snapshot (or filter)
    scan = NativeScan(frame, ids, complete, clean_files, masked_files, len(inlined), reasons)
    return scan, tuple(files)


def _layout(task, physical: pa.Schema, columns) -> tuple[bool, FileLayout | None]:
    """Whether Spark reads the file natively, and how (``None``: by the table's names).

    A file at the table's current layout whose fields carry the table's names is read as
    the table; any other file by its layout (``read/_layouts``: physical names by field
    id, exact widenings, defaults), if each missing column's default is a literal Spark
    takes exactly.
    """
    if task.layout_current and reads_by_name(physical, columns):
        return True, None
    layout = file_layout(physical, columns)
    if layout is None:
        return False, None
    missing = [c for s, c in zip(layout.sources, columns, strict=True) if s.physical is None]
    return all(_default_literal(c) is not None for c in missing), layout


def _read_schema(layout: FileLayout):
    """The Spark schema of a layout's by-name scan (physical names and types)."""
    from pyspark.sql.types import StructField, StructType

    return StructType(
        [StructField(name, spark_type(type_, name), nullable=True) for name, type_ in layout.read]
    )


def _projected(frame, layout: FileLayout, table, schema):
    """The table's columns, in order, from a scan of ``_read_schema(layout)``."""
    from pyspark.sql import functions as F

    if layout.snapshot_column is not None:  # merged files: drop rows of later snapshots
        frame = frame.where(_column(layout.snapshot_column) <= F.lit(table.snapshot_id))
    exprs = []
    for source, column, field in zip(layout.sources, table.columns, schema.fields, strict=True):
        if source.physical is None:
            expr = _default_literal(column).cast(field.dataType)
        else:
            expr = _column(source.physical)
            if source.cast:
                expr = expr.cast(field.dataType)
        exprs.append(expr.alias(column.name))
    return frame.select(*exprs)


def _default_literal(column):
    """The column's initial default as a Spark literal, or ``None`` where a literal could
    change it (timestamps: a Python ``datetime`` literal is read in the session's zone)."""
    from pyspark.sql import functions as F

    value = default_array(column, 1)[0].as_py()
    if value is None:
        return F.lit(None)
    if isinstance(value, (bytes, bytearray)):
        return F.lit(bytearray(value))
    if isinstance(value, _dt.datetime) or not isinstance(
        value, (bool, int, float, str, Decimal, _dt.date)
    ):
        return None
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return None  # a UBIGINT beyond Spark's long literals
    return F.lit(value)


def _column(name: str):
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _inlined_frame(spark, schema, tables: list[pa.Table]):
    """Rows stored in the catalog, as a small local DataFrame of the table's Spark schema.

    The planner has already converted them to the table's Arrow schema (at the snapshot,
    deletes applied); they are cast to the Arrow types Spark expects exactly as the data
    source casts its batches (``_arrow``).
    """
    target = pa.schema([pa.field(f.name, spark_arrow_type(f.dataType, f.name)) for f in schema])
    rows = pa.concat_tables([table.select(target.names) for table in tables])
    return local_frame(spark, to_spark_table(rows, target), schema)


def _not_candidate(task, masks_allowed: bool) -> str | None:
    """Why a data file cannot be read natively, or ``None`` for an unencrypted data file
    with field ids (with deletes: if masks apply; block numbers must fit the join key)."""
    if task.name_mapping is not None:
        return "files without field ids, read by a name mapping"
    if task.encryption_key is not None:
        return "encrypted files"
    if task.deletes is None:
        return None
    if not masks_allowed:
        return f"files with deletes in a table using a reserved column name ({_KEY} ...)"
    if task.record_count >= 1 << (_BLOCK_SHIFT + _ID_SHIFT):
        return "files with deletes and more than 2**38 rows"
    return None


def _read_parquet(spark, schema, tasks, read_options=None, storage=None, format="parquet"):
    """The tasks' files read by Spark's ``format`` reader (Parquet, or the jar's), listed
    on the driver."""
    paths = [spark_path(t.file.url, storage) for t in tasks]
    with driver_listing(spark, len(paths)):
        return spark.read.format(format).schema(schema).options(**(read_options or {})).load(paths)


def spark_path(url: str, storage=None) -> str:
    """A data file URL as Spark's reader takes it (Hadoop scheme, globs escaped)."""
    location = parse_location(url)
    if location.scheme == "file":
        return hadoop_path(location.path)
    return _GLOB.sub(r"\\\1", hadoop_url(url, storage))


def _masked_read(spark, schema, tasks, plan, storage, read_options):
    """The masked files' rows that were not deleted (see the module docstring).

    Returns ``(frame, tasks read)``. With the package's jar on the session's classpath,
    Spark's reader drops them (``_deleted_rows``); otherwise the mask join does: local
    files keyed by ``os.stat`` (``_masked_local``), object-store files by Spark's own
    listing of them (``_masked_listed``).
    """
    if has_reader(spark):
        return read_keeping(spark, schema, tasks, plan, storage, read_options), tasks
    local = [t for t in tasks if parse_location(t.file.url).scheme == "file"]
    remote = [t for t in tasks if parse_location(t.file.url).scheme != "file"]
    parts = [
        _masked_local(spark, schema, local, plan, storage) if local else (None, []),
        _masked_listed(spark, schema, remote, plan, storage, read_options)
        if remote
        else (None, []),
    ]
    frame = _union([frame for frame, _ in parts if frame is not None])
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
    listed = _read_parquet(spark, schema, tasks, read_options, storage)
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
        rows = _read_parquet(spark, schema, group_tasks, read_options, storage)
        if _listed_ids(spark, rows, group_tasks, storage) != [f for _, f in group]:
            return None, []
        frames.append(_masked_scan(spark, schema, group, plan, storage, rows))
    frame = _union(frames)
    return (frame, [task for task, _ in identified]) if frame is not None else (None, [])


def _union(frames: list):
    """The frames unioned by column name (None when there is none)."""
    if not frames:
        return None
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame


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
    frame = _union(frames)
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
        rows = _read_parquet(spark, schema, tasks)
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
    unique as long as the ids are (``_masked_read`` scans equal ids apart) and blocks
    stay below 2**24 (``_candidate`` admits files below 2**38 rows).
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


def hadoop_path(local_path: str) -> str:
    """A local path as Spark takes it: a ``file:`` URI, glob characters escaped."""
    return "file://" + _GLOB.sub(r"\\\1", local_path)


@contextlib.contextmanager
def driver_listing(spark, paths: int):
    """Raise the parallel-listing threshold while the file index is built (restored)."""
    previous = spark.conf.get(_LISTING_THRESHOLD, None)
    spark.conf.set(_LISTING_THRESHOLD, str(max(paths + 1, 32)))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_LISTING_THRESHOLD)
        else:
            spark.conf.set(_LISTING_THRESHOLD, previous)
