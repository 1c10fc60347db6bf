"""The catalog rows of schema changes (``_ddl_actions``), as DuckDB 1.5.5 writes them.

An :class:`AlterTable` reads the table's live ``ducklake_column`` rows, applies its
changes in order to a copy of them, and writes the difference: a row whose column is
gone is ended (``end_snapshot``), a changed one is ended and begun again with the same
``column_id`` and ``column_order``, a new column gets the next id of the table (one more
than any it ever had) as id and order. Several changes of one column in one transaction
leave one new row, as DuckDB's. Each change marks its rows as DuckDB 1.5.5 does, down to
the quirks measured on its catalogs (kept, so that its twin lake's rows are ours):

* a field added to a struct has ``nulls_allowed`` false and every row of it, nested ones
  too, ``default_value_type`` ``literal``;
* a renamed struct field and a field whose type changes inside a nested column lose
  their defaults (``initial_default`` NULL, ``default_value`` ``NULL``, type ``''``) and
  get ``nulls_allowed`` false;
* a renamed top-level struct, list or map gets ``default_value_type`` ``literal``.

A table change writes a ``ducklake_schema_versions`` row. The rows of a table's or a
schema's own changes are ``_ddl_table_rows``'.
"""

from __future__ import annotations

from ..errors import InvalidOptionError, TableExistsError, TableNotFoundError
from ._commit_rows import columns_of, insert_row
from ._ddl_actions import (
    AddColumn,
    AlterTable,
    ColumnType,
    DropColumn,
    DropDefault,
    DropNotNull,
    RenameColumn,
    SetColumnType,
    SetDefault,
    SetNotNull,
)
from ._ddl_types import check_widening, duckdb_type_name, evaluate_default
from ._sql import as_bool

__all__ = ["alter_table_rows", "column_id_at", "plan_alter", "schema_version_row", "table_columns"]

# the changes after which DuckDB makes a new inlined-data table for the table
_LAYOUT = (AddColumn, DropColumn, RenameColumn, SetColumnType)
_COMPARED = (
    "column_order",
    "column_name",
    "column_type",
    "initial_default",
    "default_value",
    "nulls_allowed",
    "parent_column",
    "default_value_type",
    "default_value_dialect",
)


class _Columns:
    """A table's live column rows as dicts by id, changed in place by the changes."""

    def __init__(self, session, table_id: int, what: str) -> None:
        self.names = [c for c in columns_of(session, "ducklake_column") if c != "end_snapshot"]
        rows = session.rows(
            f"SELECT {', '.join(self.names)} FROM ducklake_column WHERE table_id = ? "
            "AND end_snapshot IS NULL",
            [table_id],
        )
        self.before = {int(r[0]): dict(zip(self.names, r, strict=True)) for r in rows}
        for row in self.before.values():
            row["nulls_allowed"] = as_bool(row["nulls_allowed"])
            for key in ("parent_column", "column_order"):
                row[key] = None if row[key] is None else int(row[key])
        self.rows = {i: dict(r) for i, r in self.before.items()}
        (top,) = session.rows(
            "SELECT max(column_id) FROM ducklake_column WHERE table_id = ?", [table_id]
        )[0]
        self.next_id = int(top or 0) + 1
        self.what = what

    def children(self, parent: int | None) -> list[dict]:
        found = [r for r in self.rows.values() if r["parent_column"] == parent]
        return sorted(found, key=lambda r: (r["column_order"], r["column_id"]))

    def child(self, parent: int | None, name: str) -> dict | None:
        siblings = self.children(parent)
        for row in siblings:
            if row["column_name"] == name:
                return row
        folded = [r for r in siblings if r["column_name"].lower() == name.lower()]
        return folded[0] if len(folded) == 1 else None

    def find(self, path: tuple[str, ...], *, missing_ok: bool = False) -> dict | None:
        if not path:
            raise InvalidOptionError(
                f"{self.what}: a column is named by a path of one name or more"
            )
        row = None
        for depth, name in enumerate(path):
            row = self.child(None if row is None else row["column_id"], name)
            if row is None:
                if missing_ok:
                    return None
                shown = ".".join(path[: depth + 1])
                raise TableNotFoundError(
                    f"{self.what} has no column {shown!r} (its columns: "
                    f"{', '.join(r['column_name'] for r in self.children(None))})"
                )
        return row

    def descendants(self, column_id: int) -> list[int]:
        ids = [column_id]
        for child in self.children(column_id):
            ids += self.descendants(child["column_id"])
        return ids

    def new_rows(self, name: str, kind: ColumnType, parent: int | None, nested_add: bool):
        """Rows of a new column (and its nested fields), depth first, ids in order."""
        column_id = self.next_id
        self.next_id += 1
        row = {
            "column_id": column_id,
            "column_order": column_id,
            "column_name": name,
            "column_type": kind.name,
            "initial_default": None,
            "default_value": "NULL",
            "nulls_allowed": not nested_add,
            "parent_column": parent,
            "default_value_type": "literal" if nested_add or not kind.nested else "",
            "default_value_dialect": "duckdb",
        }
        self.rows[column_id] = row
        for child_name, child in kind.fields:
            self.new_rows(child_name, child, column_id, nested_add)
        return row

    def top_level(self) -> list[tuple[str, ColumnType]]:
        return [(r["column_name"], self.type_of(r)) for r in self.children(None)]

    def type_of(self, row: dict) -> ColumnType:
        fields = tuple((c["column_name"], self.type_of(c)) for c in self.children(row["column_id"]))
        return ColumnType(row["column_type"], fields)


def plan_alter(session, action: AlterTable, table_id: int, what: str):
    """``action``'s changes applied to the table's live columns: the ids of the rows to
    end, the rows to begin (both empty: nothing changes, as ``IF [NOT] EXISTS`` may make
    it), and, when a column was added, dropped, renamed or retyped, the table's columns
    after (``(name, ColumnType)`` in order; else ``None``)."""
    columns = _Columns(session, table_id, what)
    for change in action.changes:
        _apply(session, columns, change, table_id, what)
    ended, begun = [], []
    for column_id, row in columns.before.items():
        now = columns.rows.get(column_id)
        if now is None or any(now.get(k) != row.get(k) for k in _COMPARED):
            ended.append(column_id)
            if now is not None:
                begun.append(now)
    begun += [r for i, r in columns.rows.items() if i not in columns.before]
    layout = None
    if (ended or begun) and any(isinstance(c, _LAYOUT) for c in action.changes):
        layout = columns.top_level()
    return tuple(ended), tuple(sorted(begun, key=lambda r: r["column_id"])), layout


def column_id_at(session, table_id: int, path: tuple[str, ...], what: str) -> int:
    """The id of the live column at ``path`` (names case-insensitive).

    Raises:
        TableNotFoundError: no such column (the table's named).
    """
    return _Columns(session, table_id, what).find(tuple(path))["column_id"]


def table_columns(session, table_id: int) -> list[tuple[str, ColumnType]]:
    """A table's live top-level columns and their types, in order."""
    return _Columns(session, table_id, "").top_level()


def alter_table_rows(session, planned, table_id: int, snapshot: int) -> None:
    """Write what :func:`plan_alter` planned."""
    ended, begun, _ = planned
    for column_id in ended:
        session.execute(
            "UPDATE ducklake_column SET end_snapshot = ? WHERE table_id = ? AND column_id = ? "
            "AND end_snapshot IS NULL",
            [snapshot, table_id, column_id],
        )
    for row in begun:
        insert_row(
            session,
            "ducklake_column",
            {**row, "begin_snapshot": snapshot, "end_snapshot": None, "table_id": table_id},
        )


def _apply(session, columns: _Columns, change, table_id: int, what: str) -> None:
    path = tuple(change.path)
    if isinstance(change, AddColumn):
        parent = None
        if len(path) > 1:
            parent = columns.find(path[:-1])
            if parent["column_type"] != "struct":
                raise InvalidOptionError(
                    f"{what}: fields are added to structs only; {'.'.join(path[:-1])!r} is "
                    f"a {parent['column_type']}"
                )
        parent_id = None if parent is None else parent["column_id"]
        if columns.child(parent_id, path[-1]) is not None:
            if change.if_not_exists:
                return
            raise TableExistsError(
                f"{what} already has a column {'.'.join(path)!r}; choose another name "
                "(names are case-insensitive)"
            )
        column = f"{what}: column {'.'.join(path)!r}"
        duckdb_type_name(change.type)  # a DuckLake type, or refused by name
        default = evaluate_default(change.default, change.type, column, literal_only=True)
        row = columns.new_rows(path[-1], change.type, parent_id, nested_add=parent is not None)
        row["initial_default"] = default.initial_default
        row["default_value"] = default.default_value
        return
    row = columns.find(path, missing_ok=isinstance(change, DropColumn) and change.if_exists)
    if row is None:
        return
    column = f"{what}: column {'.'.join(path)!r}"
    top = row["parent_column"] is None
    if isinstance(change, DropColumn):
        if top and len(columns.children(None)) == 1:
            raise InvalidOptionError(f"{column} is the table's only column; drop the table")
        if top:
            _refuse_partition_key(session, table_id, row, column)
        for column_id in columns.descendants(row["column_id"]):
            del columns.rows[column_id]
    elif isinstance(change, RenameColumn):
        new = change.new_name
        if not isinstance(new, str) or not new:
            raise InvalidOptionError(f"{column}: a new name is text, got {new!r}")
        clash = columns.child(row["parent_column"], new)
        if clash is not None and clash is not row:
            raise TableExistsError(
                f"{column} cannot be renamed to {new!r}: the table has a column of that "
                "name (names are case-insensitive); rename or drop that one first"
            )
        if top:
            if row["column_type"] in ("struct", "list", "map"):
                row["default_value_type"] = "literal"
        else:
            _lose_default(row)
        row["column_name"] = new
    elif isinstance(change, SetColumnType):
        duckdb_type_name(change.type)  # a DuckLake type, or refused by name
        _set_type(columns, row, change.type, column, top)
    elif isinstance(change, (SetDefault, DropDefault)):
        _require_top(top, column, "a default")
        sql = change.default if isinstance(change, SetDefault) else None
        default = evaluate_default(sql, columns.type_of(row), column, literal_only=False)
        row["default_value"] = default.default_value
        row["default_value_type"] = default.default_value_type
    elif isinstance(change, (SetNotNull, DropNotNull)):
        _require_top(top, column, "NOT NULL")
        wanted = isinstance(change, DropNotNull)
        if row["nulls_allowed"] == wanted:
            state = "allows NULL already" if wanted else "is NOT NULL already"
            raise InvalidOptionError(f"{column} {state} (as DuckDB refuses it)")
        if not wanted:
            _refuse_nulls(session, table_id, row, column)
        row["nulls_allowed"] = wanted
    else:
        raise InvalidOptionError(f"{what}: not a column change: {change!r}")


def _lose_default(row: dict) -> None:
    """What DuckDB 1.5.5 writes for a nested field it re-creates (see the module notes)."""
    row.update(
        initial_default=None, default_value="NULL", default_value_type="", nulls_allowed=False
    )


def _require_top(top: bool, column: str, what: str) -> None:
    if not top:
        raise InvalidOptionError(
            f"{column}: {what} is set on top-level columns only (as DuckDB's ALTER COLUMN)"
        )


def _set_type(columns: _Columns, row: dict, target: ColumnType, column: str, top: bool) -> None:
    """``row`` becomes ``target``: a primitive widened; a nested type's fields matched by
    name (added, dropped, widened), as DuckDB evolves them."""
    source = row["column_type"]
    if target.nested or source in ("struct", "list", "map"):
        if target.name != source:
            raise InvalidOptionError(
                f"{column} is a {source.upper()}; it cannot become {duckdb_type_name(target)}"
            )
        children = {c["column_name"].lower(): c for c in columns.children(row["column_id"])}
        for name, kind in target.fields:
            child = children.pop(name.lower(), None)
            if child is None:  # a new field (ConvertColumn's row: nullable, no default)
                if target.name != "struct":
                    raise InvalidOptionError(f"{column}: cannot change the shape of a {source}")
                columns.new_rows(name, kind, row["column_id"], nested_add=False)
                continue
            _set_type(columns, child, kind, f"{column}.{child['column_name']}", False)
        for child in children.values():
            for column_id in columns.descendants(child["column_id"]):
                del columns.rows[column_id]
        return
    check_widening(source, target.name, column)
    if source == target.name:
        return
    row["column_type"] = target.name
    if not top:
        _lose_default(row)


def _refuse_partition_key(session, table_id: int, row: dict, column: str) -> None:
    keys = session.rows(
        "SELECT c.column_id FROM ducklake_partition_column c JOIN ducklake_partition_info i "
        "ON c.partition_id = i.partition_id WHERE i.table_id = ? AND i.end_snapshot IS NULL",
        [table_id],
    )
    if any(int(k[0]) == row["column_id"] for k in keys):
        raise InvalidOptionError(
            f"{column} cannot be dropped: the table is partitioned by it; reset or change the "
            "partitioning first (DuckDB: ALTER TABLE ... RESET PARTITIONED BY)"
        )


def _refuse_nulls(session, table_id: int, row: dict, column: str) -> None:
    """``SET NOT NULL`` only where the table's statistics say no NULL was ever written
    (DuckDB reads the rows when they say one was; this package does not)."""
    stats = session.rows(
        "SELECT contains_null FROM ducklake_table_column_stats WHERE table_id = ? AND "
        "column_id = ?",
        [table_id, row["column_id"]],
    )
    if stats and stats[0][0] is not None and as_bool(stats[0][0]):
        raise InvalidOptionError(
            f"{column} cannot be made NOT NULL: the table's statistics say it holds NULL "
            "values (or held ones since deleted); set it in DuckDB, which reads the rows"
        )


def schema_version_row(session, table_id: int, snapshot: int, schema_version: int) -> None:
    if session.has_table("ducklake_schema_versions"):
        insert_row(
            session,
            "ducklake_schema_versions",
            {"begin_snapshot": snapshot, "schema_version": schema_version, "table_id": table_id},
        )
