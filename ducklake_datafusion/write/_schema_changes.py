"""Schema changes of a lake, engine-neutral: each one snapshot, as DuckDB writes it.

Every engine ends here with the core's plain values (``catalog.AlterTable`` and its
column changes, ``RenameTable``, ``DropTable``, ``CreateSchema``, ``DropSchema``):
Python's methods, DataFusion's SQL and (later) Spark's ``alterTable``. Each function
reads the table at the latest snapshot (a view of that name is refused by name: views
are not altered here), builds one ``Transaction`` that requires the table unchanged
since (an append or delete planned against the old columns fails
``CommitConflictError`` instead of recording files under new ones, and an ALTER racing
another ALTER or a drop fails the same way), commits it and returns the snapshot id.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import (
    AlterTable,
    ColumnChange,
    CommitOptions,
    CreateSchema,
    DropSchema,
    DropTable,
    RenameTable,
    SetComment,
    SetPartitioning,
    TableRef,
    TableUnchanged,
    Transaction,
    build_column_tree,
    commit,
    metadata,
)
from ..errors import InvalidOptionError, TableNotFoundError, UnsupportedFeatureError
from ..scan import Lake, require_table
from ._files import uuid7
from ._partitions import partition_keys
from ._plan import require_writable

__all__ = [
    "alter_table",
    "create_schema",
    "drop_schema",
    "drop_table",
    "rename_table",
    "set_comment",
    "set_partitioned_by",
]


def alter_table(
    lake: Lake,
    schema: str,
    table: str,
    changes: Sequence[ColumnChange],
    *,
    options: CommitOptions | None = None,
) -> int:
    """Apply ``changes`` (in order) to ``schema.table`` as one snapshot; its id (the
    latest snapshot's when ``IF [NOT] EXISTS`` changes leave nothing to do).

    Raises:
        TableNotFoundError: no such table (or column); UnsupportedFeatureError: a view,
            or a type change refused by name; TableExistsError: a name taken;
            InvalidOptionError: a change refused by name (a partition key dropped, ...);
            CommitConflictError: another writer changed the table meanwhile.
    """
    changes = tuple(changes)
    if not changes:
        raise InvalidOptionError(f"table {schema}.{table}: no change to make")
    ref, base = _table_ref(lake, schema, table, "ALTER TABLE")
    return _commit(lake, base, AlterTable(ref, changes), ref, options)


def set_partitioned_by(
    lake: Lake,
    schema: str,
    table: str,
    keys: Sequence[str],
    *,
    options: CommitOptions | None = None,
) -> int:
    """Partition the files written to ``schema.table`` from now on by ``keys`` (DuckDB's
    ``SET PARTITIONED BY`` spelling: ``["region", "year(day)", "bucket(8, id)"]``; none:
    ``RESET PARTITIONED BY``); the snapshot id (the latest one when the keys are the
    table's already)."""
    ref, base = _table_ref(lake, schema, table, "ALTER TABLE ... SET PARTITIONED BY")
    with lake.backend.session() as session:
        columns = build_column_tree(metadata.read_columns(session, ref.table_id, base))
    found = partition_keys(list(keys), columns, ref.name) if keys else ()
    action = SetPartitioning(ref, tuple((k.column_id, k.transform) for k in found))
    return _commit(lake, base, action, ref, options)


def set_comment(
    lake: Lake,
    schema: str,
    table: str,
    comment: str | None,
    *,
    column: Sequence[str] | None = None,
    options: CommitOptions | None = None,
) -> int:
    """Set (``None``: clear) the comment of ``schema.table`` or of its ``column`` (a
    path of one name), as DuckDB's ``COMMENT ON``; the snapshot id."""
    if comment is not None and not isinstance(comment, str):
        raise InvalidOptionError(f"a comment is text or None, got {comment!r}")
    ref, base = _table_ref(lake, schema, table, "COMMENT ON")
    path = None if column is None else tuple(column)
    return _commit(lake, base, SetComment(ref, comment, path), ref, options)


def rename_table(
    lake: Lake, schema: str, table: str, new_name: str, *, options: CommitOptions | None = None
) -> int:
    """Rename ``schema.table`` to ``new_name`` (same schema); the snapshot id."""
    ref, base = _table_ref(lake, schema, table, "ALTER TABLE ... RENAME TO")
    return _commit(lake, base, RenameTable(ref, new_name), ref, options)


def drop_table(
    lake: Lake,
    schema: str,
    table: str,
    *,
    if_exists: bool = False,
    options: CommitOptions | None = None,
) -> int:
    """Drop ``schema.table``; the snapshot id (with ``if_exists``, the latest one when
    there is no such table). Its files stay on storage for the snapshots before the
    drop (expiring those snapshots and ``cleanup_old_files`` remove them)."""
    try:
        ref, base = _table_ref(lake, schema, table, "DROP TABLE")
    except TableNotFoundError:
        if not if_exists:
            raise
        return lake.snapshot_id()
    return _commit(lake, base, DropTable(ref), ref, options)


def create_schema(
    lake: Lake, name: str, *, if_not_exists: bool = False, options: CommitOptions | None = None
) -> int:
    """Create schema ``name``; the snapshot id."""
    _require_name(name, "schema")
    require_writable(lake)
    action = CreateSchema(name, if_not_exists, uuid7())
    return _commit(lake, lake.snapshot_id(), action, None, options)


def drop_schema(
    lake: Lake,
    name: str,
    *,
    cascade: bool = False,
    if_exists: bool = False,
    options: CommitOptions | None = None,
) -> int:
    """Drop schema ``name`` (with ``cascade``, its tables and views too); the snapshot id."""
    _require_name(name, "schema")
    require_writable(lake)
    action = DropSchema(name, cascade, if_exists)
    return _commit(lake, lake.snapshot_id(), action, None, options)


def _require_name(name, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidOptionError(f"a {what} name is non-empty text, got {name!r}")


def _table_ref(lake: Lake, schema: str, table: str, statement: str) -> tuple[TableRef, int]:
    """The table at the latest snapshot, and that snapshot; a view refused by name."""
    require_writable(lake)
    with lake.backend.session() as session:
        metadata.read_settings(session, lake.description)
        latest = metadata.latest_snapshot(session).snapshot_id
        if metadata.find_table(session, latest, schema, table) is None:
            views = metadata.list_views(session, latest, schema)
            if any(v.view_name == table for v in views):
                raise UnsupportedFeatureError(
                    f"{lake.description}: {schema}.{table} is a view; {statement} changes "
                    "tables (views are changed in DuckDB: CREATE OR REPLACE VIEW)"
                )
        entry = require_table(session, lake.description, latest, schema, table)
    return TableRef(entry.schema_name, entry.table_name, entry.table_id), latest


def _commit(lake: Lake, base: int, action, ref: TableRef | None, options) -> int:
    requirements = () if ref is None else (TableUnchanged(ref),)
    transaction = Transaction(base, (action,), requirements, options or CommitOptions())
    return commit(lake.backend, transaction)
