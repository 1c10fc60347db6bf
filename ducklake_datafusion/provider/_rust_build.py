"""A ``_rust.LakeProvider`` built from a scan plan: the files checked, the plan exported.

Every file is checked against the catalog first (``_file_layouts.checked_layout``), as on
every path; the files the scan reads, with their deleted positions and layouts, and the
inlined rows go to the extension as the engine-neutral plan export (``read.export_plan``,
the bytes the Spark catalog's JVM code reads too), with what is not in the plan (object-
store paths, catalog bounds, rows read exactly) beside it in one
``_rust_contract.ProviderSpec``; the extension checks both on arrival.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InternalError, InvalidOptionError
from ..read import export_plan
from ..scan import DataFileTask, FilePruner, ScanPlan
from ._file_layouts import checked_layout, table_signature
from ._rust_contract import NULL_COUNT_TYPE, ProviderSpec, bounds_names
from ._rust_stores import object_path, store_options, store_readable

__all__ = ["MIN_PARTITIONS", "build_provider"]

# Partitions a Rust scan is split into at least, whatever the session's target_partitions.
MIN_PARTITIONS = max(2, os.cpu_count() or 2)


def build_provider(
    rust, table, plan: ScanPlan, files_meta=None, *, bounds=False, read_rest=None, locating=False
):
    """A ``_rust.LakeProvider`` over the plan's data files and inlined rows, or ``None``.

    Each file is checked against the catalog (``_file_layouts.checked_layout``). A file the scan would
    not read exactly (another store, a layout it does not map exactly) makes this return
    ``None``, unless ``read_rest(plan, tasks)`` is given: then those files are read by it
    and scanned from memory with the inlined rows. ``bounds``: hand over the files'
    catalog bounds (from ``files_meta``, the plan's ``TableFiles``), with which ``scan()``
    prunes (not needed when the plan is already pruned by the query's filter); ``True``
    for every column, a set of names for those columns only.

    ``locating``: the provider's table has each row's location after the table's columns
    (``_change_target.LOCATION_COLUMNS``, computed in Rust: ``rust/src/locations.rs``);
    the inlined rows and the files whose row ids the scan does not compute go to
    ``read_rest``, which then gives them with their locations.
    """
    files = [t for t in plan.tasks if isinstance(t, DataFileTask)]
    rest = []
    if locating:
        if read_rest is None:
            raise InternalError(f"a locating scan of {plan.table} needs read_rest")
        rest = [t for t in plan.tasks if not isinstance(t, DataFileTask)]
    if read_rest is not None:  # files the Rust store does not read go to read_rest
        rest += [t for t in files if not store_readable(t)]
        files = [t for t in files if store_readable(t)]
    storage = store_options(files, plan)
    if storage is None:
        if read_rest is None:
            return None
        files, rest, storage = [], rest + files, {"kind": "local"}
    signature = table_signature(table)
    native, layouts = [], []
    for task in files:
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        layout = checked_layout(task, plan, table.columns, signature, what, locating=locating)
        if layout is None:
            if read_rest is None:
                return None  # a conversion the scan would not do exactly: the exact path
            rest.append(task)
            continue
        native.append(task)
        layouts.append(layout)
    # the engine-neutral export of the kept files (read/_export), as the JVM reads it
    # (a locating scan's inlined rows come from read_rest, located)
    exported = replace(plan, tasks=tuple(native)) if locating else plan
    export = export_plan(exported, native, layouts=layouts)
    bounds_table = None
    if bounds:
        columns = table.columns
        if bounds is not True:
            columns = [c for c in columns if c.name in bounds]
        bounds_table = _bounds_table(columns, files_meta, native)
    spec = ProviderSpec(
        plan=export,
        paths=tuple(object_path(t.file.url) for t in native),
        bounds=bounds_table,
        rows=tuple(read_rest(plan, rest)) if rest else (),
        storage=storage,
        min_partitions=MIN_PARTITIONS,
        pruned=0 if bounds is True else plan.stats.files_total - plan.stats.files_scanned,
        read_exactly=sum(isinstance(t, DataFileTask) for t in rest),
        row_id_starts=tuple(t.row_id_start for t in native) if locating else None,
    )
    try:
        return rust.LakeProvider(spec)
    except rust.StoreConfigError as exc:  # the message names no option value
        raise InvalidOptionError(
            f"table {plan.table} (snapshot {plan.snapshot_id}) of {plan.catalog}: {exc}; "
            "check the lake's storage options (an access key id needs its secret key, an "
            "Azure account key is base64 text)"
        ) from None
    except rust.ContractError as exc:  # a value built here off the contract: our bug
        raise InternalError(
            f"table {plan.table} (snapshot {plan.snapshot_id}) of {plan.catalog}: the Rust "
            f"scan refused what the Python side handed it ({exc}); this is a bug of "
            "ducklake-datafusion, please report it"
        ) from exc


def _bounds_table(columns, files_meta, files: list[DataFileTask]) -> pa.RecordBatch | None:
    """Bounds per column (``_rust_contract.bounds_schema``), one row per file of ``files``:
    the planner's safe statistics, narrowed by partition values (``None``: none known)."""
    pruner = FilePruner(None, columns, files_meta)
    order = pc.index_in(
        pa.array([t.data_file_id for t in files], pa.int64()), value_set=pruner.file_ids
    )
    arrays, names = [], []
    for column in columns:
        if column.children:
            continue
        parts = []
        if files_meta.stats is not None and files_meta.stats.num_rows:
            parts.append(pruner.stat_bounds(column))
        if files_meta.partition_values is not None and files_meta.partition_values.num_rows:
            parts.append(pruner.partition_bounds(column))
        parts = [p for p in parts if p is not None]
        if not parts:
            continue
        try:
            low, high, nulls = _narrowed(parts, column.arrow_type)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            continue  # no bounds is always correct
        if low is None:
            continue
        names += bounds_names(column.name)
        arrays += [_array(low.take(order)), _array(high.take(order)), _array(nulls.take(order))]
    if not arrays:
        return None
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _array(values) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _narrowed(parts, wanted: pa.DataType):
    """The tightest of several safe bounds (each null where unknown), in the column's own
    type; ``(None, None, None)`` when a bound cannot be given in that type exactly."""
    low = high = None
    nulls = None
    for part in parts:
        lo, hi = part.low, part.high
        if lo.type != wanted:
            if not (pa.types.is_string(lo.type) and pa.types.is_large_string(wanted)):
                return None, None, None  # e.g. FLOAT bounds decoded as double: not exact
            lo, hi = lo.cast(wanted), hi.cast(wanted)
        low = lo if low is None else pc.max_element_wise(low, lo, skip_nulls=True)
        high = hi if high is None else pc.min_element_wise(high, hi, skip_nulls=True)
        count = pa.array(part.nulls, pa.float64(), from_pandas=True)  # NaN -> null
        nulls = count if nulls is None else pc.coalesce(nulls, count)
    return low, high, nulls.cast(NULL_COUNT_TYPE)
