"""``DuckLakeTable``: one table pinned at one snapshot; the entry point for scans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import MetadataBackend, metadata
from ..catalog._models import ColumnEntry, SnapshotInfo, TableEntry
from ..errors import InvalidOptionError
from ..pathres import StorageOptions, resolve_data_path
from ..types import ColumnSpec, arrow_schema
from ._executor import execute_plan
from ._plan import ScanPlan
from ._planner import build_scan_plan
from ._pruning import stats_columns

__all__ = ["DuckLakeTable", "LakeAccess"]


@dataclass(frozen=True)
class LakeAccess:
    """How to reach a lake: catalog backend, data-path override and storage options."""

    backend: MetadataBackend
    storage: StorageOptions
    data_path_override: str | None = None


class DuckLakeTable:
    """A DuckLake table at a fixed snapshot.

    The snapshot, columns and Arrow schema are fixed when the table is resolved, so every
    scan of this object (one SQL query) reads the same snapshot. Files, deletes and inlined
    rows are read when a scan is planned, all in one catalog transaction.
    """

    def __init__(
        self,
        access: LakeAccess,
        entry: TableEntry,
        snapshot: SnapshotInfo,
        column_entries: tuple[ColumnEntry, ...],
        columns: tuple[ColumnSpec, ...],
    ) -> None:
        self._access = access
        self.entry = entry
        self.snapshot = snapshot
        self._column_entries = column_entries
        self.columns = columns
        self.schema: pa.Schema = arrow_schema(columns)
        self.catalog = None  # the DuckLakeCatalog that resolved it (files(), history())

    @property
    def name(self) -> str:
        return f"{self.entry.schema_name}.{self.entry.table_name}"

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id

    def __repr__(self) -> str:
        return f"DuckLakeTable({self.name!r}, snapshot={self.snapshot_id}, columns={self.schema.names})"

    def scan_plan(
        self, filter: pc.Expression | None = None, columns: Sequence[str] | None = None
    ) -> ScanPlan:
        """Plan a scan: live files pruned with ``filter``, deletes, inlined rows.

        Args:
            filter: a ``pyarrow.compute.Expression`` over table column names; executors
                apply it exactly, and the planner skips files that cannot match it.
            columns: output columns (default: all).
        """
        if filter is not None and not isinstance(filter, pc.Expression):
            raise InvalidOptionError(
                f"filter for {self.name} must be a pyarrow.compute.Expression, got {type(filter).__name__}"
            )
        if columns is not None:
            unknown = [c for c in columns if c not in self.schema.names]
            if unknown:
                raise InvalidOptionError(
                    f"table {self.name} has no column(s) {unknown}; columns are {self.schema.names}"
                )
        backend = self._access.backend
        with backend.session() as session:
            settings = metadata.read_settings(session, backend.description)
            files = metadata.read_table_files(
                session,
                self.entry,
                self.snapshot_id,
                stats_columns=stats_columns(filter, self.columns),
                with_partitions=filter is not None,
            )
        data_path = self._access.data_path_override or settings.get("data_path", "")
        return build_scan_plan(
            table=self.entry,
            catalog=backend.description,
            snapshot_id=self.snapshot_id,
            column_entries=self._column_entries,
            columns=self.columns,
            files=files,
            data_path=resolve_data_path(data_path),
            storage=self._access.storage,
            inlined_values_are_text=backend.inlined_values_are_text,
            filter=filter,
            projection=columns,
        )

    def to_arrow(
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table:
        """Read the table (or a projection / filtered part of it) into memory."""
        return execute_plan(self.scan_plan(filter=filter, columns=columns))

    def to_pandas(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None):
        """Read into a ``pandas.DataFrame`` (needs the ``[pandas]`` extra)."""
        from ..dataframes import to_pandas

        return to_pandas(self, columns, filter)

    def to_polars(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None):
        """Read into a ``polars.DataFrame`` (needs the ``[polars]`` extra)."""
        from ..dataframes import to_polars

        return to_polars(self, columns, filter)

    def scan_polars(self):
        """A lazy ``polars.LazyFrame``: projection and predicates reach the planner."""
        from ..dataframes import scan_polars

        return scan_polars(self)

    def files(self) -> pa.Table:
        """Data files live at this table's snapshot with their delete files
        (``ducklake_list_files()``)."""
        from ._lake_info import list_files_table
        from ._timetravel import SnapshotRef

        ref = SnapshotRef(snapshot_id=self.snapshot_id)
        return list_files_table(self._lake(), self.entry.schema_name, self.entry.table_name, ref)

    def history(self) -> pa.Table:
        """The snapshots that changed this table (its creation, renames, writes,
        compaction), as rows of ``ducklake_snapshots()``."""
        from ._lake_info import table_history_table

        return table_history_table(self._lake(), self.entry.table_id)

    def _lake(self):
        if self.catalog is None:
            raise InvalidOptionError(
                f"table {self.name} was not resolved through a DuckLakeCatalog; use "
                "DuckLakeCatalog(...).table(schema, name)"
            )
        return self.catalog

    def dataset(self):
        """The ``pyarrow.dataset.Dataset`` adapter DataFusion scans."""
        from ._dataset import DuckLakeDataset

        return DuckLakeDataset(self)
