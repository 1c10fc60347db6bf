"""``DuckLakeCatalog`` and ``DuckLakeSchema``: DataFusion catalog providers over a lake.

Nothing is cached: every ``schema_names()``/``schema()``/``table_names``/``table()`` call
reads the catalog database, so tables created, renamed or dropped by other processes are
seen by the next query. Each resolved table pins one snapshot (the catalog's pinned one,
else the latest at that moment), so one query reads one consistent snapshot.

Errors and DataFusion (datafusion 55, guarded by ``tests/provider/test_contract.py``): only an
exception raised by ``SchemaProvider.table()`` reaches the user, as the exception itself,
from ``ctx.sql``. Errors raised by ``schema_names()``, ``schema()`` and ``table_names``
are logged and turned into "nothing there" (a query then fails with a misleading "table
not found", and ``SHOW TABLES`` lists nothing). So when the catalog cannot be read, those
calls do not raise: the schema becomes a :class:`FailedSchema` that lists one table and
raises the catalog's error from ``table()``, which DataFusion reports for queries and for
``information_schema`` alike. DataFusion also reads ``table_names`` as an attribute
without calling it, so it is a property holding a list (that can still be called).
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Mapping, Sequence

import pyarrow as pa
from datafusion.catalog import CatalogProvider, SchemaProvider, Table

from ..catalog import (
    MetadataBackend,
    SnapshotInfo,
    metadata,
    table_column_comments,
    view_column_comments,
)
from ..errors import DuckLakeError, InvalidOptionError, TableNotFoundError
from ..scan import Lake, find_table
from ._ddl import DdlMethods
from ._maintenance import MaintenanceMethods
from ._rust import forget_catalog
from ._table import DuckLakeTable
from ._table_names import split_table_name
from ._views import find_view, plannable_view_names, view_table

__all__ = ["DuckLakeCatalog", "DuckLakeSchema", "FailedSchema"]

# What a schema lists when the catalog cannot be read: DataFusion's information_schema then
# asks for this table, and the lookup raises the catalog's error.
UNREADABLE_TABLE = "__catalog_unreadable__"


def _require_bool(option: str, value) -> None:
    if not isinstance(value, bool):
        raise InvalidOptionError(f"{option} must be True or False, got {value!r}")


class TableNames(list):
    """Table names as DataFusion wants them (a list attribute) that can still be called.

    ``SchemaProvider.table_names`` is documented as a method returning a set, but
    datafusion 55 reads the attribute without calling it and needs a sequence.
    """

    def __call__(self) -> set[str]:
        return set(self)


class DuckLakeCatalog(MaintenanceMethods, DdlMethods, CatalogProvider):
    """A DuckLake lake as a DataFusion catalog.

    Args:
        metadata: the catalog database, as DuckDB's ``ATTACH 'ducklake:...'`` takes it: a
            DuckDB file path, ``sqlite:path``, ``postgres:<libpq keywords>`` or a
            ``postgresql://`` URL; an optional ``ducklake:`` prefix is accepted.
        data_path: overrides the catalog's ``data_path`` (like ``OVERRIDE_DATA_PATH``).
        snapshot: pin every table to this snapshot id (default: latest at query time).
        snapshot_time: pin every table to the latest snapshot at or before this time.
        storage_options: object-storage options (see ``pathres.StorageOptions``).
        metadata_schema: the schema of the catalog database that holds the
            ``ducklake_*`` tables, as DuckDB's ``METADATA_SCHEMA`` attach option.
        native: read every table the native (Rust) scan reads exactly with it
            (default); ``False`` reads every file through the exact streaming reader.
            See the README's "Which reader runs" for when each path is taken.
        native_deletes, rust: deprecated, without effect (they chose between the native
            scans the Rust scan replaced, which applies deletes itself); a
            ``DeprecationWarning`` says so.

    Attributes:
        lake: the engine-neutral ``scan.Lake`` this catalog adapts (catalog access,
            snapshot pin, table resolution and planning); Spark reads through the same.

    Resources: the catalog database's connections (on every thread that read through
    this catalog, DataFusion's own included), a DuckDB file's private copy and the
    providers planned for its snapshots are released when the catalog is no longer
    referenced, and at once by :meth:`close` or at the end of ``with DuckLakeCatalog(...)
    as lake:``; reading a closed catalog raises ``CatalogClosedError``.
    """

    def __init__(
        self,
        metadata: str,
        *,
        data_path: str | None = None,
        snapshot: int | None = None,
        snapshot_time: _dt.datetime | None = None,
        storage_options: Mapping[str, object] | None = None,
        metadata_schema: str | None = None,
        native: bool = True,
        native_deletes: bool | None = None,
        rust: bool | None = None,
    ) -> None:
        _require_bool("native", native)
        for option, value in (("native_deletes", native_deletes), ("rust", rust)):
            if value is None:
                continue
            _require_bool(option, value)
            warnings.warn(
                f"DuckLakeCatalog({option}=...) has no effect and will be removed: "
                "the native scan (Rust) reads every table it reads exactly, deletes "
                "included; pass native=False for the exact reader alone",
                DeprecationWarning,
                stacklevel=2,
            )
        self.native = native
        self._metadata = metadata
        self._metadata_schema = metadata_schema
        self.lake = Lake.open(
            metadata,
            data_path=data_path,
            snapshot=snapshot,
            snapshot_time=snapshot_time,
            storage_options=storage_options,
            metadata_schema=metadata_schema,
        )

    # -- lake-level API ---------------------------------------------------------------

    def close(self) -> None:
        """Release the catalog database now: every thread's connection, a DuckDB file's
        private copy, the providers planned through it. Idempotent; a query of a closed
        catalog raises ``CatalogClosedError``."""
        self.lake.close()
        forget_catalog(self.lake.backend)

    def __enter__(self) -> DuckLakeCatalog:  # noqa: PYI034 - subclasses are not made
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def backend(self) -> MetadataBackend:
        return self.lake.backend

    @property
    def description(self) -> str:
        return self.lake.description

    def __repr__(self) -> str:
        pin = ""
        if self.lake.snapshot is not None:
            pin = f", snapshot={self.lake.snapshot}"
        elif self.lake.snapshot_time is not None:
            pin = f", snapshot_time={self.lake.snapshot_time.isoformat()}"
        return f"DuckLakeCatalog({self.description!r}{pin})"

    def at(self, *, snapshot: int | None = None, snapshot_time: _dt.datetime | None = None):
        """A copy of this catalog pinned to a snapshot id or time (register it separately)."""
        if (snapshot is None) == (snapshot_time is None):
            raise InvalidOptionError("at() needs exactly one of snapshot= or snapshot_time=")
        return DuckLakeCatalog(
            self._metadata,
            data_path=self.lake.data_path_override,
            snapshot=snapshot,
            snapshot_time=snapshot_time,
            storage_options=self.lake.storage,
            metadata_schema=self._metadata_schema,
            native=self.native,
        )

    def snapshots(self) -> pa.Table:
        """Every existing snapshot with what it changed, as ``ducklake_snapshots()``."""
        from ._lake_info import snapshots_table

        return snapshots_table(self)

    def tables(self) -> pa.Table:
        """Tables at this catalog's snapshot with file counts and sizes
        (``ducklake_table_info()``)."""
        from ._lake_info import table_info_table

        return table_info_table(self)

    def forget_metadata(self) -> None:
        """Drop the table metadata memoised from the catalog; the next query re-reads it.

        Never needed for correctness (the memos are checked against the lake version on
        every query); frees their memory, and lets benchmarks time planning as it is after a
        commit. The validated global settings stay (they expire on their own).
        """
        cache = self.lake.backend.cache
        for key in [k for k in cache if k != "settings"]:
            del cache[key]

    def resolve_snapshot(self, session) -> SnapshotInfo:
        """The snapshot this catalog reads now (pinned id/time, else the latest)."""
        return self.lake.resolve_snapshot(session)

    def snapshot_id(self) -> int:
        """The snapshot id a query planned now would read."""
        return self.lake.snapshot_id()

    def table(self, schema: str, table: str) -> DuckLakeTable:
        """Resolve ``schema.table`` at this catalog's snapshot; raises TableNotFoundError."""
        return DuckLakeTable.of(self.lake.table(schema, table), self)

    def transaction(
        self,
        *,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ):
        """Changes of several tables as one snapshot, or none::

            with lake.transaction() as tx:
                tx.table("main", "orders").append(rows)
                tx.table("main", "stock").update({"n": "n - 1"}, "id = 7")
                tx.table("main", "audit").merge(src, on=["id"]).when_not_matched_insert_all().execute()

        Every table is read at one snapshot; the block's end commits (an exception in it
        commits nothing and deletes the files written). Each table takes at most one row
        change (delete, update, merge, upsert) before any append to it; appends repeat.
        ``tx.snapshot_id`` is the snapshot after the block.
        """
        from ..catalog import CommitOptions
        from ._transaction import LakeTransaction

        return LakeTransaction(self, CommitOptions(author, commit_message, commit_extra_info))

    def create_table(
        self,
        name: str,
        schema_or_data,
        *,
        partitioned_by: Sequence[str] = (),
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> int:
        """Create a table, as one new snapshot; returns its id.

        Args:
            name: ``"schema.table"``, or ``"table"`` in ``main``.
            schema_or_data: a ``pyarrow.Schema`` for an empty table, or data (as
                ``DuckLakeTable.append`` takes it) whose columns and rows it gets, in the
                same snapshot (``CREATE TABLE AS``). Arrow types map to DuckLake's as DuckDB
                maps them; a type DuckLake cannot store is refused by name.
            partitioned_by: partition keys as DuckDB's ``PARTITIONED BY`` spells them:
                ``["region", "year(day)", "month(day)"]`` (identity, year, month, day, hour).

        Raises:
            TableExistsError: a table or view of that name exists.
            UnsupportedTypeError: a column of a type DuckLake cannot store.
        """
        from ..catalog import CommitOptions
        from ..write import create_table

        schema, table = split_table_name(name)
        options = CommitOptions(author, commit_message, commit_extra_info)
        return create_table(
            self.lake,
            schema,
            table,
            schema_or_data,
            partitioned_by=partitioned_by,
            options=options,
        )

    def column_comments(self, schema: str, name: str) -> dict[str, str]:
        """``{column: comment}`` of a table's or view's columns at this catalog's snapshot
        (DuckDB's ``COMMENT ON COLUMN``; view columns need a DuckLake 1.1 catalog).

        Raises:
            TableNotFoundError: no table or view of that name at the snapshot.
        """
        try:
            table = self.lake.table(schema, name)
        except TableNotFoundError:
            view = find_view(self, schema, name)
            if view is None:
                raise
            entry, snapshot = view
            with self.backend.session() as session:
                return view_column_comments(session, entry.view_id, snapshot)
        with self.backend.session() as session:
            by_id = table_column_comments(session, table.entry.table_id, table.snapshot_id)
        return {c.name: by_id[c.column_id] for c in table.columns if c.column_id in by_id}

    # -- DataFusion CatalogProvider ------------------------------------------------------

    def list_schema_names(self) -> set[str]:
        """The schemas at this catalog's snapshot; raises the catalog's error if unreadable."""
        return self.lake.list_schema_names()

    def schema_names(self) -> set[str]:
        """For DataFusion: an unreadable catalog lists ``main``, whose tables raise its error.

        (DataFusion drops errors raised here; :meth:`list_schema_names` raises them.)
        """
        try:
            return self.list_schema_names()
        except DuckLakeError:
            return {"main"}

    def schema(self, name: str):
        try:
            names = self.list_schema_names()
        except DuckLakeError as exc:
            # DataFusion drops exceptions raised here; table() raises it visibly.
            return FailedSchema(exc)
        if name in names:
            return DuckLakeSchema(self, name)
        matches = [n for n in names if n.lower() == name.lower()]
        return DuckLakeSchema(self, matches[0]) if len(matches) == 1 else None

    def register_schema(self, name, schema) -> None:
        """DataFusion's ``CREATE SCHEMA lake.s``: the schema is created in the lake."""
        self.create_schema(name)

    def deregister_schema(self, name, cascade):
        """DataFusion's ``DROP SCHEMA lake.s [CASCADE]`` (the schema dropped is returned:
        DataFusion reads ``None`` as "doesn't exist")."""
        dropped = self.schema(name)
        self.drop_schema(name, cascade=bool(cascade))
        return dropped


class DuckLakeSchema(SchemaProvider):
    """One schema of a lake; tables are looked up in the catalog on every call."""

    def __init__(self, catalog: DuckLakeCatalog, name: str) -> None:
        self._catalog = catalog
        self._name = name

    @property
    def table_names(self) -> TableNames:
        """The tables at the catalog's snapshot (see the module notes on why a property).

        When the catalog cannot be read this lists one placeholder table, so that
        DataFusion's ``information_schema`` looks it up and reports the catalog's error
        instead of listing nothing.
        """
        backend = self._catalog.backend
        try:
            with backend.session() as session:
                metadata.read_settings(session, backend.description)
                snap = self._catalog.resolve_snapshot(session)
                tables = metadata.list_tables(session, snap.snapshot_id, self._name)
                views = metadata.list_views(session, snap.snapshot_id, self._name)
            views = plannable_view_names(self._catalog, views, snap.snapshot_id)
        except DuckLakeError:
            return TableNames([UNREADABLE_TABLE])
        return TableNames(sorted({t.table_name for t in tables} | set(views)))

    def table(self, name: str) -> Table | None:
        writable = not self._catalog.lake.pinned  # the latest snapshot: inserts allowed
        try:
            table = self._catalog.table(self._name, name)
        except TableNotFoundError:
            writable = False  # a view, or an older snapshot of a table
            view = find_view(self._catalog, self._name, name)
            if view is not None:  # a view stored in the catalog (see _views)
                return view_table(self._catalog, *view)
            # "orders@v12" / "orders@2024-05-01T12:00:00": time travel (see _timetravel);
            # a bad suffix, snapshot or table raises our error so the message says why.

            suffixed = self._catalog.lake.suffixed_table(self._name, name)
            if suffixed is None:
                if self._catalog.lake.pinned:
                    raise  # pinned: say the table did not exist at that snapshot
                return None
            table = DuckLakeTable.of(suffixed)
        return table.datafusion_table(
            native=self._catalog.native,
            writable=writable,
            # Not the registering session: a provider handed the codec of a session holds
            # it weakly, and a query still running after that SessionContext object was
            # dropped fails ("TaskContextProvider went out of scope"). DataFusion's global
            # context lives as long as the process and decodes the pushed filters as well.
            ctx=None,
        )

    def table_exist(self, name: str) -> bool:
        backend = self._catalog.backend
        try:
            with backend.session() as session:
                snap = self._catalog.resolve_snapshot(session)
                found = find_table(session, snap.snapshot_id, self._name, name) is not None
        except DuckLakeError:
            return True  # so that table() is asked, and raises the catalog's error
        if found or self._view_exists(name):
            return True
        if "@" not in name:
            return False

        return self._catalog.lake.suffixed_table_exists(self._name, name)

    def _view_exists(self, name: str) -> bool:
        try:
            return find_view(self._catalog, self._name, name) is not None
        except DuckLakeError:
            return False  # e.g. a suffix naming no snapshot: table() says why

    def register_table(self, name, table) -> None:
        """DataFusion's ``CREATE TABLE lake.s.t AS SELECT ...`` (and ``CREATE TABLE
        lake.s.t (...)``): the table DataFusion made of the query's rows becomes a lake
        table, columns and rows in one snapshot (``_ctas``)."""
        from ._ctas import create_from_datafusion

        create_from_datafusion(self._catalog, self._name, name, table)

    def deregister_table(self, name, cascade):
        """DataFusion's ``DROP TABLE lake.s.t``: the table is dropped from the lake (and
        returned: DataFusion reads ``None`` as "doesn't exist")."""
        from ..write import drop_table

        dropped = self.table(name)
        drop_table(self._catalog.lake, self._name, name)
        return dropped


class FailedSchema(SchemaProvider):
    """A schema of a catalog that could not be read: every table lookup raises its error.

    DataFusion reports errors raised by ``table()`` (for queries and for
    ``information_schema``) but drops those raised while resolving the schema, so the
    error is kept here and raised where the user sees it.
    """

    def __init__(self, error: DuckLakeError) -> None:
        self.error = error

    @property
    def table_names(self) -> TableNames:
        return TableNames([UNREADABLE_TABLE])

    def table(self, name: str) -> Table | None:
        raise self.error.with_traceback(None)

    def table_exist(self, name: str) -> bool:
        return True

    def register_table(self, name, table) -> None:
        raise self.error.with_traceback(None)

    def deregister_table(self, name, cascade) -> None:
        raise self.error.with_traceback(None)
