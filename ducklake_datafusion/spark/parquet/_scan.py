"""Files Spark can read itself, on Spark's own Parquet reader, deletes applied in it or by a join.

``read_table`` splits a table's snapshot four ways:

* *clean* files (no deletes, no name mapping, no encryption) written at the table's
  current column layout hold exactly the table's rows under the table's column names:
  one ``spark.read.parquet`` over them (vectorised decoding, column pruning, row-group
  and page filters, all Spark's). Files of an older layout are read the same way, one
  scan per layout, then projected onto the table's columns (``_projection``);
* *masked* files, the same but carrying positional deletes. Where the session has the
  package's jar (``spark.jars``), Spark's own reader flags each row as kept or deleted
  from its position and the file's deleted positions (``_deleted_rows``), and a filter
  drops the deleted. Otherwise the mask join drops them (``_mask_join``). Either way the
  deleted positions are built on the driver from the very positions the exact reader
  removes (``read/_deletes``: every live delete file, per-position snapshots, inlined
  deletes, deletion vectors), so both ways drop the same rows;
* *inlined* rows (stored in the catalog, converted to Arrow by the planner): a small local
  DataFrame, cast as the data source casts its batches;
* everything else (name-mapped or encrypted files, layouts needing a conversion that is
  not exact or a timestamp default, files on a store whose Hadoop connector the cluster
  lacks (``_hadoop``), tables with a type Spark's reader does not return exactly) goes
  through the Python data source, told to skip the files read here. The parts are
  unioned.

The DataFrame of a snapshot is built once per Spark session and reused
(``parquet_scan``): listing the files, building the masks and analysing the join cost as
much as a selective query (``docs/benchmarks.md``).

Each file Spark reads here is first checked against the catalog on the driver (row count,
field ids under the expected names: ``read.checked_file``, shared with the Rust scan),
from its footer, which is parsed once per process; a damaged file raises, as on every
other path.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa

from ...common import LRUCache
from ...pathres import parse_location
from ...read import FileLayout, checked_file, files_unchanged
from ...scan import DataFileTask, Filter, InlinedRowsTask
from .._core import local_frame, spark_arrow_type, spark_schema, to_spark_table
from ._deleted_rows import KEEP, ROW_INDEX, has_reader, read_keeping
from ._exact_types import spark_reads_exactly
from ._files import read_files, union_frames
from ._hadoop import store_read_options
from ._mask_join import MASK_COLUMNS, MAX_MASKED_ROWS, masked_by_join
from ._projection import layout_schema, projected, spark_layout

__all__ = ["ParquetScan", "parquet_scan"]

# Columns the masked reads add; a table using one of these names keeps its files with
# deletes on the source.
_RESERVED = frozenset(["_metadata", *MASK_COLUMNS, ROW_INDEX, KEEP])


@dataclass(frozen=True)
class ParquetScan:
    """The part of a table Spark's own Parquet reader reads: a DataFrame and its files.

    Attributes:
        frame: the union of the clean and masked scans (None when no file qualifies).
        data_file_ids: the files ``frame`` reads; the Python source skips them.
        complete: ``frame`` covers every task of the plan (nothing is left to the Python
            source).
        clean_files / masked_files / inlined_tasks: what each part reads (for logs).
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
    scan: ParquetScan
    files: tuple[DataFileTask, ...]  # re-checked (local files) before each reuse
    session: object  # held, so that its id in the key cannot be reused while cached


# Scans by (Spark session, catalog, data path, storage, table incl. its UUID, snapshot,
# columns): a snapshot's files and deletes never change, so listing the files, building
# the masks and analysing the join happen once per session; later calls re-stat the local
# files and reuse the DataFrame.
_BUILT_MAX = 32
_built: LRUCache[tuple, _Built] = LRUCache(_BUILT_MAX)


def parquet_scan(spark, table, storage, prune: Filter | None = None) -> ParquetScan:
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
        prune,
    )
    built = _built.get(key)
    if built is not None and files_unchanged(built.files):
        return built.scan
    plan = table.scan_plan(filter=prune)
    scan, files = _build(spark, table, plan, storage)
    _built.put(key, _Built(scan, files, spark))  # replaces a scan whose files changed
    return scan


def _build(spark, table, plan, storage) -> tuple[ParquetScan, tuple[DataFileTask, ...]]:
    """Read the plan's files with Spark's reader where their layout allows, and its
    inlined rows."""
    for column in table.columns:
        if not spark_reads_exactly(column.type_name):
            reason = f"column {column.name} is {column.type_name}, which Spark's reader changes"
            return ParquetScan(None, (), left_over=(reason,)), ()
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
            stores[where] = store_read_options(spark, task.file.url, storage)
        store = stores[where]
        if store is None:
            left_over[f"{location.scheme}:// files, which Spark's connector cannot read here"] += 1
            continue
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        checked = checked_file(task, storage, table.columns, what)  # raises our typed error
        readable, layout = spark_layout(task, checked, table.columns)
        if readable:
            read_options.update(store)
            clean, masked = groups.setdefault(layout, ([], []))
            (clean if task.deletes is None else masked).append(task)
        else:
            left_over["files of a layout Spark's reader cannot map exactly"] += 1
    frames, files, clean_files, masked_files = [], [], 0, 0
    for layout, (clean, masked) in groups.items():
        read_schema = schema if layout is None else layout_schema(layout)
        parts = []
        if clean:
            parts.append(read_files(spark, read_schema, clean, read_options, storage))
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
            frames.append(part if layout is None else projected(part, layout, table, schema))
    inlined = [task.rows for task in plan.tasks if isinstance(task, InlinedRowsTask)]
    if inlined:
        frames.append(_inlined_frame(spark, schema, inlined))
    ids = tuple(t.data_file_id for t in files)
    complete = len(ids) + len(inlined) == len(plan.tasks)
    reasons = tuple(f"{count} {what}" for what, count in left_over.items())
    frame = union_frames(frames)
    if frame is None:
        if not complete:
            return ParquetScan(None, (), left_over=reasons), ()
        frame = spark.createDataFrame([], schema)  # no rows at this snapshot (or filter)
    scan = ParquetScan(frame, ids, complete, clean_files, masked_files, len(inlined), reasons)
    return scan, tuple(files)


def _masked_read(spark, schema, tasks, plan, storage, read_options):
    """The masked files' rows that were not deleted (see the module docstring).

    Returns ``(frame, tasks read)``. With the package's jar on the session's classpath,
    Spark's reader drops them (``_deleted_rows``); otherwise the mask join does
    (``_mask_join``).
    """
    if has_reader(spark):
        return read_keeping(spark, schema, tasks, plan, storage, read_options), tasks
    return masked_by_join(spark, schema, tasks, plan, storage, read_options)


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
    """Why Spark's reader cannot read a data file here, or ``None`` for an unencrypted
    data file with field ids (with deletes: if masks apply; block numbers must fit the
    join key)."""
    if task.name_mapping is not None:
        return "files without field ids, read by a name mapping"
    if task.encryption_key is not None:
        return "encrypted files"
    if task.deletes is None:
        return None
    if not masks_allowed:
        return f"files with deletes in a table using a reserved column name ({MASK_COLUMNS[0]} ...)"
    if task.record_count >= MAX_MASKED_ROWS:
        return "files with deletes and more than 2**38 rows"
    return None
