"""The Rust scan with its files chosen by the query's filters (``_rust.LazyProvider``).

``DuckLakeSchema.table()`` runs before DataFusion knows the query's filters. Handing the
Rust provider every live file there (``_rust.rust_provider``) costs the whole file list on
each new lake version: Python work that grows with the table, paid after every commit even
by a query that reads two files. So ``table()`` returns a provider holding only
the table's name and schema, and its ``scan()`` calls :class:`Resolver` with the filters
it was pushed, translated to simple predicates (``rust/src/lazy.rs``). The resolver plans
the snapshot with those predicates as the scan's ``Filter`` (the planner prunes by catalog
statistics and partition values, from the metadata memoised per lake version and
refreshed incrementally after commits, or, with nothing memoised, from the files the
catalog query itself keeps: ``catalog._file_cut``) and builds a ``LakeProvider`` over the
files kept only: their checks, deleted positions and layouts are the only per-file work.

What the Rust scan cannot read exactly among the kept files (a layout it would not map
exactly, found in the file's footer; a name object-store paths spell differently) is read
by the exact Python reader, with the same filter, and handed over with the inlined rows;
DataFusion applies every filter again. ``count(*)`` without a filter is answered from the
catalog (``read.catalog_count``: summed ``record_count`` minus the deleted positions of
the files with deletes) when every file's rows all belong to the snapshot, as the exact
reader does.

Tables whose files the Rust scan cannot read as a whole (encrypted files, name-mapped
files, files outside the table's directory) are decided in ``table()`` from one aggregate
query, without reading a file row or opening a file, and keep the eager provider
(``_rust``) or the next path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from ..catalog import metadata
from ..errors import remembered_for_datafusion
from ..read import catalog_count, execute_plan
from ..scan import (
    And,
    Column,
    Compare,
    Filter,
    In,
    IsNull,
    Or,
    all_of,
    literal_of,
    table_directory,
)
from . import _rust_build
from ._owned_cache import MISSING, OwnedCache
from ._rust_stores import plain_location, store_kind

if TYPE_CHECKING:
    from .._rust import Predicate

__all__ = [
    "ALL_STATISTICS_FILES",
    "Resolver",
    "forget_resolved",
    "lazy_parts",
    "predicate_filter",
]

# Resolved providers, by catalog backend, then (the table's key in ``_rust._built``,
# predicates): a repeated query of an unchanged snapshot plans nothing again. One
# process-wide budget, oldest out, so that many snapshots and filters of large tables
# cannot pile up providers (a provider holds ~150 bytes per file). The backend is held
# weakly and a provider holds no table: a dropped catalog takes its entries.
_resolved = OwnedCache(max_entries=256, max_cost=1_000_000)

# Tables of at most this many live files hand the Rust scan every column's statistics.
ALL_STATISTICS_FILES = 10_000


def forget_resolved(backend) -> None:
    """Drop every provider resolved through ``backend`` (its catalog was closed)."""
    _resolved.forget(backend)


def predicate_filter(predicates: Iterable[Predicate | tuple[Predicate, ...]]) -> Filter | None:
    """The predicates ``rust/src/lazy.rs`` sends, as one scan ``Filter`` (or None).

    Each is a ``_rust.Predicate`` (``rust/src/predicates.rs``): ``kind`` ``"cmp"`` (with
    ``op``), ``"between"``, ``"in"``, ``"null"`` or ``"not_null"``, a ``column`` and its
    ``values``, one-element pyarrow arrays; or a tuple of them, the alternatives of an
    ``OR``. The filter only prunes files: DataFusion applies the query's own filters to
    every row the scan returns.
    """
    parts = []
    for predicate in predicates:
        try:
            if isinstance(predicate, tuple):  # an OR: every alternative, or none of it
                parts.append(Or(tuple(_predicate(p) for p in predicate)))
            else:
                parts.append(_predicate(predicate))
        except (pa.ArrowException, TypeError, ValueError, KeyError, IndexError):
            continue  # a predicate that cannot be spelled prunes nothing: still correct
    return all_of(parts)


def _predicate(predicate: Predicate) -> Filter:
    column = Column(predicate.column)
    kind, values = predicate.kind, predicate.values
    if kind == "cmp":
        return Compare(_COMPARISONS[predicate.op], column, literal_of(values[0][0]))
    if kind == "between":
        low, high = values
        return And(
            (
                Compare(">=", column, literal_of(low[0])),
                Compare("<=", column, literal_of(high[0])),
            )
        )
    if kind == "in":
        # SQL's IN never matches a NULL row, whatever the list holds: nulls skipped
        literals = [literal_of(v.cast(values[0].type)[0]) for v in values]
        return In(column, tuple(lit.value for lit in literals), literals[0].type, skip_nulls=True)
    if kind == "null":
        return IsNull(column)
    if kind == "not_null":
        return IsNull(column, negated=True)
    raise ValueError(f"unknown predicate {kind!r}")


# by ``_rust.Predicate.COMPARISONS`` (tests/provider/test_rust_contract.py)
_COMPARISONS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _key(predicates: Iterable[Predicate | tuple[Predicate, ...]]) -> tuple:
    """A hashable spelling of the predicates (values with their types)."""
    return tuple(_key(p) if isinstance(p, tuple) else _key_of(p) for p in predicates)


def _key_of(p: Predicate) -> tuple:
    return (p.kind, p.column, p.op, tuple((str(v.type), tuple(v.to_pylist())) for v in p.values))


class Resolver:
    """``scan()``'s call-back for one table at one snapshot: predicates in, a
    ``_rust.LakeProvider`` over the files they cannot exclude out (or, for ``count(*)``,
    the table's row count from the catalog)."""

    def __init__(self, rust, table, table_key: tuple) -> None:
        self._rust = rust
        self._table = table
        self._table_key = table_key  # the snapshot's key among the memoised providers

    def __call__(self, predicates: list[Predicate], count_only: bool):
        # DataFusion receives our errors as text: remembered for errors.typed()
        with remembered_for_datafusion():
            return self._resolve(predicates, count_only)

    def _resolve(self, predicates: list[Predicate], count_only: bool):
        if count_only:
            rows = catalog_count(self._table)
            if rows is not None:
                return rows
        backend = self._table.lake.backend
        key = (self._table_key, _key(predicates))
        found = _resolved.get(backend, key)
        if found is not MISSING:
            return found
        table = self._table
        # every column's statistics for DataFusion's optimizer (rust/src/statistics.rs),
        # except on tables of many files, whose planning reads only the filter's
        # (bench/metadata.py: a catalog read and memo per statistics column)
        stats = "all" if _summary(table)[1].files <= ALL_STATISTICS_FILES else "filter"
        plan, files = table.scan_plan_and_files(filter=predicate_filter(predicates), stats=stats)
        # every column's bounds: the plan is pruned already, but with them the provider
        # decides whether an integer lookup (``=``, ``IN``) is selective enough to
        # evaluate inside the Parquet decoder (``FileBounds::point_lookup``) and gives
        # DataFusion's optimizer null counts and bounds (``rust/src/statistics.rs``)
        provider = _rust_build.build_provider(
            self._rust,
            table,
            plan,
            files,
            bounds={c.name for c in table.columns} or False,
            read_rest=_read_exactly,
        )
        if provider is not None:
            _resolved.put(backend, key, provider, cost=plan.stats.files_scanned)
        return provider


def _read_exactly(plan, tasks) -> list[pa.RecordBatch]:
    """Rows of ``tasks`` (with the plan's filter) by the exact reader, in the table's
    schema, into memory: only files whose footer showed a layout the Rust scan does not
    map exactly come here (tables the catalog already rules out take the eager path)."""
    if not tasks:
        return []
    rows = execute_plan(replace(plan, tasks=tuple(tasks), projection=None))
    return rows.cast(plan.table_schema).to_batches()


def _summary(table):
    """The catalog's settings and ``FileSummary`` of the snapshot's live files (one
    aggregate query, memoised per lake version: no file row is read)."""
    backend = table.lake.backend
    with backend.session() as session:
        settings = metadata.read_settings(session, backend.description)
        summary = metadata.file_summary_of(session, table.entry, table.snapshot_id)
    return settings, summary


def lazy_parts(table) -> tuple[str, pa.Schema] | None:
    """The name and schema of a ``_rust.LazyProvider`` for ``table`` (its resolver is made
    per query: :class:`Resolver`), or ``None`` when the catalog says the Rust scan cannot
    read it as a whole (decided from one aggregate query, no file opened).

    Files with names object-store paths spell differently are found among the files a
    scan keeps, and read exactly there (``build_provider``'s ``read_rest``).
    """
    settings, summary = _summary(table)
    if summary.encrypted or summary.mapped:
        return None  # encrypted or name-mapped files: the eager checks decide
    if not summary.all_relative:
        return None  # files outside the table's directory: the eager checks decide
    directory = table_directory(table.lake.data_path(settings), table.entry)
    if store_kind(directory, table.lake.storage) is None or not plain_location(directory):
        return None  # every file would be read exactly: the eager checks decide
    name = f"{table.entry.schema_name}.{table.entry.table_name}"
    schema = pa.schema([pa.field(c.name, c.arrow_type) for c in table.columns])  # the plan's
    return name, schema
