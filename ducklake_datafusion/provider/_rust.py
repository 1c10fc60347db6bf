"""The Rust scan: a table's snapshot handed to ``ducklake_datafusion._rust``.

``DuckLakeSchema.table()`` returns ``Table(provider, ctx)`` for every table whose files
the Rust provider reads exactly; DataFusion then calls the provider's ``scan()`` with the
query's projection, filters and limit (through ``datafusion-ffi``). Normally that
provider is a ``_rust.LazyProvider`` (``_rust_lazy``): its ``scan()`` asks the planner
for the files the query's filters cannot exclude and gets a ``LakeProvider`` over those
(``_rust_build.build_provider``). Tables the catalog's file rows already rule out of that are
planned whole here (``_build``) and pruned in Rust. Either way the Python side hands
over plain facts as Arrow, in one ``_rust_contract.ProviderSpec`` (the shapes are defined
there and checked by the extension on arrival), made from the engine-neutral plan export
(``read.export_plan``) and the catalog bounds:

* the table's Arrow schema;
* one row per live data file: object-store path, size, footer size, record count and the
  sorted deleted positions (``read/_deletes``: every live delete file with per-position
  snapshots, inlined deletes, deletion vectors; each delete file decoded once per
  process), which the provider turns into Parquet row selections, so deleted rows are
  never decoded, or, when they are scattered (runs under 96 rows on average), into a
  bitmap of live rows: the file is decoded whole and its deleted rows dropped
  (``rust/src/drop_deleted.rs``), which costs less than following such a selection;
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

import threading
from dataclasses import dataclass

import pyarrow as pa

from ..errors import MissingDependencyError, UnsupportedFeatureError
from ._file_layouts import native_type, table_signature
from ._owned_cache import MISSING, OwnedCache
from ._rust_build import build_provider
from ._rust_lazy import Resolver, forget_resolved, lazy_parts

__all__ = ["extension", "forget_catalog", "rust_provider", "rust_table"]

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
# (a cost that grows with the table, paid by queries that read two files). The backend is held weakly (``OwnedCache``): a dropped catalog
# takes its entries, and nothing here keeps its connections open.
_built = OwnedCache(max_entries=128)


def forget_catalog(backend) -> None:
    """Drop every provider planned through ``backend`` (its catalog was closed)."""
    _built.forget(backend)
    forget_resolved(backend)


def rust_table(table, ctx=None, *, writable: bool = False):
    """``datafusion.catalog.Table`` over the Rust provider, or ``None`` (not exact here).

    ``writable``: DataFusion may insert into it (``_writable``).
    """
    from datafusion.catalog import Table

    provider = rust_provider(table)
    if provider is None:
        return None
    if writable:
        from ._writable import InsertWriter, WritableProvider

        provider = WritableProvider(provider, InsertWriter(table))
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
    # the unfiltered plan, with the statistics of every column (the provider prunes with
    # them at scan time) and the partition values
    plan, files_meta = table.scan_plan_and_files(stats="all")
    provider = build_provider(rust, table, plan, files_meta, bounds=True)
    return None if provider is None else _Eager(provider)


def readable_columns(table) -> bool:
    """Whether every column has a type the Rust scan decodes exactly (and no name of the
    provider's own hidden columns, ``_ducklake_*``)."""
    return all(native_type(c.type_name) for c in table.columns) and not any(
        c.name.startswith("_ducklake_") for c in table.columns
    )
