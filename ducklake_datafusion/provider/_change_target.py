"""The rows a DELETE, UPDATE or MERGE may change, as a table DataFusion queries.

A row change is planned as a query over the target table in the user's own session (their
tables, functions and subqueries in the conditions), so the target must say where each of
its rows lives: :class:`ChangeTarget` is the table at one snapshot with three more
columns, ``rowid`` (DuckLake's row id), ``__ducklake_file_id`` and
``__ducklake_position`` (the data file and the physical position in it; both null for a
row inlined in the catalog). It is a ``pyarrow.dataset`` as ``_dataset`` describes the
contract, planned once for the snapshot the change is based on: a filter DataFusion
pushes prunes files by their statistics as a read does, and is applied exactly.

Where the Rust scan reads the table, :meth:`ChangeTarget.native_table` is the same table
as a Rust provider (``build_provider``'s ``locating``): the files whose row ids are
``row_id_start`` plus the position are read there, each row numbered as it is decoded
(``rust/src/locations.rs``); the others and the inlined rows are read here, located as
above, and scanned from memory beside them. Both give the same rows and locations
(``tests/write/test_located_rows.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import remembered_for_datafusion
from ..read import FILE_ID, POSITION, ROW_ID, execute_tasks, read_request
from ..scan import ScanPlan, ScanTask, balanced_groups
from ._dataset import partition_count
from ._pyarrow_filter import filter_of

__all__ = ["LOCATION_COLUMNS", "ChangeTarget"]

LOCATION_COLUMNS = (ROW_ID, FILE_ID, POSITION)
_LOCATION_FIELDS = [pa.field(name, pa.int64()) for name in LOCATION_COLUMNS]


class _Scanner:
    def __init__(self, target: ChangeTarget, tasks, columns, filter) -> None:
        self._target = target
        self._tasks = tasks
        table_schema = target.table.schema
        names = list(columns) if columns is not None else list(target.schema.names)
        found = filter_of(filter, table_schema) if isinstance(filter, pc.Expression) else None
        self._unread = filter if filter is not None and found is None else None
        if self._unread is not None:  # e.g. on rowid: every column read, filtered here
            table_columns = list(table_schema.names)
        else:
            table_columns = [n for n in names if n in table_schema.names]
        self._request = read_request(target.plan, table_columns, found, with_positions=True)
        self._names = names
        self.projected_schema = pa.schema([target.schema.field(n) for n in names])

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        with (
            remembered_for_datafusion()
        ):  # DataFusion receives our errors as text: see errors.typed()
            for batch in execute_tasks(self._target.plan, self._tasks, self._request):
                if self._unread is not None:
                    batch = pa.Table.from_batches([batch]).filter(self._unread)
                    if batch.num_rows == 0:
                        continue
                    batch = batch.combine_chunks().to_batches()[0]
                out = batch.select(self._names)
                if not out.schema.equals(self.projected_schema):
                    out = out.cast(self.projected_schema)
                yield out

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)


class _Fragment:
    def __init__(self, target: ChangeTarget, tasks: tuple[ScanTask, ...]) -> None:
        self._target = target
        self._tasks = tasks

    def scanner(self, schema=None, columns=None, filter=None, batch_size=None, **_ignored):
        return _Scanner(self._target, self._tasks, columns, filter)


class ChangeTarget(ds.Dataset):
    """The table ``table`` (a ``LakeTable`` at the change's base snapshot) with each row's
    location, as a ``pyarrow.dataset`` DataFusion scans."""

    def __init__(self, table, plan: ScanPlan | None = None, files=None) -> None:
        self.table = table
        # the unpruned plan at the table's snapshot (the row change's own, when given),
        # and the file rows it was planned from (with the bounds a native scan prunes by)
        if plan is None:
            plan, files = table.scan_plan_and_files(stats="all")
        self.plan: ScanPlan = plan
        self.files = files
        self._schema = pa.schema(list(table.schema) + _LOCATION_FIELDS)

    def native_table(self, ctx):
        """The target as a ``datafusion.catalog.Table`` over the Rust scan, planned in
        ``ctx``, or ``None`` where the Rust scan does not read the table's columns."""
        from datafusion.catalog import Table

        from ._rust import extension, readable_columns
        from ._rust_build import build_provider

        if not readable_columns(self.table):
            return None
        provider = build_provider(
            extension(),
            self.table,
            self.plan,
            self.files,
            bounds=self.files is not None,
            read_rest=self._located,
            locating=True,
        )
        return None if provider is None else Table(provider, ctx)

    def _located(self, plan: ScanPlan, tasks) -> list[pa.RecordBatch]:
        """The rows of ``tasks`` with their locations, read exactly, in this schema."""
        return list(_Scanner(self, tuple(tasks), None, None).to_batches())

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def scanner(self, columns=None, filter=None, **_ignored):
        return _Scanner(self, self.plan.tasks, columns, filter)

    def get_fragments(self, filter: pc.Expression | None = None):
        found = None if filter is None else filter_of(filter, self.table.schema)
        tasks = self.plan.tasks
        if found is not None:  # prune by statistics as a read would; the scanner filters
            with remembered_for_datafusion():
                tasks = self.table.scan_plan(filter=found).tasks
        groups = balanced_groups(tasks, partition_count())
        return [_Fragment(self, group) for group in groups] or [_Fragment(self, ())]

    def __repr__(self) -> str:
        return f"ChangeTarget({self.table!r})"
