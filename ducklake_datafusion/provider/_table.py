"""``DuckLakeTable``: one table pinned at one snapshot, with DataFusion and dataframe readers.

Resolution and planning are engine-neutral (``scan.LakeTable``); this subclass adds
reading (``to_arrow``, pandas, polars), the ``pyarrow.dataset`` adapter DataFusion
scans, and the lake-info tables, which need the ``DuckLakeCatalog`` that resolved it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidOptionError
from ..read import execute_plan
from ..scan import Filter, LakeTable, ScanPlan
from ._pyarrow_filter import filter_of

__all__ = ["DuckLakeTable"]


@dataclass(frozen=True, eq=False, repr=False)
class DuckLakeTable(LakeTable):
    """A DuckLake table at a fixed snapshot.

    The snapshot, columns and Arrow schema are fixed when the table is resolved, so every
    scan of this object (one SQL query) reads the same snapshot. Files, deletes and inlined
    rows are read when a scan is planned, all in one catalog transaction.
    """

    catalog: object = None  # the DuckLakeCatalog that resolved it (files(), history())

    @classmethod
    def of(cls, table: LakeTable, catalog=None) -> DuckLakeTable:
        """``table`` (resolved by a ``scan.Lake``) as a DuckLakeTable of ``catalog``."""
        return cls(**table.init_args(), catalog=catalog)

    def scan_plan(
        self, filter: Filter | pc.Expression | None = None, columns: Sequence[str] | None = None
    ) -> ScanPlan:
        """:meth:`LakeTable.scan_plan <ducklake_datafusion.scan.LakeTable.scan_plan>`; the
        ``filter`` may also be a ``pyarrow.compute.Expression`` (as DataFusion and pyarrow
        users spell one), read as the scan's ``Filter``.

        Raises:
            InvalidOptionError: the expression is not one the filter language can say
                exactly (build a ``ducklake_datafusion.scan.Filter`` instead).
        """
        if isinstance(filter, pc.Expression):
            found = filter_of(filter, self.schema)
            if found is None:
                raise InvalidOptionError(
                    f"filter {filter} on {self.name} is not one the scan can apply exactly: "
                    "spell it with ducklake_datafusion.scan's Filter (Compare, In, IsNull, "
                    "StringMatch, And, Or, Not)"
                )
            filter = found
        return super().scan_plan(filter, columns)

    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        filter: Filter | pc.Expression | None = None,
    ) -> pa.Table:
        """Read the table (or a projection / filtered part of it) into memory."""
        return execute_plan(self.scan_plan(filter=filter, columns=columns))

    def append(
        self,
        data,
        *,
        schema_mode: str | None = None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> int:
        """Append rows to the table, as one new snapshot; returns its id.

        ``data``: a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a Polars or
        pandas DataFrame, or any object with ``__arrow_c_stream__`` (a DataFusion
        DataFrame streams straight in). Columns are matched by name; a missing one is
        NULL; values are cast to the column types exactly or refused (``UnsupportedTypeError``
        names the column). The rows go to the table as the latest snapshot has it: a table
        dropped or replaced since this object was resolved is a ``CommitConflictError``.
        This object stays pinned at its snapshot; resolve the table again to read the rows.

        ``schema_mode="merge"``: the data's columns and struct fields the table lacks are
        added first, as one snapshot of their own (``write._evolve``), then the rows are
        appended; without it such a column is refused by name.
        """
        return self._write(data, False, author, commit_message, commit_extra_info, schema_mode)

    def overwrite(
        self,
        data,
        *,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> int:
        """Replace every row of the table by ``data`` (as :meth:`append` takes it), as one
        new snapshot; returns its id. Earlier snapshots keep their rows (time travel)."""
        return self._write(data, True, author, commit_message, commit_extra_info)

    def delete(
        self,
        where=None,
        *,
        ctx=None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ):
        """Delete the rows for which ``where`` holds, as one new snapshot; returns a
        ``ChangeResult`` (``snapshot_id``, ``deleted``).

        ``where``: DataFusion SQL over the table's columns (``"id IN (SELECT id FROM
        gone)"``: run in ``ctx``, a ``datafusion.SessionContext``, when given, so its tables
        and functions may be used), a ``pyarrow.compute`` expression, or ``None`` (every
        row). The rows are those of the latest snapshot; a data file that loses all its
        rows is ended, the others get delete files as DuckDB writes them. A change to the
        same rows committed meanwhile makes the delete run again on the new snapshot.
        """
        from ..catalog import CommitOptions
        from ._row_statements import delete_rows

        options = CommitOptions(author, commit_message, commit_extra_info)
        return delete_rows(self, where, ctx=ctx, options=options)

    def update(
        self,
        set,
        where=None,
        *,
        ctx=None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ):
        """Set columns of the rows for which ``where`` holds, as one new snapshot; returns
        a ``ChangeResult`` (``snapshot_id``, ``updated``).

        ``set``: column -> new value, DataFusion SQL over the row's old values (``{"price":
        "price * 1.1"}``) or a ``pyarrow.compute`` expression; ``where`` as for
        :meth:`delete`. Each row keeps its ``rowid``: it is deleted where it was and written
        anew (in its new partition, if a key changed), as DuckDB updates rows, so the change
        feed shows an ``update_preimage`` and ``update_postimage``.
        """
        from ..catalog import CommitOptions
        from ._row_statements import update_rows

        options = CommitOptions(author, commit_message, commit_extra_info)
        return update_rows(self, set, where, ctx=ctx, options=options)

    def merge(
        self,
        source,
        on,
        *,
        source_alias: str = "source",
        target_alias: str = "target",
        ctx=None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ):
        """A MERGE of ``source`` into this table: returns a builder; add its
        ``when_matched_update(set, where)``, ``when_matched_update_all``,
        ``when_matched_delete``, ``when_not_matched_insert(values, where)``,
        ``when_not_matched_insert_all``, ``when_not_matched_by_source_update`` and
        ``when_not_matched_by_source_delete`` clauses (any number, applied in order), then
        ``execute()``: one new snapshot, a ``ChangeResult`` (``deleted``, ``updated``,
        ``inserted``).

        ``source``: anything :meth:`append` takes, read once. ``on``: SQL text over
        ``target_alias``'s and ``source_alias``'s columns (``"target.id = source.id"``), or
        key column names equal on both sides. Conditions and values are DataFusion SQL,
        run in ``ctx`` when given. A target row that two source rows would change is a
        ``MergeError``, with nothing written.
        """
        from ..catalog import CommitOptions
        from ._merge import merge_builder

        return merge_builder(
            self,
            source,
            on,
            source_alias=source_alias,
            target_alias=target_alias,
            ctx=ctx,
            options=CommitOptions(author, commit_message, commit_extra_info),
        )

    def upsert(
        self,
        data,
        on,
        *,
        ctx=None,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ):
        """Rows of ``data`` whose key columns ``on`` match a row of the table update it
        (its columns by name, only where a value differs); the others are inserted. One
        new snapshot; a ``ChangeResult`` (``updated``, ``inserted``). pyiceberg's
        ``upsert``, as a MERGE."""
        from ..catalog import CommitOptions
        from ._merge import upsert_rows

        options = CommitOptions(author, commit_message, commit_extra_info)
        return upsert_rows(self, data, on, ctx=ctx, options=options)

    def _write(
        self, data, overwrite, author, commit_message, commit_extra_info, schema_mode=None
    ) -> int:
        from ..catalog import CommitOptions
        from ..write import SCHEMA_MODES, add_missing_columns, append, as_arrow

        options = CommitOptions(author, commit_message, commit_extra_info)
        if schema_mode not in SCHEMA_MODES:
            raise InvalidOptionError(
                f"schema_mode must be None or 'merge' (add the data's new columns), got "
                f"{schema_mode!r}"
            )
        if schema_mode == "merge":
            data = as_arrow(data, f"table {self.name}")  # (a stream is opened, not read)
            add_missing_columns(
                self.lake,
                self.entry.schema_name,
                self.entry.table_name,
                data.schema,
                expected_table_id=self.entry.table_id,
                options=options,
            )
        return append(
            self.lake,
            self.entry.schema_name,
            self.entry.table_name,
            data,
            overwrite=overwrite,
            expected_table_id=self.entry.table_id,
            options=options,
        )

    def to_pandas(
        self, columns: Sequence[str] | None = None, filter: Filter | pc.Expression | None = None
    ):
        """Read into a ``pandas.DataFrame`` (needs the ``[pandas]`` extra)."""
        from ._dataframes import to_pandas

        return to_pandas(self, columns, filter)

    def to_polars(
        self, columns: Sequence[str] | None = None, filter: Filter | pc.Expression | None = None
    ):
        """Read into a ``polars.DataFrame`` (needs the ``[polars]`` extra)."""
        from ._dataframes import to_polars

        return to_polars(self, columns, filter)

    def scan_polars(self):
        """A lazy ``polars.LazyFrame``: projection and predicates reach the planner."""
        from ._dataframes import scan_polars

        return scan_polars(self)

    def files(self) -> pa.Table:
        """Data files live at this table's snapshot with their delete files
        (``ducklake_list_files()``)."""
        from ..scan import SnapshotRef
        from ._lake_info import list_files_table

        ref = SnapshotRef(snapshot_id=self.snapshot_id)
        return list_files_table(
            self._resolving_catalog(), self.entry.schema_name, self.entry.table_name, ref
        )

    def history(self) -> pa.Table:
        """The snapshots that changed this table (its creation, renames, writes,
        compaction), as rows of ``ducklake_snapshots()``."""
        from ._lake_info import table_history_table

        return table_history_table(self._resolving_catalog(), self.entry.table_id)

    def _resolving_catalog(self):
        if self.catalog is None:
            raise InvalidOptionError(
                f"table {self.name} was not resolved through a DuckLakeCatalog; use "
                "DuckLakeCatalog(...).table(schema, name)"
            )
        return self.catalog

    def dataset(self):
        """The ``pyarrow.dataset.Dataset`` adapter DataFusion scans (the exact path)."""
        from ._dataset import DuckLakeDataset

        return DuckLakeDataset(self)

    def datafusion_table(self, native: bool = True, ctx=None, writable: bool = False):
        """The ``datafusion.catalog.Table`` a schema provider returns for this table.

        With ``native``, a table the Rust scan reads exactly is read by it (``_rust``);
        every other table goes through the ``pyarrow.dataset`` adapter, the exact path.
        ``ctx``: the session the table is planned in, when known (it decodes the filters
        pushed to the Rust provider; else DataFusion's global context does).
        ``writable``: DataFusion may also ``INSERT INTO`` it (``_writable``). Inserts need
        a provider of ours, so a writable table the exact path reads is handed over as a
        Rust provider over the exact reader (``_exact_scan``); a read-only one stays the
        ``pyarrow.dataset`` adapter, which DataFusion's filters reach whole.
        """
        from datafusion.catalog import Table

        if native:
            from ._rust import rust_table

            table = rust_table(self, ctx, writable=writable)
            if table is not None:
                return table
        if writable:
            from ._exact_scan import exact_writable_table

            return exact_writable_table(self, ctx)
        return Table(self.dataset())
