"""Schema changes as data: the DDL actions of a :class:`~._transaction.Transaction`.

Every schema change is catalog rows only (readers map older files by field id), so each
is a plain frozen value that any engine builds (Python's methods, DataFusion's SQL, a
Spark ``TableChange`` turned into one of these on the driver) and ``_commit`` writes as
DuckDB 1.5.5 writes the same statement (``_ddl_rows``):

* :class:`AlterTable`: one table's column changes (:class:`AddColumn`,
  :class:`DropColumn`, :class:`RenameColumn`, :class:`SetColumnType`, :class:`SetDefault`,
  :class:`DropDefault`, :class:`SetNotNull`, :class:`DropNotNull`), applied in order and
  written as one snapshot, as DuckDB writes several ``ALTER``s in one transaction.
* :class:`SetPartitioning` (``SET``/``RESET PARTITIONED BY``), :class:`SetComment`,
  :class:`RenameTable`,
  :class:`DropTable`, :class:`CreateSchema`, :class:`DropSchema`.

A column is named by its path of names (``("s", "x")``: field ``x`` of struct ``s``);
names match case-insensitively, as DuckDB's. A type is a :class:`ColumnType` tree of
DuckLake type names (``int32``, ``decimal(9,2)``, ``struct`` with fields); a default is
SQL text as DuckDB reads it (``42``, ``'text'``; an expression for ``SET DEFAULT``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ._table_ref import TableRef

__all__ = [
    "AddColumn",
    "AlterTable",
    "ColumnChange",
    "ColumnType",
    "CreateSchema",
    "DropColumn",
    "DropDefault",
    "DropNotNull",
    "DropSchema",
    "DropTable",
    "RenameColumn",
    "RenameTable",
    "SetColumnType",
    "SetComment",
    "SetDefault",
    "SetNotNull",
    "SetPartitioning",
]

NESTED_TYPES = ("struct", "list", "map")


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A DuckLake column type: ``name`` as ``ducklake_column.column_type`` spells it
    (``int32``, ``varchar``, ``decimal(18,3)``, ``struct``, ``list``, ``map``) and, for
    the nested ones, the fields in order (a list's one ``element``, a map's ``key`` and
    ``value``)."""

    name: str
    fields: tuple[tuple[str, ColumnType], ...] = ()

    @property
    def nested(self) -> bool:
        return self.name in NESTED_TYPES

    def __str__(self) -> str:
        if self.name == "struct":
            inner = ", ".join(f"{name} {kind}" for name, kind in self.fields)
            return f"STRUCT({inner})"
        if self.name == "list":
            return f"{self.fields[0][1]}[]"
        if self.name == "map":
            return f"MAP({self.fields[0][1]}, {self.fields[1][1]})"
        return self.name


@dataclass(frozen=True, slots=True)
class AddColumn:
    """Add column ``path[-1]`` (a top-level column, or a field of the struct at
    ``path[:-1]``) of ``type``; rows written before read ``default`` (a literal, SQL
    text; ``None``: NULL), as do new rows that leave it out. ``if_not_exists``: nothing
    to do when a column of that name exists (``ADD COLUMN IF NOT EXISTS``)."""

    path: tuple[str, ...]
    type: ColumnType
    default: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropColumn:
    """Drop the column or struct field at ``path`` (its nested fields with it);
    ``if_exists``: nothing to do when there is none."""

    path: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """Rename the column or struct field at ``path`` to ``new_name``."""

    path: tuple[str, ...]
    new_name: str


@dataclass(frozen=True, slots=True)
class SetColumnType:
    """Give the column at ``path`` the type ``type``: a widening DuckDB allows (older
    files are read widened); for a struct, list or map, the nested type it becomes
    (fields matched by name: new ones added, missing ones dropped, the others widened)."""

    path: tuple[str, ...]
    type: ColumnType


@dataclass(frozen=True, slots=True)
class SetDefault:
    """The value new rows that leave the top-level column out get: ``default`` is SQL
    text, a literal or an expression (``now()``), as DuckDB's ``SET DEFAULT``."""

    path: tuple[str, ...]
    default: str


@dataclass(frozen=True, slots=True)
class DropDefault:
    """New rows that leave the column out get NULL (``DROP DEFAULT``)."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetNotNull:
    """Mark the top-level column ``NOT NULL`` (refused when its statistics say it holds
    a NULL)."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DropNotNull:
    """Allow NULL in the top-level column again."""

    path: tuple[str, ...]


ColumnChange = (
    AddColumn
    | DropColumn
    | RenameColumn
    | SetColumnType
    | SetDefault
    | DropDefault
    | SetNotNull
    | DropNotNull
)


@dataclass(frozen=True, slots=True)
class AlterTable:
    """Change ``table``'s columns: ``changes`` applied in order, one snapshot
    (``altered_table:<id>``)."""

    table: TableRef
    changes: tuple[ColumnChange, ...]


@dataclass(frozen=True, slots=True)
class SetPartitioning:
    """Partition ``table``'s files written from now on by ``keys``: ``(column id,
    transform)`` each (``identity``, ``year``, ``bucket(8)``, ... as
    ``ducklake_partition_column`` spells them), in key order; none: unpartitioned
    (``RESET PARTITIONED BY``). Files written before keep their partitioning."""

    table: TableRef
    keys: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class SetComment:
    """``table``'s comment (``column``: a top-level column's) becomes ``comment`` (``None``:
    none), as DuckDB's ``COMMENT ON TABLE``/``COLUMN`` records it (a ``comment`` tag)."""

    table: TableRef
    comment: str | None
    column: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class RenameTable:
    """Rename ``table`` to ``new_name`` in its schema (DuckDB records
    this as ``created_table:"schema"."new_name"``; the id and directory stay)."""

    table: TableRef
    new_name: str


@dataclass(frozen=True, slots=True)
class DropTable:
    """Drop ``table``: its rows, columns, files and partitioning end
    at this snapshot (files stay on storage for the snapshots before it)."""

    table: TableRef


@dataclass(frozen=True, slots=True)
class CreateSchema:
    """Create schema ``name`` (``created_schema:"name"``); ``if_not_exists``: nothing to
    do when it exists. ``schema_uuid``: its uuid (default: a random one)."""

    name: str
    if_not_exists: bool = False
    schema_uuid: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class DropSchema:
    """Drop schema ``name``; with ``cascade`` its tables and views too, else it must be
    empty. ``if_exists``: nothing to do when there is none."""

    name: str
    cascade: bool = False
    if_exists: bool = False
