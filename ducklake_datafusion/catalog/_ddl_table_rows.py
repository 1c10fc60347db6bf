"""The catalog rows of a table's and a schema's own changes, as DuckDB 1.5.5 writes them.

A rename ends the table's row and begins one of the new name (id, uuid and directory
kept); a drop ends the table's rows, columns, files, delete files, partitioning and tags
(the files stay on storage for the snapshots before it); a new partitioning ends the live
one and begins its own (an empty one for ``RESET PARTITIONED BY``). A schema is a
``ducklake_schema`` row begun or ended.
"""

from __future__ import annotations

import re
import uuid

from ..errors import TableNotFoundError
from ._commit_rows import columns_of, insert_partition_spec, insert_row
from ._sql import live

__all__ = [
    "comment_rows",
    "create_schema_rows",
    "drop_schema_row",
    "drop_table_rows",
    "drop_view_rows",
    "live_partitioning",
    "partitioning_rows",
    "rename_table_rows",
    "schema_members",
]

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def rename_table_rows(session, table_id: int, new_name: str, snapshot: int, what: str) -> None:
    """End the table's row and begin one of the new name (id, uuid, directory kept)."""
    names = [c for c in columns_of(session, "ducklake_table") if c != "end_snapshot"]
    rows = session.rows(
        f"SELECT {', '.join(names)} FROM ducklake_table WHERE table_id = ? AND "
        "end_snapshot IS NULL",
        [table_id],
    )
    if not rows:
        raise TableNotFoundError(f"{what} does not exist (dropped meanwhile?)")
    row = dict(zip(names, rows[0], strict=True))
    session.execute(
        "UPDATE ducklake_table SET end_snapshot = ? WHERE table_id = ? AND end_snapshot IS NULL",
        [snapshot, table_id],
    )
    insert_row(
        session,
        "ducklake_table",
        {**row, "begin_snapshot": snapshot, "end_snapshot": None, "table_name": new_name},
    )


# what a dropped table's rows are in: every live one of them ends
_TABLE_ROWS = (
    "ducklake_table",
    "ducklake_column",
    "ducklake_data_file",
    "ducklake_delete_file",
    "ducklake_partition_info",
    "ducklake_column_tag",
)


def drop_table_rows(session, table_id: int, snapshot: int) -> None:
    for name in _TABLE_ROWS:
        if session.has_table(name):
            session.execute(
                f"UPDATE {name} SET end_snapshot = ? WHERE table_id = ? AND end_snapshot IS NULL",
                [snapshot, table_id],
            )
    session.execute(
        "UPDATE ducklake_tag SET end_snapshot = ? WHERE object_id = ? AND end_snapshot IS NULL",
        [snapshot, table_id],
    )


def drop_view_rows(session, view_id: int, snapshot: int) -> None:
    session.execute(
        "UPDATE ducklake_view SET end_snapshot = ? WHERE view_id = ? AND end_snapshot IS NULL",
        [snapshot, view_id],
    )
    session.execute(
        "UPDATE ducklake_tag SET end_snapshot = ? WHERE object_id = ? AND end_snapshot IS NULL",
        [snapshot, view_id],
    )


def create_schema_rows(
    session, name: str, schema_id: int, snapshot: int, schema_uuid: uuid.UUID
) -> None:
    """A schema's row: its directory is its name where that is a plain one, else its uuid
    (as DuckDB names them)."""
    insert_row(
        session,
        "ducklake_schema",
        {
            "schema_id": schema_id,
            "schema_uuid": session.adapt(schema_uuid),
            "begin_snapshot": snapshot,
            "end_snapshot": None,
            "schema_name": name,
            "path": f"{name}/" if _PLAIN_NAME.match(name) else f"{schema_uuid}/",
            "path_is_relative": True,
        },
    )


def schema_members(session, schema_id: int, snapshot: int) -> tuple[list[int], list[int]]:
    """The ids of the tables and of the views live in a schema."""
    tables = session.rows(
        f"SELECT table_id FROM ducklake_table WHERE schema_id = ? AND {live()} ORDER BY table_id",
        [schema_id, snapshot, snapshot],
    )
    views = []
    if session.has_table("ducklake_view"):
        views = session.rows(
            f"SELECT view_id FROM ducklake_view WHERE schema_id = ? AND {live()} ORDER BY view_id",
            [schema_id, snapshot, snapshot],
        )
    return [int(r[0]) for r in tables], [int(r[0]) for r in views]


def drop_schema_row(session, schema_id: int, snapshot: int) -> None:
    session.execute(
        "UPDATE ducklake_schema SET end_snapshot = ? WHERE schema_id = ? AND end_snapshot IS NULL",
        [snapshot, schema_id],
    )


def live_partitioning(session, table_id: int) -> tuple[int, tuple[tuple[int, str], ...]] | None:
    """The table's live partitioning: its id and ``(column id, transform)`` keys in key
    order (none: reset), or ``None`` when it never had one."""
    rows = session.rows(
        "SELECT partition_id FROM ducklake_partition_info WHERE table_id = ? AND "
        "end_snapshot IS NULL",
        [table_id],
    )
    if not rows:
        return None
    partition_id = int(rows[0][0])
    keys = session.rows(
        "SELECT column_id, transform FROM ducklake_partition_column WHERE partition_id = ? "
        "AND table_id = ? ORDER BY partition_key_index",
        [partition_id, table_id],
    )
    return partition_id, tuple((int(c), str(t)) for c, t in keys)


def partitioning_rows(session, table_id, ended, partition_id, keys, snapshot) -> None:
    """End the live partitioning (``ended``: its id) and begin ``keys``' (an empty one
    for none, as DuckDB's ``RESET PARTITIONED BY`` records it)."""
    if ended is not None:
        session.execute(
            "UPDATE ducklake_partition_info SET end_snapshot = ? WHERE partition_id = ? "
            "AND table_id = ?",
            [snapshot, ended, table_id],
        )
    insert_partition_spec(session, table_id, partition_id, keys, snapshot)


def comment_rows(session, table_id: int, column_id: int | None, comment, snapshot: int) -> None:
    """End the live ``comment`` tag of the table (or of its column) and begin one with
    ``comment`` (NULL too, as DuckDB's ``COMMENT ... IS NULL`` records it)."""
    if column_id is None:
        session.execute(
            "UPDATE ducklake_tag SET end_snapshot = ? WHERE object_id = ? AND key = 'comment' "
            "AND end_snapshot IS NULL",
            [snapshot, table_id],
        )
        row = {"object_id": table_id}
        table = "ducklake_tag"
    else:
        session.execute(
            "UPDATE ducklake_column_tag SET end_snapshot = ? WHERE table_id = ? AND "
            "column_id = ? AND key = 'comment' AND end_snapshot IS NULL",
            [snapshot, table_id, column_id],
        )
        row = {"table_id": table_id, "column_id": column_id}
        table = "ducklake_column_tag"
    row |= {"begin_snapshot": snapshot, "end_snapshot": None, "key": "comment", "value": comment}
    insert_row(session, table, row)
