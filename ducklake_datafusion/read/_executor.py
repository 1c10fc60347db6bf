"""Execute scan tasks: the one code path DataFusion, Spark and plain Python share.

``execute_tasks(plan, tasks, columns, filter)`` yields Arrow record batches with exactly
the requested columns, the filter applied, deletes and later-snapshot rows removed.
Files whose layout matches the table are read together in one Parquet scan; the others
one by one; inlined rows from their in-plan table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from ..errors import InvalidOptionError, UnsupportedTypeError
from ..pathres import parse_location
from ..scan import (
    DataFileTask,
    Filter,
    InlinedRowsTask,
    ScanPlan,
    ScanTask,
    columns_of,
    refusal,
    to_expression,
)
from ._reader import (
    FILE_ID,
    POSITION,
    ROW_ID,
    ReadRequest,
    deleted_rows,
    read_data_file,
    scan_clean_files,
)

__all__ = ["execute_plan", "execute_tasks", "read_request"]

# Types whose Parquet representation a plain by-name Parquet scan reads as the table type.
_FAST_TYPES = frozenset(
    [
        "boolean",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "varchar",
        "blob",
        "date",
        "time",
        "timestamp",
        "timestamp_us",
        "timestamp_ms",
        "timestamp_ns",
        "timestamptz",
    ]
)


def _fast_type(type_name: str) -> bool:
    name = type_name.lower()
    return name in _FAST_TYPES or name.startswith("decimal(")


def read_request(
    plan: ScanPlan,
    columns: Sequence[str] | None = None,
    filter: Filter | None = None,
    *,
    with_row_ids: bool = False,
    with_positions: bool = False,
) -> ReadRequest:
    """Resolve output columns and filter columns against the plan's table columns.

    ``columns``/``filter`` default to the plan's own projection and filter; the filter
    becomes the pyarrow expression the readers apply (NaN ordered as DuckDB orders it).
    """
    if columns is None:
        columns = plan.projection if plan.projection is not None else [c.name for c in plan.columns]
    if filter is None:
        filter = plan.filter
    by_name = {c.name: c for c in plan.columns}
    unknown = [name for name in columns if name not in by_name]
    if unknown:
        raise InvalidOptionError(
            f"table {plan.table} has no column(s) {unknown}; columns are {list(by_name)}"
        )
    filter_names = columns_of(filter)
    expression = None
    if filter is not None:
        expression = to_expression(filter, _float_columns(plan, filter_names))
    needed = set(columns) | filter_names
    materialise = tuple(c for c in plan.columns if c.name in needed)
    return ReadRequest(
        table=plan.table,
        snapshot=plan.snapshot_id,
        columns=materialise,
        output=tuple(columns),
        filter=expression,
        filter_columns=filter_names,
        storage=plan.storage,
        with_row_ids=with_row_ids or with_positions,
        with_positions=with_positions,
        table_columns=plan.columns,
    )


def _float_columns(plan: ScanPlan, names: frozenset[str]) -> frozenset[str]:
    """DataFusion and DuckDB order NaN above all numbers; pyarrow's kernels do not."""
    floats = ("float32", "float64")
    return frozenset(
        c.name for c in plan.columns if c.name in names and c.type_name.lower() in floats
    )


def execute_tasks(
    plan: ScanPlan, tasks: Iterable[ScanTask], request: ReadRequest
) -> Iterator[pa.RecordBatch]:
    """Yield the rows of ``tasks`` as batches shaped by ``request``."""
    tasks = list(tasks)
    if not request.output and request.filter is None and not request.with_row_ids:
        tasks = yield from _counted_from_catalog(tasks, request)
    fast_ok = not request.with_row_ids and all(_fast_type(c.type_name) for c in request.columns)
    fast_ok = fast_ok and not request.with_positions
    clean: dict[tuple[str, str], list[DataFileTask]] = {}
    others: list[ScanTask] = []
    for task in tasks:
        if fast_ok and isinstance(task, DataFileTask) and task.fast:
            location = parse_location(task.file.url)
            clean.setdefault((location.scheme, location.authority), []).append(task)
        else:
            others.append(task)
    for group in clean.values():
        yield from scan_clean_files(group, request)
    for task in others:
        if isinstance(task, InlinedRowsTask):
            yield from _inlined_batches(task, request)
        else:
            yield from read_data_file(task, request)


def _counted_from_catalog(tasks: list[ScanTask], request: ReadRequest):
    """``count(*)`` without a filter: rows of data files from the catalog, not the files.

    Exact for a file whose rows all belong to snapshots up to the one read (no rows of
    later snapshots inside): its live rows are ``record_count`` minus its deleted
    positions (delete files are small, decoded once per process, and checked against the
    catalog's ``delete_count``). DuckDB answers ``count(*)`` from the same numbers. Other
    files are returned to be read.
    """
    rest, rows = [], 0
    for task in tasks:
        if (
            isinstance(task, DataFileTask)
            and task.last_snapshot is not None
            and task.last_snapshot <= request.snapshot
        ):
            rows += task.record_count - len(deleted_rows(task, request))
        else:
            rest.append(task)
    if rows:  # one zero-column batch: 10,000 files cost DataFusion one batch, not 10,000
        yield pa.RecordBatch.from_arrays([pa.nulls(rows)], names=["_"]).select([])
    return rest


def _inlined_batches(task: InlinedRowsTask, request: ReadRequest) -> Iterator[pa.RecordBatch]:
    rows = task.rows
    refused = refusal(rows, [*request.output, *request.filter_columns])
    if refused is not None:
        raise UnsupportedTypeError(
            f"inlined rows of table {request.table} (snapshot {request.snapshot}): {refused}"
        )
    if request.filter is not None:
        rows = rows.filter(request.filter)
    names = list(request.output) + ([ROW_ID] if request.with_row_ids else [])
    rows = rows.select(names)
    if request.with_positions:  # a row of the catalog has no data file, no position
        for name in (POSITION, FILE_ID):
            rows = rows.append_column(name, pa.nulls(rows.num_rows, pa.int64()))
        names += [POSITION, FILE_ID]
    if rows.num_rows == 0:
        return
    if not names:
        yield pa.RecordBatch.from_arrays([pa.nulls(rows.num_rows)], names=["_"]).select([])
        return
    yield from rows.combine_chunks().to_batches()


def execute_plan(
    plan: ScanPlan, columns: Sequence[str] | None = None, *, with_row_ids: bool = False
) -> pa.Table:
    """Run every task of a plan in this process and collect an Arrow table."""
    request = read_request(plan, columns, with_row_ids=with_row_ids)
    schema = (
        plan.output_schema
        if columns is None
        else pa.schema([plan.table_schema.field(n) for n in request.output])
    )
    if with_row_ids:
        schema = schema.append(pa.field(ROW_ID, pa.int64()))
    batches = [
        b.cast(schema) if b.schema != schema else b
        for b in execute_tasks(plan, plan.tasks, request)
    ]
    return pa.Table.from_batches(batches, schema=schema)
