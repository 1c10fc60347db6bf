"""The DataFusion hook: a ``pyarrow.dataset.Dataset`` that DataFusion can scan.

Contract with ``datafusion.catalog.Table(dataset)`` (datafusion 55; guarded by
``tests/provider/test_contract.py``):

* ``dataset.schema`` gives the table schema.
* ``dataset.scanner(columns=[...], filter=expr)`` is asked for ``projected_schema`` at plan
  time; it must not read data.
* ``dataset.get_fragments(filter)`` is called once per scan with the pushed-down filter;
  DataFusion makes one partition per fragment.
* per partition, ``fragment.scanner(schema, columns=[...], filter=expr, batch_size=n)``
  then ``.projected_schema`` and ``.to_batches()``. Filters that convert to pyarrow are
  treated as **exact** by DataFusion, so every fragment applies the filter itself.
  ``count(*)`` asks for ``columns=[]``: zero-column batches that carry row counts.

The base class constructor is not called (it would need a C++ dataset); only the methods
above are provided.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import remembered_for_datafusion
from ..read import execute_tasks, read_request
from ..scan import ScanPlan, ScanTask
from ._pyarrow_filter import filter_of

__all__ = ["DuckLakeDataset", "DuckLakeFragment", "DuckLakeScanner", "partition_count"]


def partition_count() -> int:
    """Partitions of a scan: one per core (each reads its own group of tasks)."""
    return max(1, os.cpu_count() or 1)


class DuckLakeScanner:
    """Produces the batches of one fragment (or only its schema, at plan time).

    ``filter`` is the scan's ``Filter``, or DataFusion's pyarrow expression, read as one
    (``_pyarrow_filter``); an expression that cannot be read exactly is applied as given, to rows read with every column
    (DataFusion takes every pushed filter as exact): slower, never wrong.
    """

    def __init__(self, plan: ScanPlan, tasks: tuple[ScanTask, ...], columns, filter) -> None:
        self._plan = plan
        self._tasks = tasks
        self._unread = None
        found = filter  # the scan's own Filter (the exact scan's), or DataFusion's expression
        if isinstance(filter, pc.Expression):
            found = filter_of(filter, plan.table_schema)
        if filter is not None and found is None:
            self._unread = filter
            output = columns if columns is not None else plan.table_schema.names
            self._request = read_request(plan, plan.table_schema.names)
            self._output = list(output)
        else:
            self._request = read_request(plan, columns, found)
            self._output = list(self._request.output)
        self.projected_schema = pa.schema([plan.table_schema.field(n) for n in self._output])

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        schema = self.projected_schema
        with (
            remembered_for_datafusion()
        ):  # DataFusion receives our errors as text: see errors.typed()
            for batch in execute_tasks(self._plan, self._tasks, self._request):
                if self._unread is not None:
                    rows = pa.Table.from_batches([batch]).filter(self._unread)
                    yield from rows.select(self._output).cast(schema).to_batches()
                    continue
                yield batch if batch.schema.equals(schema) else batch.cast(schema)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)


class DuckLakeFragment:
    """One DataFusion partition: a group of scan tasks of the same plan."""

    def __init__(self, plan: ScanPlan, tasks: tuple[ScanTask, ...]) -> None:
        self.plan = plan
        self.tasks = tasks

    def scanner(self, schema=None, columns=None, filter=None, batch_size=None, **_ignored):
        # batch_size is ignored on purpose: ~128k-row batches cut the hand-off cost.
        return DuckLakeScanner(self.plan, self.tasks, columns, filter)

    def __repr__(self) -> str:
        return (
            f"DuckLakeFragment({self.plan.table}@{self.plan.snapshot_id}, tasks={len(self.tasks)})"
        )


class DuckLakeDataset(ds.Dataset):
    """A DuckLake table as a pyarrow Dataset, planned lazily per scan."""

    def __init__(self, table) -> None:
        self._table = table
        self.last_plan: ScanPlan | None = None

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    def scanner(self, columns=None, filter=None, **_ignored):
        empty = ScanPlan(
            table=self._table.name,
            catalog="",
            snapshot_id=self._table.snapshot_id,
            columns=self._table.columns,
            projection=None,
            filter=None,
            storage=None,
            tasks=(),
        )
        return DuckLakeScanner(empty, (), columns, filter)

    def get_fragments(self, filter: pc.Expression | None = None):
        found = None if filter is None else filter_of(filter, self._table.schema)
        with (
            remembered_for_datafusion()
        ):  # a filter not read prunes nothing; the scanner applies it
            plan = self._table.scan_plan(filter=found)
        self.last_plan = plan
        groups = plan.groups(partition_count())
        return [DuckLakeFragment(plan, group) for group in groups] or [DuckLakeFragment(plan, ())]

    def __repr__(self) -> str:
        return f"DuckLakeDataset({self._table!r})"
