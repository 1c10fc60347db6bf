"""A scan's plan for the JVM catalog: the files Spark reads itself, and the exact rest.

The plan is this package's ``ScanPlan``, pruned with the filters Spark pushed
(``_filters_json``; catalog statistics and partition values, before any file is listed).
Its tasks are split two ways:

* files Spark's own Parquet reader returns exactly go to the JVM as the plan export
  (``read.export_plan``: URL, size, record count, deleted positions, layout), with their
  Hadoop URLs and the read's Hadoop options (``parquet/_hadoop``) in the header. A file
  qualifies when it is unencrypted, maps onto the table by field id (``read.checked_file``,
  which also checks it against the catalog and raises our typed error if it is damaged),
  and each column either is read under some physical name with the column's own type or
  is missing with a NULL default; the table's types must all be ones Spark's reader
  returns exactly (``parquet.spark_reads_exactly``, and structs, lists and maps of them). Deletes are applied inside Spark's
  reader by the jar, from the exported positions;
* everything else (inlined rows, name-mapped or encrypted files, files of a narrower
  type or with a default, merged files, a store whose options Hadoop cannot take, tables
  of types Spark's reader changes, files whose nested fields differ from the table's) is read here by the exact reader, filtered and
  projected, and sent as Arrow rows already of the types Spark expects (``_arrow``). The
  header says how many files went that way and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

from ...errors import InvalidOptionError
from ...pathres import parse_location
from ...read import (
    FILE_ID,
    POSITION,
    ROW_ID,
    checked_file,
    execute_tasks,
    export_plan,
    read_request,
)
from ...scan import DataFileTask, InlinedRowsTask, LakeTable, default_array, to_expression
from .._core import spark_schema, spark_type, to_spark_table
from ..changes import feed_target
from ..parquet import (
    ROW_INDEX,
    abfs_mode_problem,
    hadoop_options,
    hadoop_url,
    parse_hadoop_version,
    spark_reads_exactly,
)
from ._filters_json import json_filter
from ._frames import arrow_stream

__all__ = ["METADATA_COLUMNS", "exact_rows", "scan_response", "spark_reach", "split_for_spark"]

# The metadata columns a scan may add after the table's (``SupportsMetadataColumns``), by
# which Spark's row-level changes name the rows they change, and the core's read column of
# each: the row id (never null), the data file's id and the row's position in it (both
# null for a row inlined in the catalog).
METADATA_COLUMNS = {
    "_ducklake_rowid": ROW_ID,
    "_ducklake_file_id": FILE_ID,
    "_ducklake_position": POSITION,
}


def scan_response(table: LakeTable, request: Mapping) -> tuple[dict, list[bytes]]:
    """``(header, [plan export, exact rows])`` for one scan of ``table``."""
    names = [c.name for c in table.columns]
    columns = request.get("columns")
    columns = names if columns is None else [str(c) for c in columns]
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InvalidOptionError(
            f"table {table.name} (snapshot {table.snapshot_id}) has no column(s) {unknown}"
        )
    metadata = [str(m) for m in request.get("metadata") or ()]
    odd = [m for m in metadata if m not in METADATA_COLUMNS]
    if odd:
        raise InvalidOptionError(
            f"table {table.name} has no metadata column(s) {odd}; they are "
            f"{', '.join(METADATA_COLUMNS)}"
        )
    prune = json_filter(request.get("filters") or (), table.columns)
    plan = table.scan_plan(filter=prune)
    spark_files, layouts, urls, options, exact, reasons = split_for_spark(
        table, plan, *spark_reach(request), row_ids=bool(metadata)
    )
    export = export_plan(plan, spark_files, layouts=layouts)
    rows = exact_rows(plan, exact, columns, table, metadata)
    stats = plan.stats
    header = {
        "table": plan.table,
        "snapshot": plan.snapshot_id,
        "columns": columns,
        "filter": None if prune is None else str(to_expression(prune)),
        "files_live": stats.files_total,
        "files_pruned": stats.files_skipped_by_stats + stats.files_skipped_by_partition,
        "files_spark": len(spark_files),
        "files_exact": sum(1 for t in exact if isinstance(t, DataFileTask)),
        "exact_rows": rows.num_rows,
        "exact_reasons": [f"{count} {why}" for why, count in reasons.items()],
        "rows": sum(t.record_count for t in plan.tasks if isinstance(t, DataFileTask))
        + sum(t.rows.num_rows for t in plan.tasks if isinstance(t, InlinedRowsTask)),
        "bytes": sum(t.file.size or 0 for t in plan.tasks if isinstance(t, DataFileTask)),
        "hadoop_urls": urls,
        "hadoop_options": options,
    }
    if metadata:  # (Spark computes a file's row ids from its first one and the position)
        header["row_id_starts"] = [t.row_id_start for t in spark_files]
    return header, [export, arrow_stream(rows)]


def spark_reach(request: Mapping) -> tuple[frozenset[str] | None, tuple[int, ...] | None]:
    """The Hadoop schemes and version the JVM said it has (``None``: not told)."""
    schemes = request.get("hadoop_schemes")
    hadoop = request.get("hadoop_version")
    return (
        None if schemes is None else frozenset(schemes),
        None if hadoop is None else parse_hadoop_version(str(hadoop)),
    )


def reads_exactly(column) -> bool:
    """Whether Spark's Parquet reader returns the column exactly: a type of
    ``spark_reads_exactly``, or a struct, list or map of such (the catalog's scan maps files
    by their top-level columns, so nested columns of the table's own layout read as they
    are; a file whose nested fields differ is read exactly by the planner)."""
    if column.type_name in ("struct", "list", "map"):
        return bool(column.children) and all(reads_exactly(c) for c in column.children)
    return spark_reads_exactly(column.type_name)


def split_for_spark(
    table: LakeTable,
    plan,
    schemes: frozenset[str] | None,
    hadoop: tuple[int, ...] | None,
    *,
    row_ids: bool = False,
):
    """The tasks Spark reads (with layouts, Hadoop URLs and options) and the exact rest.

    ``schemes``: the Hadoop schemes the JVM has a connector for (``None``: any); files
    on another store are read exactly here. ``hadoop``: the JVM's Hadoop version
    (``None``: not told); files its connector cannot reach are read exactly here too.
    ``row_ids``: the scan wants each row's id, which Spark computes from the file's
    ``row_id_start`` and the row's position; files that hold their rows' ids (an update's
    new rows) are read exactly here.
    """
    columns = table.columns
    types_ok = all(reads_exactly(c) for c in columns)
    reserved = any(c.name == ROW_INDEX for c in columns)
    spark_files, layouts, urls, exact = [], [], [], []
    options: dict[str, str] = {}
    reasons: Counter[str] = Counter()
    for task in plan.tasks:
        if not isinstance(task, DataFileTask):
            exact.append(task)
            continue
        why = _not_spark(task, types_ok, reserved, table)
        layout = None
        if why is None:
            what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
            checked = checked_file(task, plan.storage, columns, what)  # raises our typed error
            layout = checked.layout
            why = _layout_problem(layout, columns)
            if why is None and row_ids and (checked.row_ids or task.row_id_start is None):
                why = "files holding their rows' ids, for a row-level change"
        store = None
        url = None
        if why is None:
            store = _store_options(task.file.url, plan.storage)
            if store is None:
                why = "files on a store whose options Spark's connector cannot take"
            elif hadoop is not None and abfs_mode_problem(store, hadoop) is not None:
                why = "files on an Azure Blob endpoint, which this Hadoop's ABFS cannot reach"
        if why is None:
            url = _hadoop_url(task.file.url, plan.storage)
            scheme = url.split(":", 1)[0]
            if schemes is not None and scheme != "file" and scheme not in schemes:
                why = f"files on {scheme}://, whose Hadoop connector this Spark lacks"
        if why is not None:
            reasons[why] += 1
            exact.append(task)
            continue
        options.update(store)
        spark_files.append(task)
        layouts.append(layout)
        urls.append(url)
    return spark_files, layouts, urls, options, exact, reasons


def _not_spark(task: DataFileTask, types_ok: bool, reserved: bool, table) -> str | None:
    if not types_ok:
        odd = [c.type_name for c in table.columns if not reads_exactly(c)]
        return f"files of a table with types Spark's reader changes ({', '.join(odd)})"
    if task.encryption_key is not None:
        return "encrypted files"
    if task.name_mapping is not None:
        return "files without field ids (read by a name mapping)"
    if task.deletes is not None and reserved:
        return f"files with deletes in a table with a column named {ROW_INDEX}"
    return None


def _layout_problem(layout, columns) -> str | None:
    """Why Spark's reader cannot read a file of ``layout`` as the table, or ``None``."""
    if layout is None:
        return "files whose columns need a conversion"
    if layout.current:
        return None
    if layout.snapshot_column is not None:
        return "merged files holding rows of later snapshots"
    read_types = dict(layout.read)
    for source, column in zip(layout.sources, columns, strict=True):
        if source.physical is None:
            if default_array(column, 1)[0].as_py() is not None:
                return "files written before a column with a default was added"
            continue
        if source.cast:
            return "files of an older, narrower column type"
        physical = read_types[source.physical]
        if spark_type(physical, column.name) != spark_type(column.arrow_type, column.name):
            return "files whose column types differ from the table's"
    return None


def _store_options(url: str, storage) -> dict[str, str] | None:
    if parse_location(url).scheme == "file":
        return {}
    return hadoop_options(url, storage)


def _hadoop_url(url: str, storage) -> str:
    location = parse_location(url)
    if location.scheme == "file":
        return "file://" + location.path
    return hadoop_url(url, storage)


def exact_rows(plan, tasks, columns, table, metadata=()) -> pa.Table:
    """The rows of ``tasks`` read by the exact reader, as the Arrow types Spark expects,
    with the ``metadata`` columns (:data:`METADATA_COLUMNS`) after the table's."""
    by_name = {f.name: f for f in spark_schema(table.columns).fields}
    fields = [by_name[n] for n in columns] + [StructField(m, LongType()) for m in metadata]
    target, _ = feed_target(StructType(fields))
    if not tasks:
        return target.empty_table()
    request = read_request(plan, columns, with_positions=bool(metadata))
    schema = pa.schema([plan.table_schema.field(n) for n in columns])
    rows = [_with_metadata(b, schema, metadata) for b in execute_tasks(plan, tasks, request)]
    if metadata:
        schema = pa.schema([*schema, *(pa.field(m, pa.int64()) for m in metadata)])
    return to_spark_table(pa.Table.from_batches(rows, schema=schema), target)


def _with_metadata(batch: pa.RecordBatch, schema: pa.Schema, metadata) -> pa.RecordBatch:
    """A batch of the exact reader as the table's ``schema`` and the ``metadata`` columns."""
    data = batch.select(schema.names)
    if data.schema != schema:
        data = data.cast(schema)
    if not metadata:
        return data
    arrays = [*data.columns] + [
        batch.column(METADATA_COLUMNS[m]).cast(pa.int64()) for m in metadata
    ]
    return pa.RecordBatch.from_arrays(arrays, names=[*schema.names, *metadata])
