"""The Rust scan: a table's snapshot handed to ``ducklake_datafusion._rust``.

``DuckLakeSchema.table()`` returns ``Table(provider, ctx)`` for every table whose files
the Rust provider reads exactly; DataFusion then calls the provider's ``scan()`` with the
query's projection, filters and limit (through ``datafusion-ffi``). Normally that
provider is a ``_rust.LazyProvider`` (``_rust_lazy``): its ``scan()`` asks the planner
for the files the query's filters cannot exclude and gets a ``LakeProvider`` over those
(:func:`build_provider`). Tables the catalog's file rows already rule out of that are
planned whole here (``_build``) and pruned in Rust. Either way the Python side hands
over plain facts as Arrow, in one ``_rust_contract.ProviderSpec`` (the shapes are defined
there and checked by the extension on arrival):

* the table's Arrow schema;
* one row per live data file: object-store path, size, footer size, record count and the
  sorted deleted positions (``read/_deletes``: every live delete file with per-position
  snapshots, inlined deletes, deletion vectors; each delete file decoded once per
  process), which the provider turns into Parquet row selections, so deleted rows are
  never decoded;
* for a whole snapshot (``_build``), per file and column, the bounds ``scan/_pruning``
  considers safe (truncated string maxima, NaN and TIMESTAMPTZ partitions already left
  out), with which ``scan()`` prunes files by the query's filters: no file-count limit;
* the inlined rows, scanned from memory beside the files;
* the store's options (local files; one S3 or GCS bucket or Azure container, with
  explicit credentials).

Each file is checked against the catalog first, as on every path (``read/_file_checks``:
row count, field ids, regular file of the catalog's size), from its footer parsed once
per process, and a damaged or missing file raises our typed error here, before DataFusion
sees the table. Providers are reused for later queries of the snapshot; then each file a
scan opens is checked again in Rust (``rust/src/checks.rs``) and a failed check fails the
query with our error class and message in DataFusion's error text. A table the provider
cannot read exactly (types DataFusion would decode differently, encrypted or name-mapped
files, lossy widenings, several buckets, credentials only the environment holds) is
read by the exact reader (``_dataset``); so, in a lazy provider's scan, are the kept
files it cannot read, scanned from memory beside the others.

The extension is built against one datafusion release (``_rust.DATAFUSION_VERSION``);
nothing checks the ABI across the FFI boundary, so :func:`extension` refuses any other
installed major with a clear error instead of crashing.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import metadata
from ..errors import InvalidOptionError, MissingDependencyError, UnsupportedFeatureError
from ..pathres import parse_location
from ..pathres._filesystems import _azure_kwargs, _gcs_kwargs, _s3_kwargs
from ..read._reader import deleted_positions_of
from ..scan import DataFileTask, InlinedRowsTask, ScanPlan
from ..scan._conform import default_array
from ..scan._planner import build_scan_plan
from ..scan._pruning import FilePruner
from ._file_layouts import SAFE_PATH, checked_layout, native_type, table_signature
from ._owned_cache import MISSING, OwnedCache
from ._rust_contract import NULL_COUNT_TYPE, ProviderSpec, bounds_names, file_table
from ._rust_lazy import Resolver, forget_resolved, lazy_parts

__all__ = ["extension", "forget_catalog", "rust_provider", "rust_table"]

# Partitions a Rust scan is split into at least, whatever the session's target_partitions.
MIN_PARTITIONS = max(2, os.cpu_count() or 2)

_LOCK = threading.Lock()
_EXTENSION = None


def extension():
    """The ``_rust`` module, after checking it matches the installed datafusion.

    Raises:
        MissingDependencyError: the extension was not built (an install without it).
        UnsupportedFeatureError: the installed datafusion has another major version than
            the one the extension was built with (mixing them would crash the process).
    """
    global _EXTENSION
    if _EXTENSION is not None:
        return _EXTENSION
    import datafusion

    try:
        from .. import _rust
    except ImportError as exc:
        raise MissingDependencyError(
            "the Rust extension ducklake_datafusion._rust is not built; reinstall the "
            "package (pip install ducklake-datafusion, or `make venv` in a clone)"
        ) from exc
    check_datafusion_version(datafusion.__version__, _rust.DATAFUSION_VERSION)
    _EXTENSION = _rust
    return _rust


def check_datafusion_version(installed: str, built: str) -> None:
    """Refuse a datafusion whose major differs from the one the extension was built with."""
    if _major(installed) != _major(built):
        raise UnsupportedFeatureError(
            f"ducklake_datafusion's Rust scan was built for datafusion {built} but "
            f"datafusion {installed} is installed; a table provider crossing major "
            f"versions would crash the process. Install datafusion>={_major(built)},"
            f"<{_major(built) + 1} (pip install 'datafusion=={_major(built)}.*')"
        )


def _major(version: str) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return -1


# ------------------------------------------------------------------------------------------
# Which tables


@dataclass(frozen=True)
class _Eager:
    """A provider over every live file of the snapshot (plain data: it holds no table)."""

    provider: object  # _rust.LakeProvider


@dataclass(frozen=True)
class _Lazy:
    """What a ``_rust.LazyProvider`` of the snapshot is made of, but its resolver: the
    resolver holds the table (and so its catalog), so it is made afresh per query."""

    name: str
    schema: pa.Schema


# Providers by catalog backend, then (table incl. its UUID, snapshot, columns, data path,
# storage): a snapshot's files never change, so planning happens once. A later query
# re-checks each file its scan opens, in Rust (``rust/src/checks.rs``: a local file's size,
# the footer's row count), instead of stat-ing every file of the table on each lookup
# (30 ms for 10,000 files). The backend is held weakly (``OwnedCache``): a dropped catalog
# takes its entries, and nothing here keeps its connections open.
_built = OwnedCache(max_entries=128)


def forget_catalog(backend) -> None:
    """Drop every provider planned through ``backend`` (its catalog was closed)."""
    _built.forget(backend)
    forget_resolved(backend)


def rust_table(table, ctx=None):
    """``datafusion.catalog.Table`` over the Rust provider, or ``None`` (not exact here)."""
    from datafusion.catalog import Table

    provider = rust_provider(table)
    if provider is None:
        return None
    return Table(provider, ctx) if ctx is not None else Table(provider)


def rust_provider(table):
    """The provider of ``table``'s snapshot (``_rust.LazyProvider``, else an eager
    ``_rust.LakeProvider``), or ``None`` (the Rust scan does not read it exactly)."""
    rust = extension()
    if not readable_columns(table):
        return None
    lake = table.lake
    key = (
        lake.data_path_override,
        lake.storage,
        table.entry,
        table.snapshot,
        table_signature(table),
    )
    built = _built.get(lake.backend, key)
    if built is MISSING:
        lazy = lazy_parts(table)
        built = _Lazy(*lazy) if lazy is not None else _build(rust, table)
        _built.put(lake.backend, key, built)
    if built is None:
        return None
    if isinstance(built, _Lazy):
        return rust.LazyProvider(built.name, built.schema, Resolver(rust, table, key))
    return built.provider


def _build(rust, table) -> _Eager | None:
    if not readable_columns(table):
        return None
    plan, files_meta = _full_plan(table)
    provider = build_provider(rust, table, plan, files_meta, bounds=True)
    return None if provider is None else _Eager(provider)


def readable_columns(table) -> bool:
    """Whether every column has a type the Rust scan decodes exactly (and no name of the
    provider's own hidden columns, ``_ducklake_*``)."""
    return all(native_type(c.type_name) for c in table.columns) and not any(
        c.name.startswith("_ducklake_") for c in table.columns
    )


def build_provider(rust, table, plan: ScanPlan, files_meta=None, *, bounds=False, read_rest=None):
    """A ``_rust.LakeProvider`` over the plan's data files and inlined rows, or ``None``.

    Each file is checked against the catalog (``_file_layouts.checked_layout``). A file the scan would
    not read exactly (another store, a layout it does not map exactly) makes this return
    ``None``, unless ``read_rest(plan, tasks)`` is given: then those files are read by it
    and scanned from memory with the inlined rows. ``bounds``: hand over the files'
    catalog bounds (from ``files_meta``, the plan's ``TableFiles``), with which ``scan()``
    prunes (not needed when the plan is already pruned by the query's filter); ``True``
    for every column, a set of names for those columns only.
    """
    files = [t for t in plan.tasks if isinstance(t, DataFileTask)]
    inlined = [t for t in plan.tasks if isinstance(t, InlinedRowsTask)]
    rest = []
    if read_rest is not None:  # files the Rust store does not read go to read_rest
        rest = [t for t in files if not _store_readable(t)]
        files = [t for t in files if _store_readable(t)]
    storage = _store_options(files, plan)
    if storage is None:
        if read_rest is None:
            return None
        files, rest, storage = [], rest + files, {"kind": "local"}
    signature = table_signature(table)
    native, layouts = [], []
    for task in files:
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        layout = checked_layout(task, plan, table.columns, signature, what)
        if layout is None:
            if read_rest is None:
                return None  # a conversion the scan would not do exactly: the exact path
            rest.append(task)
            continue
        native.append(task)
        layouts.append(layout)
    by_id = {}
    if not all(layout.current for layout in layouts):
        # older layouts: columns matched by field id, missing ones filled with defaults
        by_id["field_ids"] = {c.name: c.column_id for c in table.columns}
        by_id["defaults"] = pa.RecordBatch.from_arrays(
            [default_array(c, 1).cast(c.arrow_type) for c in table.columns],
            schema=plan.table_schema,
        )
        if any(layout.snapshot_column is not None for layout in layouts):
            by_id["snapshot"] = plan.snapshot_id  # merged files: drop later rows
    bounds_table = None
    if bounds:
        columns = table.columns
        if bounds is not True:
            columns = [c for c in columns if c.name in bounds]
        bounds_table = _bounds_table(columns, files_meta, native)
    names = [c.name for c in table.columns]
    batches = []
    for task in inlined:
        rows = task.rows.select(names).cast(plan.table_schema)
        batches.extend(rows.to_batches())
    if rest:
        batches.extend(read_rest(plan, rest))
    spec = ProviderSpec(
        table=plan.table,
        schema=plan.table_schema,
        files=_file_table(plan, native),
        bounds=bounds_table,
        inlined=tuple(batches),
        storage=storage,
        min_partitions=MIN_PARTITIONS,
        **by_id,
        pruned=0 if bounds is True else plan.stats.files_total - plan.stats.files_scanned,
        read_exactly=len(rest),
    )
    try:
        return rust.LakeProvider(spec)
    except rust.StoreConfigError as exc:  # the message names no option value
        raise InvalidOptionError(
            f"table {plan.table} (snapshot {plan.snapshot_id}) of {plan.catalog}: {exc}; "
            "check the lake's storage options (an access key id needs its secret key, an "
            "Azure account key is base64 text)"
        ) from None


def _full_plan(table) -> tuple[ScanPlan, object]:
    """The unfiltered plan of the snapshot, with the statistics of every column (the
    provider prunes with them at scan time) and the partition values."""
    backend = table.lake.backend
    stats = [c.column_id for c in table.columns if not c.children]
    with backend.session() as session:
        settings = metadata.read_settings(session, backend.description)
        files = metadata.read_table_files(
            session, table.entry, table.snapshot_id, stats_columns=stats, with_partitions=True
        )
    plan = build_scan_plan(
        table=table.entry,
        catalog=backend.description,
        snapshot_id=table.snapshot_id,
        column_entries=table.column_entries,
        columns=table.columns,
        files=files,
        data_path=table.lake.data_path(settings),
        storage=table.lake.storage,
        inlined_values_are_text=backend.inlined_values_are_text,
    )
    return plan, files


def _store_options(files, plan: ScanPlan) -> dict[str, str] | None:
    """The provider's store: local files, or one bucket of S3 or GCS, or one Azure
    container; ``None`` if several, or a file the provider does not read (encrypted,
    name-mapped)."""
    locations = set()
    for task in files:
        if not _store_readable(task):
            return None
        location = parse_location(task.file.url)
        locations.add((location.scheme, location.authority, location.account))
    return _options(locations, plan.storage)


def _store_readable(task: DataFileTask) -> bool:
    """Whether the Rust store reads the file as it is: not encrypted, not name-mapped, at
    a path object-store paths spell as it is."""
    if task.encryption_key is not None or task.name_mapping is not None:
        return False
    return plain_location(task.file.url)


def plain_location(url: str) -> bool:
    """Whether object-store paths spell ``url``'s path as it is (``SAFE_PATH``)."""
    return bool(SAFE_PATH.match("/" + parse_location(url).path.lstrip("/")))


def store_kind(url: str, storage) -> dict[str, str] | None:
    """The provider's store for files under ``url`` (as :func:`_store_options`)."""
    location = parse_location(url)
    return _options({(location.scheme, location.authority, location.account)}, storage)


def _options(locations: set, storage) -> dict[str, str] | None:
    """Store options for files at ``locations`` (scheme, bucket or container, account);
    ``None`` where the Rust store would not authenticate as the exact path does (ambient
    credentials, anonymous S3, service principals): those tables take the next path."""
    schemes = {scheme for scheme, _, _ in locations}
    if not schemes or schemes == {"file"}:
        return {"kind": "local"}
    if len(locations) != 1:
        return None
    scheme, bucket, account = next(iter(locations))
    if scheme == "s3":
        return _s3_options(bucket, storage)
    if scheme == "gs":
        return _gcs_options(bucket, storage)
    if scheme == "az":
        return _azure_options(bucket, account, storage)
    return None


def _s3_options(bucket: str, storage) -> dict[str, str] | None:
    kwargs = _s3_kwargs(storage)
    if kwargs.get("anonymous") or kwargs.get("force_virtual_addressing"):
        return None
    if not kwargs.get("access_key"):
        return None  # ambient credentials: the exact path resolves them as pyarrow does
    options = {"kind": "s3", "bucket": bucket, "region": kwargs["region"]}
    if "endpoint_override" in kwargs:
        options["endpoint"] = f"{kwargs['scheme']}://{kwargs['endpoint_override']}"
        if kwargs["scheme"] == "http":
            options["allow_http"] = "true"
    elif kwargs.get("scheme") == "http":
        return None
    for ours, theirs in (
        ("access_key_id", "access_key"),
        ("secret_access_key", "secret_key"),
        ("session_token", "session_token"),
    ):
        if kwargs.get(theirs):
            options[ours] = kwargs[theirs]
    return options


def _gcs_options(bucket: str, storage) -> dict[str, str] | None:
    kwargs = _gcs_kwargs(storage)
    options = {"kind": "gcs", "bucket": bucket}
    if kwargs.get("access_token"):
        options["token"] = kwargs["access_token"]
    elif kwargs.get("anonymous"):
        options["anonymous"] = "true"
    else:
        return None  # ambient credentials: the exact path resolves them as pyarrow does
    if "endpoint_override" in kwargs:
        options["endpoint"] = f"{kwargs['scheme']}://{kwargs['endpoint_override']}"
        if kwargs["scheme"] == "http":
            options["allow_http"] = "true"
    return options


def _azure_options(container: str, account: str, storage) -> dict[str, str] | None:
    from ..pathres import StorageLocation

    location = StorageLocation("az", container, container, f"az://{container}", account)
    kwargs = _azure_kwargs(location, storage)
    options = {"kind": "azure", "container": container, "account": kwargs["account_name"]}
    if kwargs.get("account_key"):
        options["access_key"] = kwargs["account_key"]
    elif kwargs.get("sas_token"):
        options["sas_token"] = kwargs["sas_token"]
    else:
        return None  # service principals, managed identities: the exact path
    if "blob_storage_authority" in kwargs:
        scheme, host = kwargs["blob_storage_scheme"], kwargs["blob_storage_authority"]
        account_name = options["account"]
        # an emulator (Azurite) names the account in the path; a cloud endpoint in the host
        path_style = not host.startswith(account_name + ".")
        options["endpoint"] = f"{scheme}://{host}" + (f"/{account_name}" if path_style else "")
        if scheme == "http":
            options["allow_http"] = "true"
    return options


def _object_path(url: str) -> str:
    """The file's path in the provider's store: the local path without its leading
    slash, or the key within the bucket."""
    location = parse_location(url)
    if location.scheme in ("s3", "gs", "az"):
        return location.path[len(location.authority) + 1 :]
    return location.path.lstrip("/")


def _file_table(plan: ScanPlan, files: list[DataFileTask]) -> pa.RecordBatch:
    deleted = []
    for task in files:
        if task.deletes is None:
            deleted.append(None)
            continue
        positions = deleted_positions_of(task, plan.table, plan.snapshot_id, plan.storage)
        deleted.append(positions if len(positions) else None)
    return file_table(
        paths=[_object_path(t.file.url) for t in files],
        urls=[t.file.url for t in files],
        sizes=[t.file.size for t in files],
        footer_sizes=[t.file.footer_size for t in files],
        record_counts=[t.record_count for t in files],
        deleted=deleted,
    )


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
            parts.append(pruner._stat_bounds(column))
        if files_meta.partition_values is not None and files_meta.partition_values.num_rows:
            parts.append(pruner._partition_bounds(column))
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
