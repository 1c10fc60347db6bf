"""Spark's DDL on the lake: ``ALTER TABLE``, ``DROP TABLE``, ``RENAME``, namespaces, run here.

``schema_change`` ``{change, namespace, name?, new_name?, cascade?, changes?, author?,
commit_message?, commit_extra_info?}`` -> ``{snapshot, changed}``: the jar's catalog turns
Spark's ``TableCatalog.alterTable`` / ``dropTable`` / ``renameTable`` and
``SupportsNamespaces.createNamespace`` / ``dropNamespace`` into one request each; the core's
engine-neutral schema changes (``write.alter_table`` and the others) write it as DuckDB
1.5.5 writes the same statement. ``changes`` are Spark's ``TableChange``s, one JSON object
each (``Protocol.java``'s ``TableChanges``): ``op`` (``add_column``, ``drop_column``,
``rename_column``, ``set_type``, ``set_nullable``, ``set_default``, ``set_comment``,
``set_property``, ``remove_property``, or ``unsupported`` with ``what``: the change's
class), the column's ``path``, and the op's values (a type as Spark's JSON of it).

All column changes of one statement commit as one snapshot, as DuckDB commits several
``ALTER``s of one transaction; a comment (``COMMENT`` of ``ADD COLUMN``, ``ALTER COLUMN ...
COMMENT``, ``COMMENT ON TABLE``) is a snapshot of its own after them, as DuckDB's
``COMMENT ON`` is a statement of its own. What DuckLake cannot record is refused by name
before anything commits: a column position (``FIRST`` / ``AFTER``), a new column ``NOT
NULL`` (the rows written before it have no value), table properties other than the comment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql.types import _parse_datatype_json_string

from ...catalog import (
    AddColumn,
    ColumnChange,
    ColumnType,
    DropColumn,
    DropDefault,
    DropNotNull,
    RenameColumn,
    SetColumnType,
    SetDefault,
    SetNotNull,
)
from ...errors import InvalidOptionError, TableNotFoundError, UnsupportedFeatureError
from ...scan import Lake
from ...write import (
    alter_table,
    column_type_of,
    create_schema,
    drop_schema,
    drop_table,
    rename_table,
    set_comment,
)
from .._core import spark_arrow_type
from ._write import commit_options

__all__ = ["schema_change_response"]


def schema_change_response(lake: Lake, request: Mapping) -> dict:
    change = str(request["change"])
    namespace = str(request["namespace"])
    name = None if request.get("name") is None else str(request["name"])
    options = commit_options(request)
    if change == "create_namespace":
        return _done(create_schema(lake, namespace, options=options))
    if change == "drop_namespace":
        cascade = bool(request.get("cascade"))
        return _done(drop_schema(lake, namespace, cascade=cascade, options=options))
    if name is None:
        raise InvalidOptionError(f"schema_change {change!r} names no table")
    if change == "drop_table":
        try:
            return _done(drop_table(lake, namespace, name, options=options))
        except TableNotFoundError:  # (Spark's DROP TABLE IF EXISTS asks to drop what is gone)
            return {"snapshot": lake.snapshot_id(), "changed": False}
    if change == "rename_table":
        new_name = str(request["new_name"])
        return _done(rename_table(lake, namespace, name, new_name, options=options))
    if change == "alter_table":
        return _alter(lake, namespace, name, request.get("changes") or (), options)
    raise InvalidOptionError(f"no schema change {change!r}")


def _done(snapshot: int) -> dict:
    return {"snapshot": snapshot, "changed": True}


def _alter(lake: Lake, namespace: str, name: str, items: Sequence[Mapping], options) -> dict:
    table = f"{namespace}.{name}"
    changes: list[ColumnChange] = []
    comments: list[tuple[tuple[str, ...] | None, str | None]] = []
    for item in items:
        _read_change(item, table, changes, comments)
    snapshot = lake.snapshot_id()
    if changes:
        snapshot = alter_table(lake, namespace, name, changes, options=options)
    for column, comment in comments:
        snapshot = set_comment(lake, namespace, name, comment, column=column, options=options)
    return _done(snapshot)


def _read_change(item: Mapping, table: str, changes: list, comments: list) -> None:
    """One Spark ``TableChange`` (its JSON) as the core's column change or a comment."""
    op = str(item.get("op"))
    path = tuple(str(p) for p in item.get("path") or ())
    column = ".".join(path)
    if op == "add_column":
        if item.get("position"):
            raise UnsupportedFeatureError(
                f"ALTER TABLE {table} ADD COLUMN {column} {item['position']}: a DuckLake "
                "table adds a column after its others; add it without FIRST or AFTER"
            )
        if not item.get("nullable", True):
            raise UnsupportedFeatureError(
                f"ALTER TABLE {table} ADD COLUMN {column} NOT NULL: the rows written before "
                "have no value for it; add it nullable, then ALTER COLUMN ... SET NOT NULL"
            )
        kind = _column_type(item["type"], path, table)
        changes.append(AddColumn(path, kind, _text(item.get("default"))))
        if item.get("comment") is not None:
            comments.append((path, str(item["comment"])))
    elif op == "drop_column":
        changes.append(DropColumn(path, bool(item.get("if_exists"))))
    elif op == "rename_column":
        changes.append(RenameColumn(path, str(item["new_name"])))
    elif op == "set_type":
        changes.append(SetColumnType(path, _column_type(item["type"], path, table)))
    elif op == "set_nullable":
        changes.append(DropNotNull(path) if item["nullable"] else SetNotNull(path))
    elif op == "set_default":
        default = _text(item.get("default"))
        changes.append(SetDefault(path, default) if default else DropDefault(path))
    elif op == "set_comment":
        comments.append((path, _text(item.get("comment"))))
    elif op in ("set_property", "remove_property") and item.get("property") == "comment":
        comments.append((None, _text(item.get("value")) if op == "set_property" else None))
    elif op in ("set_property", "remove_property"):
        raise UnsupportedFeatureError(
            f"ALTER TABLE {table} SET/UNSET TBLPROPERTIES ({item.get('property')!r}): a "
            "DuckLake table records no properties but its comment; set options with "
            "DuckDB's ducklake_set_option"
        )
    else:
        raise UnsupportedFeatureError(
            f"ALTER TABLE {table}: Spark's {item.get('what') or op} is not a change a DuckLake "
            "table records (a column's position, for one)"
        )


def _text(value) -> str | None:
    return None if value is None else str(value)


def _column_type(spark_json: str, path: tuple[str, ...], table: str) -> ColumnType:
    """A Spark type (its JSON) as the DuckLake type a Spark write of it records."""
    name = path[-1] if path else "?"
    arrow = spark_arrow_type(_parse_datatype_json_string(str(spark_json)), name)
    return column_type_of(arrow, name, f"table {table}")
