"""``DuckLakeCatalog`` and ``DuckLakeSchema``: DataFusion catalog providers over a lake.

Nothing is cached: every ``schema_names()``/``schema()``/``table_names()``/``table()`` call
reads the catalog database, so tables created, renamed or dropped by other processes are
seen by the next query. Each resolved table pins one snapshot (the catalog's pinned one,
else the latest at that moment), so one query reads one consistent snapshot.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from datafusion.catalog import CatalogProvider, SchemaProvider, Table

from ..catalog import MetadataBackend, metadata, open_backend
from ..catalog._models import SnapshotInfo
from ..errors import InvalidOptionError, SnapshotNotFoundError, TableNotFoundError
from ..pathres import StorageOptions
from ..types import build_column_tree
from ._lookup import find_table, require_table
from ._table import DuckLakeTable, LakeAccess
from ._timetravel import (
    SnapshotRef,
    resolve_snapshot_ref,
    suffixed_table,
    suffixed_table_exists,
)

__all__ = ["DuckLakeCatalog", "DuckLakeSchema"]


class DuckLakeCatalog(CatalogProvider):
    """A DuckLake lake as a DataFusion catalog.

    Args:
        metadata: the catalog database, as DuckDB's ``ATTACH 'ducklake:...'`` takes it: a
            DuckDB file path, ``sqlite:path``, ``postgres:<libpq keywords>`` or a
            ``postgresql://`` URL; an optional ``ducklake:`` prefix is accepted.
        data_path: overrides the catalog's ``data_path`` (like ``OVERRIDE_DATA_PATH``).
        snapshot: pin every table to this snapshot id (default: latest at query time).
        snapshot_time: pin every table to the latest snapshot at or before this time.
        storage_options: object-storage options (see ``pathres.StorageOptions``).
    """

    def __init__(
        self,
        metadata: str,
        *,
        data_path: str | None = None,
        snapshot: int | None = None,
        snapshot_time: _dt.datetime | None = None,
        storage_options: Mapping[str, object] | None = None,
    ) -> None:
        if snapshot is not None and snapshot_time is not None:
            raise InvalidOptionError("pass either snapshot or snapshot_time, not both")
        if snapshot is not None and (isinstance(snapshot, bool) or not isinstance(snapshot, int)):
            raise InvalidOptionError(f"snapshot must be an integer snapshot id, got {snapshot!r}")
        if snapshot_time is not None and not isinstance(snapshot_time, _dt.datetime):
            raise InvalidOptionError(f"snapshot_time must be a datetime, got {snapshot_time!r}")
        self._metadata = metadata
        backend: MetadataBackend = open_backend(metadata)
        self._access = LakeAccess(backend, StorageOptions.from_user(storage_options), data_path)
        self._snapshot = snapshot
        self._snapshot_time = snapshot_time

    # -- lake-level API ---------------------------------------------------------------

    @property
    def backend(self) -> MetadataBackend:
        return self._access.backend

    @property
    def description(self) -> str:
        return self._access.backend.description

    def __repr__(self) -> str:
        pin = ""
        if self._snapshot is not None:
            pin = f", snapshot={self._snapshot}"
        elif self._snapshot_time is not None:
            pin = f", snapshot_time={self._snapshot_time.isoformat()}"
        return f"DuckLakeCatalog({self.description!r}{pin})"

    def at(self, *, snapshot: int | None = None, snapshot_time: _dt.datetime | None = None):
        """A copy of this catalog pinned to a snapshot id or time (register it separately)."""
        if (snapshot is None) == (snapshot_time is None):
            raise InvalidOptionError("at() needs exactly one of snapshot= or snapshot_time=")
        return DuckLakeCatalog(
            self._metadata,
            data_path=self._access.data_path_override,
            snapshot=snapshot,
            snapshot_time=snapshot_time,
            storage_options=self._access.storage,
        )

    def forget_metadata(self) -> None:
        """Drop the table metadata memoised from the catalog; the next query re-reads it.

        Never needed for correctness (the memos are checked against the lake version on
        every query); frees their memory, and lets benchmarks time planning as it is after a
        commit. The validated global settings stay (they expire on their own).
        """
        cache = self._access.backend.cache
        for key in [k for k in cache if k != "settings"]:
            del cache[key]

    def resolve_snapshot(self, session) -> SnapshotInfo:
        """The snapshot this catalog reads now (pinned id/time, else the latest)."""
        if self._snapshot is None and self._snapshot_time is None:
            return metadata.latest_snapshot(session)
        ref = SnapshotRef(snapshot_id=self._snapshot, time=self._snapshot_time)
        return resolve_snapshot_ref(session, ref, self.description)

    def snapshot_id(self) -> int:
        """The snapshot id a query planned now would read."""
        backend = self._access.backend
        with backend.session() as session:
            metadata.read_settings(session, backend.description)
            return self.resolve_snapshot(session).snapshot_id

    def table(self, schema: str, table: str) -> DuckLakeTable:
        """Resolve ``schema.table`` at this catalog's snapshot; raises TableNotFoundError."""
        backend = self._access.backend
        with backend.session() as session:
            metadata.read_settings(session, backend.description)
            snap = self.resolve_snapshot(session)
            entry = require_table(session, self.description, snap.snapshot_id, schema, table)
            entries = metadata.read_columns(session, entry.table_id, snap.snapshot_id)
        return DuckLakeTable(self._access, entry, snap, entries, build_column_tree(entries))

    # -- DataFusion CatalogProvider ------------------------------------------------------

    def schema_names(self) -> set[str]:
        backend = self._access.backend
        with backend.session() as session:
            metadata.read_settings(session, backend.description)
            snap = self.resolve_snapshot(session)
            return {s.schema_name for s in metadata.list_schemas(session, snap.snapshot_id)}

    def schema(self, name: str):
        try:
            names = self.schema_names()
        except SnapshotNotFoundError:
            # DataFusion drops exceptions raised here; let table() raise it visibly.
            return DuckLakeSchema(self, name)
        if name in names:
            return DuckLakeSchema(self, name)
        matches = [n for n in names if n.lower() == name.lower()]
        return DuckLakeSchema(self, matches[0]) if len(matches) == 1 else None

    def register_schema(self, name, schema) -> None:
        raise NotImplementedError("DuckLake catalogs are read-only here; create schemas in DuckDB")

    def deregister_schema(self, name, cascade) -> None:
        raise NotImplementedError("DuckLake catalogs are read-only here; drop schemas in DuckDB")


class DuckLakeSchema(SchemaProvider):
    """One schema of a lake; tables are looked up in the catalog on every call."""

    def __init__(self, catalog: DuckLakeCatalog, name: str) -> None:
        self._catalog = catalog
        self._name = name

    def table_names(self) -> set[str]:
        backend = self._catalog.backend
        with backend.session() as session:
            metadata.read_settings(session, backend.description)
            snap = self._catalog.resolve_snapshot(session)
            return {
                t.table_name for t in metadata.list_tables(session, snap.snapshot_id, self._name)
            }

    def table(self, name: str) -> Table | None:
        try:
            table = self._catalog.table(self._name, name)
        except TableNotFoundError:
            # "orders@v12" / "orders@2024-05-01T12:00:00": time travel (see _timetravel);
            # a bad suffix, snapshot or table raises our error so the message says why.

            table = suffixed_table(self._catalog, self._name, name)
            if table is None:
                if self._catalog._snapshot is not None or self._catalog._snapshot_time is not None:
                    raise  # pinned: say the table did not exist at that snapshot
                return None
        return Table(table.dataset())

    def table_exist(self, name: str) -> bool:
        backend = self._catalog.backend
        with backend.session() as session:
            snap = self._catalog.resolve_snapshot(session)
            found = find_table(session, snap.snapshot_id, self._name, name) is not None
        if found or "@" not in name:
            return found

        return suffixed_table_exists(self._catalog, self._name, name)

    def register_table(self, name, table) -> None:
        raise NotImplementedError("DuckLake tables are read-only here; create tables in DuckDB")

    def deregister_table(self, name, cascade) -> None:
        raise NotImplementedError("DuckLake tables are read-only here; drop tables in DuckDB")
