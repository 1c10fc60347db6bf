"""Schema changes inside a commit: checked at the lake's latest snapshot, then written.

``_commit`` calls :func:`plan_ddl` before it takes a snapshot id (every refusal, and an
``IF [NOT] EXISTS`` that leaves nothing to do, is known before anything is written),
then :func:`write_ddl` after, with the snapshot's ids. The rows are ``_ddl_rows``'; the
``changes_made`` tokens are DuckDB's: ``altered_table:<id>``, ``dropped_table:<id>``,
``dropped_view:<id>``, ``dropped_schema:<id>``, ``created_schema:"name"`` and, for a
renamed table, ``created_table:"schema"."new name"``.
"""

from __future__ import annotations

import uuid

from ..errors import (
    InvalidOptionError,
    TableExistsError,
    TableNotFoundError,
)
from ._ddl_actions import (
    AlterTable,
    CreateSchema,
    DropSchema,
    DropTable,
    RenameTable,
    SetComment,
    SetPartitioning,
)
from ._ddl_rows import (
    alter_table_rows,
    column_id_at,
    plan_alter,
    schema_version_row,
    table_columns,
)
from ._ddl_table_rows import (
    comment_rows,
    create_schema_rows,
    drop_schema_row,
    drop_table_rows,
    drop_view_rows,
    live_partitioning,
    partitioning_rows,
    rename_table_rows,
    schema_members,
)
from ._inlined_ddl import add_inlined_table
from ._names import find_table, list_schemas
from ._sql import live

__all__ = ["DDL_ACTIONS", "NEW_CATALOG_IDS", "plan_ddl", "write_ddl"]

DDL_ACTIONS = (
    AlterTable,
    SetPartitioning,
    SetComment,
    RenameTable,
    DropTable,
    CreateSchema,
    DropSchema,
)
# the actions that take an id of ``next_catalog_id``
NEW_CATALOG_IDS = (CreateSchema, SetPartitioning)


def plan_ddl(session, actions, table_ids: dict, latest: int, description: str) -> list:
    """``(action, plan)`` for each schema change that changes something at ``latest``.

    Raises:
        TableExistsError: a schema or table name taken; TableNotFoundError: a schema or
            column that is not there; InvalidOptionError: a change refused by name.
    """
    planned = []
    schemas = {s.schema_name: s for s in list_schemas(session, latest)}
    for action in actions:
        if isinstance(action, AlterTable):
            what = f"{description}: table {action.table.name}"
            plan = plan_alter(session, action, table_ids[action.table], what)
            if plan[0] or plan[1]:
                planned.append((action, plan))
        elif isinstance(action, SetPartitioning):
            live = live_partitioning(session, table_ids[action.table])
            if live is None or live[1] != tuple(action.keys):
                planned.append((action, None if live is None else live[0]))
        elif isinstance(action, SetComment):
            column_id = None
            if action.column is not None:
                if len(action.column) != 1:
                    raise InvalidOptionError(
                        f"{description}: a comment is set on a table or a top-level column, "
                        f"not on {'.'.join(action.column)!r} (as DuckDB's COMMENT ON COLUMN)"
                    )
                what = f"{description}: table {action.table.name}"
                column_id = column_id_at(session, table_ids[action.table], action.column, what)
            planned.append((action, column_id))
        elif isinstance(action, RenameTable):
            _check_new_name(session, action, schemas, latest, description)
            planned.append((action, None))
        elif isinstance(action, DropTable):
            planned.append((action, None))
        elif isinstance(action, CreateSchema):
            if action.name in schemas:
                if action.if_not_exists:
                    continue
                raise TableExistsError(
                    f"{description}: schema {action.name!r} exists already at snapshot {latest}"
                )
            planned.append((action, action.schema_uuid or uuid.uuid4()))
        elif isinstance(action, DropSchema):
            schema = schemas.get(action.name)
            if schema is None:
                if action.if_exists:
                    continue
                raise TableNotFoundError(
                    f"{description}: schema {action.name!r} does not exist at snapshot {latest}"
                )
            tables, views = schema_members(session, schema.schema_id, latest)
            if (tables or views) and not action.cascade:
                raise InvalidOptionError(
                    f"{description}: schema {action.name!r} is not empty ({len(tables)} "
                    f"table(s), {len(views)} view(s)); drop them first, or drop it with "
                    "cascade (DROP SCHEMA ... CASCADE)"
                )
            planned.append((action, (schema.schema_id, tables, views)))
    return planned


def _check_new_name(session, action: RenameTable, schemas, latest: int, description: str):
    new = action.new_name
    if not isinstance(new, str) or not new:
        raise InvalidOptionError(f"{description}: a table's new name is text, got {new!r}")
    schema = schemas[action.table.schema_name]
    taken = find_table(session, latest, action.table.schema_name, new) is not None
    if not taken and session.has_table("ducklake_view"):
        rows = session.rows(
            f"SELECT count(*) FROM ducklake_view WHERE schema_id = ? AND view_name = ? "
            f"AND {live()}",
            [schema.schema_id, new, latest, latest],
        )
        taken = int(rows[0][0]) > 0
    if taken:
        raise TableExistsError(
            f"{description}: table {action.table.name} cannot be renamed to {new!r}: a table "
            f"or view of that name exists in schema {action.table.schema_name!r}"
        )


def write_ddl(session, planned, table_ids: dict, snapshot: int, ids: dict, changes) -> None:
    """Write each planned change at ``snapshot``; ``ids``: ``schema_version`` (the
    snapshot's) and ``catalog_ids`` (a created schema's or partitioning's id by its
    action); ``changes``:
    the commit's ``changes_made`` as it accumulates."""
    version = ids["schema_version"]
    for action, plan in planned:
        if isinstance(action, AlterTable):
            table_id = table_ids[action.table]
            alter_table_rows(session, plan, table_id, snapshot)
            schema_version_row(session, table_id, snapshot, version)
            if plan[2] is not None:
                add_inlined_table(session, table_id, version, plan[2])
            changes.altered[table_id] = None
        elif isinstance(action, SetPartitioning):
            table_id = table_ids[action.table]
            partition_id = ids["catalog_ids"][action]
            partitioning_rows(session, table_id, plan, partition_id, action.keys, snapshot)
            schema_version_row(session, table_id, snapshot, version)
            add_inlined_table(session, table_id, version, table_columns(session, table_id))
            changes.altered[table_id] = None
        elif isinstance(action, SetComment):
            table_id = table_ids[action.table]
            comment_rows(session, table_id, plan, action.comment, snapshot)
            changes.altered[table_id] = None
        elif isinstance(action, RenameTable):
            table_id = table_ids[action.table]
            what = f"table {action.table.name}"
            rename_table_rows(session, table_id, action.new_name, snapshot, what)
            schema_version_row(session, table_id, snapshot, version)
            add_inlined_table(session, table_id, version, table_columns(session, table_id))
            changes.created.append(
                f"created_table:{_quoted(action.table.schema_name)}.{_quoted(action.new_name)}"
            )
        elif isinstance(action, DropTable):
            table_id = table_ids[action.table]
            drop_table_rows(session, table_id, snapshot)
            changes.dropped_tables[table_id] = None
        elif isinstance(action, CreateSchema):
            schema_id = ids["catalog_ids"][action]
            create_schema_rows(session, action.name, schema_id, snapshot, plan)
            changes.created_schemas.append(f"created_schema:{_quoted(action.name)}")
        elif isinstance(action, DropSchema):
            schema_id, tables, views = plan
            drop_schema_row(session, schema_id, snapshot)
            for table_id in tables:
                drop_table_rows(session, table_id, snapshot)
                changes.dropped_tables[table_id] = None
            for view_id in views:
                drop_view_rows(session, view_id, snapshot)
                changes.dropped_views[view_id] = None
            changes.dropped_schemas[schema_id] = None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
