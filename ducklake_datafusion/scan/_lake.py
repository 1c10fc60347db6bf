"""``Lake`` and ``LakeTable``: the engine-neutral handles on a lake and on one of its tables.

Both engines start a read the same way: open the catalog, settle which snapshot to read,
find the table at that snapshot and plan a scan. That sequence lives here, with no engine
imported, so that Spark reads through the same code as DataFusion without importing
DataFusion. ``provider.DuckLakeCatalog`` (a DataFusion ``CatalogProvider``) and
``provider.DuckLakeTable`` build on these two; ``spark/`` uses them directly.

A ``Lake`` is frozen: its backend, storage options and pin are fixed when it is opened,
so a handle shared between threads (Spark planning workers, DataFusion's scans) always
names the same lake and snapshot rule. A ``LakeTable`` is frozen too: its snapshot,
columns and Arrow schema are fixed when it is resolved, so every scan of it reads the
same snapshot.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from ..catalog import (
    ColumnEntry,
    ColumnSpec,
    MetadataBackend,
    SnapshotInfo,
    TableEntry,
    TableFiles,
    arrow_schema,
    build_column_tree,
    metadata,
    open_backend,
)
from ..errors import InvalidOptionError, SnapshotNotFoundError, TableNotFoundError
from ..pathres import StorageOptions, resolve_data_path
from ._catalog_cut import catalog_cut
from ._count import RowCount, catalog_row_count
from ._filter import FILTER_TYPES, Filter, bind, columns_of
from ._lookup import require_table
from ._plan import ScanPlan
from ._planner import build_scan_plan
from ._pruning import stats_columns
from ._timetravel import SUFFIX_HELP, SnapshotRef, resolve_snapshot_ref, split_table_suffix

__all__ = ["Lake", "LakeTable"]


@dataclass(frozen=True)
class Lake:
    """How to reach a lake and which snapshot to read: backend, data path, storage, pin.

    Open one with :meth:`open` (which validates the arguments as ``DuckLakeCatalog``
    does). ``snapshot``/``snapshot_time`` pin every table to one snapshot; with neither,
    each resolution reads the latest snapshot at that moment.
    """

    backend: MetadataBackend
    storage: StorageOptions
    data_path_override: str | None = None
    snapshot: int | None = None
    snapshot_time: _dt.datetime | None = None

    @classmethod
    def open(
        cls,
        metadata: str,
        *,
        data_path: str | None = None,
        snapshot: int | None = None,
        snapshot_time: _dt.datetime | None = None,
        storage_options: Mapping[str, object] | None = None,
        metadata_schema: str | None = None,
    ) -> Lake:
        """Open the catalog database; arguments as for ``DuckLakeCatalog``."""
        if snapshot is not None and snapshot_time is not None:
            raise InvalidOptionError("pass either snapshot or snapshot_time, not both")
        if snapshot is not None and (isinstance(snapshot, bool) or not isinstance(snapshot, int)):
            raise InvalidOptionError(f"snapshot must be an integer snapshot id, got {snapshot!r}")
        if snapshot_time is not None and not isinstance(snapshot_time, _dt.datetime):
            raise InvalidOptionError(f"snapshot_time must be a datetime, got {snapshot_time!r}")
        backend = open_backend(metadata, metadata_schema)
        storage = StorageOptions.from_user(storage_options)
        return cls(backend, storage, data_path, snapshot, snapshot_time)

    @property
    def description(self) -> str:
        return self.backend.description

    @property
    def pinned(self) -> bool:
        """Whether a snapshot id or time is fixed (else each read takes the latest)."""
        return self.snapshot is not None or self.snapshot_time is not None

    def data_path(self, settings: Mapping[str, str]) -> str:
        """The resolved data path: the override, else the catalog's ``data_path`` setting."""
        return resolve_data_path(self.data_path_override or settings.get("data_path", ""))

    def resolve_snapshot(self, session) -> SnapshotInfo:
        """The snapshot this lake reads now (pinned id/time, else the latest)."""
        if not self.pinned:
            return metadata.latest_snapshot(session)
        ref = SnapshotRef(snapshot_id=self.snapshot, time=self.snapshot_time)
        return resolve_snapshot_ref(session, ref, self.description)

    def snapshot_id(self) -> int:
        """The snapshot id a read planned now would read."""
        with self.backend.session() as session:
            metadata.read_settings(session, self.description)
            return self.resolve_snapshot(session).snapshot_id

    def list_schema_names(self) -> set[str]:
        """The schemas at this lake's snapshot; raises the catalog's error if unreadable."""
        with self.backend.session() as session:
            metadata.read_settings(session, self.description)
            snap = self.resolve_snapshot(session)
            return {s.schema_name for s in metadata.list_schemas(session, snap.snapshot_id)}

    def table(self, schema: str, table: str) -> LakeTable:
        """Resolve ``schema.table`` at this lake's snapshot; raises TableNotFoundError."""
        with self.backend.session() as session:
            metadata.read_settings(session, self.description)
            snap = self.resolve_snapshot(session)
            entry = require_table(session, self.description, snap.snapshot_id, schema, table)
            entries = metadata.read_columns(session, entry.table_id, snap.snapshot_id)
        return LakeTable(self, entry, snap, entries, build_column_tree(entries))

    def table_at(self, schema: str, table: str, ref: SnapshotRef) -> LakeTable:
        """Resolve ``schema.table`` at the snapshot ``ref`` names, whatever the pin."""
        with self.backend.session() as session:
            metadata.read_settings(session, self.description)
            snap = resolve_snapshot_ref(session, ref, self.description)
            entry = require_table(
                session,
                self.description,
                snap.snapshot_id,
                schema,
                table,
                context=f" ({snap.snapshot_time.isoformat()}, asked for as @{ref})",
            )
            entries = metadata.read_columns(session, entry.table_id, snap.snapshot_id)
        return LakeTable(self, entry, snap, entries, build_column_tree(entries))

    def suffixed_table(self, schema: str, name: str) -> LakeTable | None:
        """Resolve ``table@snapshot`` in ``schema``; ``None`` if ``name`` has no suffix.

        Raises:
            InvalidOptionError: the suffix is neither ``v<id>`` nor an ISO timestamp.
            SnapshotNotFoundError: no such snapshot id, or the time is before the first one.
            TableNotFoundError: the table did not exist at that snapshot.
        """
        split = split_table_suffix(name)
        if split is None:
            return None
        base, ref = split
        if ref is None:
            raise InvalidOptionError(
                f"{self.description} has no table {schema}.{name}, and {name!r} is not a "
                f"valid time-travel name: {SUFFIX_HELP}"
            )
        return self.table_at(schema, base, ref)

    def suffixed_table_exists(self, schema: str, name: str) -> bool:
        """Whether ``table@snapshot`` resolves (any error means it does not)."""
        try:
            return self.suffixed_table(schema, name) is not None
        except (InvalidOptionError, SnapshotNotFoundError, TableNotFoundError):
            return False

    def close(self) -> None:
        """Release the catalog database now: its connections on every thread, a DuckDB
        file's private copy. Later reads raise ``CatalogClosedError``."""
        self.backend.close()


@dataclass(frozen=True, eq=False, repr=False)
class LakeTable:
    """A DuckLake table at a fixed snapshot; plans scans of that snapshot.

    The snapshot, columns and Arrow schema are fixed when the table is resolved, so every
    scan of this object reads the same snapshot. Files, deletes and inlined rows are read
    when a scan is planned, all in one catalog transaction. Compared by identity, like
    the catalog handles it came from.
    """

    lake: Lake
    entry: TableEntry
    snapshot: SnapshotInfo
    column_entries: tuple[ColumnEntry, ...]
    columns: tuple[ColumnSpec, ...]
    schema: pa.Schema = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", arrow_schema(self.columns))

    @property
    def name(self) -> str:
        return f"{self.entry.schema_name}.{self.entry.table_name}"

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, snapshot={self.snapshot_id}, "
            f"columns={self.schema.names})"
        )

    def init_args(self) -> dict[str, object]:
        """The constructor arguments, to rebuild this table as an engine's subclass."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(LakeTable) if f.init}

    def row_count_parts(self) -> RowCount | None:
        """What the snapshot's live rows are made of, from the catalog alone (summed record
        counts, inlined rows, the files with deletes), or ``None`` when some file holds
        rows of later snapshots (merged files: only reading tells). The exact count,
        deleted positions read, is ``read.count_rows(table)``."""
        return catalog_row_count(self)

    def scan_plan(
        self, filter: Filter | None = None, columns: Sequence[str] | None = None
    ) -> ScanPlan:
        """Plan a scan: live files pruned with ``filter``, deletes, inlined rows.

        Args:
            filter: a :class:`~ducklake_datafusion.scan.Filter` over the table's columns
                (by name or column id); executors apply it exactly, and the planner skips
                files that cannot match it.
            columns: output columns (default: all).
        """
        filter = self.bound_filter(filter)
        if columns is not None:
            unknown = [c for c in columns if c not in self.schema.names]
            if unknown:
                raise InvalidOptionError(
                    f"table {self.name} has no column(s) {unknown}; columns are {self.schema.names}"
                )
        return self.scan_plan_and_files(filter, columns)[0]

    def bound_filter(self, filter: Filter | None) -> Filter | None:
        """``filter`` checked against the table's columns, columns given by id named."""
        if filter is None:
            return None
        if not isinstance(filter, FILTER_TYPES):
            raise InvalidOptionError(
                f"filter for {self.name} must be a ducklake_datafusion.scan.Filter, "
                f"got {type(filter).__name__}"
            )
        try:
            filter = bind(filter, {c.column_id: c.name for c in self.columns})
        except KeyError as exc:
            raise InvalidOptionError(f"table {self.name} has no column id {exc.args[0]}") from None
        unknown = sorted(columns_of(filter) - set(self.schema.names))
        if unknown:
            raise InvalidOptionError(
                f"filter for {self.name} reads no column(s) {unknown}; columns are {self.schema.names}"
            )
        return filter

    def scan_plan_and_files(
        self,
        filter: Filter | None = None,
        columns: Sequence[str] | None = None,
        *,
        stats: str = "filter",
        with_partitions: bool | None = None,
    ) -> tuple[ScanPlan, TableFiles]:
        """:meth:`scan_plan` (arguments already checked) and the file rows it was planned
        from: the one entry point to a plan and its catalog facts, for every engine.

        Args:
            stats: whose column statistics the file rows carry: ``"filter"`` (the
                filter's columns, which the planner prunes with) or ``"all"`` (every
                column not of a nested type: for an engine that prunes at scan time).
            with_partitions: whether the file rows carry partition values (default:
                when there is a filter, or with ``stats="all"``).
        """
        if stats not in ("filter", "all"):
            raise InvalidOptionError(f"stats must be 'filter' or 'all', got {stats!r}")
        if stats == "all":
            wanted = [c.column_id for c in self.columns if not c.children]
        else:
            wanted = stats_columns(filter, self.columns)
        if with_partitions is None:
            with_partitions = filter is not None or stats == "all"
        backend = self.lake.backend
        with backend.session() as session:
            settings = metadata.read_settings(session, backend.description)
            files = metadata.read_table_files(
                session,
                self.entry,
                self.snapshot_id,
                stats_columns=wanted,
                with_partitions=with_partitions,
                cut=catalog_cut(filter, self.columns),
            )
        plan = build_scan_plan(
            table=self.entry,
            catalog=backend.description,
            snapshot_id=self.snapshot_id,
            column_entries=self.column_entries,
            columns=self.columns,
            files=files,
            data_path=self.lake.data_path(settings),
            storage=self.lake.storage,
            inlined_values_are_text=backend.inlined_values_are_text,
            filter=filter,
            projection=columns,
        )
        return plan, files
