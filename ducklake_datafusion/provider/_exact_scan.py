"""The exact reader behind a Rust provider (``_rust.ExactProvider``, ``rust/src/exact.rs``).

DataFusion inserts only into a provider that says how (``TableProvider::insert_into``), and
the exact path's read-only form, datafusion-python's ``Table(pyarrow dataset)``, cannot be
given a writer. So a table DataFusion may insert into but the native scan does not read
(nested types, time, UUID, a ``native=False`` catalog) is handed over as a Rust provider
whose ``scan()`` calls :class:`ExactScan`: the same plan and the same reader as the
``pyarrow.dataset`` adapter (``_dataset``), one partition per group of tasks. The
predicates Rust sends only prune files; DataFusion filters the rows again.
"""

from __future__ import annotations

from ..errors import remembered_for_datafusion
from ._dataset import DuckLakeScanner, partition_count
from ._rust import extension
from ._rust_lazy import predicate_filter
from ._writable import InsertWriter, WritableProvider

__all__ = ["ExactScan", "exact_writable_table"]


def exact_writable_table(table, ctx=None):
    """``datafusion.catalog.Table`` over the exact reader that DataFusion may insert into."""
    from datafusion.catalog import Table

    provider = extension().ExactProvider(table.name, table.schema, ExactScan(table))
    provider = WritableProvider(provider, InsertWriter(table))
    return Table(provider, ctx) if ctx is not None else Table(provider)


class ExactScan:
    """``scan(predicates, columns, limit)`` of one table at one snapshot: a reader
    factory per partition (the limit is DataFusion's to apply; nothing is read early)."""

    def __init__(self, table) -> None:
        self._table = table  # a DuckLakeTable, resolved at the snapshot it reads

    def __call__(self, predicates, columns, limit) -> list[_PartitionReader]:
        filter = predicate_filter(predicates)
        with (
            remembered_for_datafusion()
        ):  # DataFusion receives our errors as text: see errors.typed()
            plan = self._table.scan_plan(filter=filter)
        groups = plan.groups(partition_count()) or [()]
        return [_PartitionReader(plan, tasks, columns, filter) for tasks in groups]


class _PartitionReader:
    """One partition: called on its reader thread, it returns the batches' reader."""

    def __init__(self, plan, tasks, columns, filter) -> None:
        self._plan = plan
        self._tasks = tasks
        self._columns = columns
        self._filter = filter

    def __call__(self):
        with remembered_for_datafusion():
            scanner = DuckLakeScanner(self._plan, self._tasks, self._columns, self._filter)
        return scanner.to_reader()
