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
``merge_schema`` ``{schema}`` (a Spark schema's JSON) adds the columns and struct fields of a
stream's rows that the table lacks (its ``mergeSchema`` option), as ``append(...,
schema_mode="merge")`` adds them: one snapshot, ``changed`` false when it has them all.

All column changes of one statement commit as one snapshot, as DuckDB commits several
``ALTER``s of one transaction; a comment (``COMMENT`` of ``ADD COLUMN``, ``ALTER COLUMN ...
COMMENT``, ``COMMENT ON TABLE``) is a snapshot of its own after them, as DuckDB's
``COMMENT ON`` is a statement of its own. What DuckLake cannot record is refused by name
before anything commits: a column position (``FIRST`` / ``AFTER``), a new column ``NOT
NULL`` (the rows written before it have no value), table properties other than the comment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

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
    add_missing_columns,
    alter_table,
    column_type_of,
    create_schema,
    drop_schema,
    drop_table,
    rename_table,
    set_comment,
    set_partitioned_by,
)
from .._core import spark_arrow_type
from ._write import arrow_schema, commit_options

__all__ = ["schema_change_response"]

# The table property that sets a table's partition keys (Spark has no other DDL for it):
# ``ALTER TABLE t SET TBLPROPERTIES ('partitioned_by' = 'region, year(day)')``, as DuckDB's
# ``SET PARTITIONED BY (region, year(day))``; ``UNSET`` as its ``RESET PARTITIONED BY``.
PARTITIONED_BY = "partitioned_by"


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
    if change == "merge_schema":
        data = arrow_schema(str(request["schema"]), f"{namespace}.{name}")
        snapshot = add_missing_columns(lake, namespace, name, data, options=options)
        if snapshot is None:
            return {"snapshot": lake.snapshot_id(), "changed": False}
        return _done(snapshot)
    raise InvalidOptionError(f"no schema change {change!r}")


def _done(snapshot: int) -> dict:
    return {"snapshot": snapshot, "changed": True}


def _alter(lake: Lake, namespace: str, name: str, items: Sequence[Mapping], options) -> dict:
    table = f"{namespace}.{name}"
    changes: list[ColumnChange] = []
    after: list[Callable[[], int]] = []  # snapshots of their own, after the column changes
    later = _Later(lake, namespace, name, options, after)
    for item in items:
        _read_change(item, table, changes, later)
    snapshot = lake.snapshot_id()
    if changes:
        snapshot = alter_table(lake, namespace, name, changes, options=options)
    for change in after:
        snapshot = change()
    return _done(snapshot)


@dataclass(frozen=True)
class _Later:
    """The changes of a statement that DuckDB makes by statements of their own (``COMMENT
    ON``, ``SET PARTITIONED BY``): each a snapshot after the column changes."""

    lake: Lake
    namespace: str
    name: str
    options: object
    after: list

    def comment(self, column: tuple[str, ...] | None, comment: str | None) -> None:
        lake, namespace, name, options = self.lake, self.namespace, self.name, self.options
        self.after.append(
            lambda: set_comment(lake, namespace, name, comment, column=column, options=options)
        )

    def partitioning(self, keys: list[str]) -> None:
        lake, namespace, name, options = self.lake, self.namespace, self.name, self.options
        self.after.append(lambda: set_partitioned_by(lake, namespace, name, keys, options=options))


def _read_change(item: Mapping, table: str, changes: list, later: _Later) -> None:
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
            later.comment(path, str(item["comment"]))
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
        later.comment(path, _text(item.get("comment")))
    elif op in ("set_property", "remove_property") and item.get("property") == "comment":
        later.comment(None, _text(item.get("value")) if op == "set_property" else None)
    elif op in ("set_property", "remove_property") and item.get("property") == PARTITIONED_BY:
        value = _text(item.get("value")) if op == "set_property" else None
        later.partitioning(partition_keys_of(value))
    elif op in ("set_property", "remove_property"):
        raise UnsupportedFeatureError(
            f"ALTER TABLE {table} SET/UNSET TBLPROPERTIES ({item.get('property')!r}): a "
            f"DuckLake table records no properties but 'comment' and {PARTITIONED_BY!r} "
            "(its partition keys); set options with DuckDB's ducklake_set_option"
        )
    else:
        raise UnsupportedFeatureError(
            f"ALTER TABLE {table}: Spark's {item.get('what') or op} is not a change a DuckLake "
            "table records (a column's position, for one)"
        )


def partition_keys_of(value: str | None) -> list[str]:
    """``'region, year(day), bucket(8, id)'`` as DuckDB's keys (commas inside a key's
    parentheses stay); none or blank: unpartitioned."""
    keys, depth, start = [], 0, 0
    text = value or ""
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            keys.append(text[start:at])
            start = at + 1
    keys.append(text[start:])
    return [key.strip() for key in keys if key.strip()]


def _text(value) -> str | None:
    return None if value is None else str(value)


def _column_type(spark_json: str, path: tuple[str, ...], table: str) -> ColumnType:
    """A Spark type (its JSON) as the DuckLake type a Spark write of it records."""
    name = path[-1] if path else "?"
    arrow = spark_arrow_type(_parse_datatype_json_string(str(spark_json)), name)
    return column_type_of(arrow, name, f"table {table}")
