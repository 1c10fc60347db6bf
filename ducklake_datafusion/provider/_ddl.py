"""The Python API of schema changes: ``DuckLakeCatalog``'s methods, each one snapshot.

``lake.add_column("orders", "discount", "DECIMAL(9,2)", default=0)``, ``drop_column``,
``rename_column``, ``alter_column_type``, ``set_default``/``drop_default``,
``set_not_null``, ``set_partitioned_by``, ``set_comment``, ``rename_table``, ``drop_table``, ``create_schema``, ``drop_schema``;
``alter_table`` takes several of the core's change values (``catalog.AddColumn``, ...)
for one snapshot. Each is a call into the engine-neutral ``write`` functions, which
DataFusion's SQL (``_ddl_sql``) calls as well.

A type is a DuckDB type name (``"BIGINT"``, ``"STRUCT(a INT, b VARCHAR[])"``), a pyarrow
type (mapped as ``create_table`` maps it) or a ``catalog.ColumnType``. A column is its
name, or a tuple of names for a struct's field (``("s", "x")``). A default is a Python
value (``42``, ``"text"``, ``Decimal("1.5")``, ``datetime.date(...)``) or, with
``sql=True``, SQL text as DuckDB reads it.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Sequence

import pyarrow as pa

from ..catalog import (
    AddColumn,
    ColumnChange,
    ColumnType,
    CommitOptions,
    DropColumn,
    DropDefault,
    DropNotNull,
    RenameColumn,
    SetColumnType,
    SetDefault,
    SetNotNull,
    parse_type,
)
from ..errors import InvalidOptionError
from ..write import (
    alter_table,
    column_type_of,
    create_schema,
    drop_schema,
    drop_table,
    rename_table,
    set_comment,
    set_partitioned_by,
)
from ._table_names import split_table_name

__all__ = ["DdlMethods", "column_type", "default_sql"]


def column_type(kind, column: str = "?") -> ColumnType:
    """A type as the core takes it, from a DuckDB type name, a pyarrow type or itself."""
    if isinstance(kind, ColumnType):
        return kind
    if isinstance(kind, str):
        return parse_type(kind)
    if isinstance(kind, pa.DataType):
        return column_type_of(kind, column, "?")
    raise InvalidOptionError(
        f"column {column!r}: a type is a DuckDB type name or a pyarrow type, got {kind!r}"
    )


def default_sql(value, *, sql: bool = False) -> str | None:
    """A Python value as the SQL literal DuckDB would be given for it."""
    if sql:
        if not isinstance(value, str):
            raise InvalidOptionError(f"with sql=True a default is SQL text, got {value!r}")
        return value
    if value is None:
        return None
    if isinstance(value, bool):  # DuckDB reads TRUE as a cast, not a literal: give text
        return "'true'" if value else "'false'"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"'{value}'"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return _text(value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else str(value))
    if isinstance(value, str):
        return _text(value)
    raise InvalidOptionError(
        f"a default is a number, text, a date or time, or None; got {type(value).__name__} "
        "(give SQL text with sql=True)"
    )


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _path(column) -> tuple[str, ...]:
    if isinstance(column, str) and column:
        return (column,)
    if isinstance(column, (tuple, list)) and column and all(isinstance(c, str) for c in column):
        return tuple(column)
    raise InvalidOptionError(
        f"a column is its name, or a tuple of names for a struct's field; got {column!r}"
    )


class DdlMethods:
    """Mixed into ``DuckLakeCatalog`` (its ``lake``)."""

    def alter_table(
        self,
        table: str,
        *changes: ColumnChange,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | None = None,
    ) -> int:
        """Apply the core's column changes (``catalog.AddColumn``, ``DropColumn``,
        ``RenameColumn``, ``SetColumnType``, ``SetDefault``, ``DropDefault``,
        ``SetNotNull``, ``DropNotNull``) to ``table`` ("schema.table" or "table"), in
        order, as one snapshot; returns its id."""
        schema, name = split_table_name(table)
        options = CommitOptions(author, commit_message, commit_extra_info)
        return alter_table(self.lake, schema, name, changes, options=options)

    def add_column(
        self,
        table: str,
        column,
        type,
        *,
        default=None,
        sql: bool = False,
        if_not_exists: bool = False,
        **commit,
    ) -> int:
        """Add ``column`` (a name, or ``("struct", "field")``) of ``type``; rows written
        before read ``default`` (a literal), as new rows that leave it out do.

        Raises:
            TableExistsError: a column of that name exists (unless ``if_not_exists``).
            UnsupportedTypeError: a type DuckLake does not store.
        """
        path = _path(column)
        change = AddColumn(
            path, column_type(type, path[-1]), default_sql(default, sql=sql), if_not_exists
        )
        return self.alter_table(table, change, **commit)

    def drop_column(self, table: str, column, *, if_exists: bool = False, **commit) -> int:
        """Drop ``column`` (a struct's field too); refused for a partition key."""
        return self.alter_table(table, DropColumn(_path(column), if_exists), **commit)

    def rename_column(self, table: str, column, new_name: str, **commit) -> int:
        """Rename ``column`` (a struct's field too) to ``new_name``."""
        return self.alter_table(table, RenameColumn(_path(column), new_name), **commit)

    def alter_column_type(self, table: str, column, type, **commit) -> int:
        """Widen ``column`` to ``type`` (``INTEGER`` to ``BIGINT``, ``FLOAT`` to
        ``DOUBLE``, a wider ``DECIMAL``; a narrowing is refused by name)."""
        path = _path(column)
        return self.alter_table(table, SetColumnType(path, column_type(type, path[-1])), **commit)

    def set_default(self, table: str, column: str, default, *, sql: bool = False, **commit) -> int:
        """New rows that leave ``column`` out get ``default`` (with ``sql=True``: SQL
        text, an expression such as ``now()`` too)."""
        text = default_sql(default, sql=sql)
        change = DropDefault(_path(column)) if text is None else SetDefault(_path(column), text)
        return self.alter_table(table, change, **commit)

    def drop_default(self, table: str, column: str, **commit) -> int:
        """New rows that leave ``column`` out get NULL."""
        return self.alter_table(table, DropDefault(_path(column)), **commit)

    def set_not_null(self, table: str, column: str, not_null: bool = True, **commit) -> int:
        """Mark ``column`` NOT NULL (or, with ``not_null=False``, nullable again)."""
        change = SetNotNull(_path(column)) if not_null else DropNotNull(_path(column))
        return self.alter_table(table, change, **commit)

    def set_partitioned_by(self, table: str, keys: Sequence[str], **commit) -> int:
        """Partition the files written to ``table`` from now on by ``keys``
        (``["region", "year(day)", "bucket(8, id)"]``; ``[]``: unpartitioned, DuckDB's
        ``RESET PARTITIONED BY``). Files written before keep their partitioning."""
        schema, name = split_table_name(table)
        options = _options(commit)
        return set_partitioned_by(self.lake, schema, name, keys, options=options)

    def set_comment(self, table: str, comment: str | None, *, column=None, **commit) -> int:
        """Set (``None``: clear) the comment of ``table`` or of its top-level ``column``
        (DuckDB's ``COMMENT ON``; read back by ``column_comments``)."""
        schema, name = split_table_name(table)
        path = None if column is None else _path(column)
        options = _options(commit)
        return set_comment(self.lake, schema, name, comment, column=path, options=options)

    def rename_table(self, table: str, new_name: str, **commit) -> int:
        """Rename ``table`` ("schema.table" or "table") to ``new_name``, same schema."""
        schema, name = split_table_name(table)
        return rename_table(self.lake, schema, name, new_name, options=_options(commit))

    def drop_table(self, table: str, *, if_exists: bool = False, **commit) -> int:
        """Drop ``table``; its files stay for earlier snapshots (expire, then clean up)."""
        schema, name = split_table_name(table)
        options = _options(commit)
        return drop_table(self.lake, schema, name, if_exists=if_exists, options=options)

    def create_schema(self, name: str, *, if_not_exists: bool = False, **commit) -> int:
        """Create schema ``name``; returns the snapshot id."""
        options = _options(commit)
        return create_schema(self.lake, name, if_not_exists=if_not_exists, options=options)

    def drop_schema(
        self, name: str, *, cascade: bool = False, if_exists: bool = False, **commit
    ) -> int:
        """Drop schema ``name`` (it must be empty, unless ``cascade``)."""
        options = _options(commit)
        return drop_schema(self.lake, name, cascade=cascade, if_exists=if_exists, options=options)


def _options(commit: dict) -> CommitOptions:
    unknown = set(commit) - {"author", "commit_message", "commit_extra_info"}
    if unknown:
        raise InvalidOptionError(
            f"unknown option(s) {sorted(unknown)}; commit options are author, "
            "commit_message and commit_extra_info"
        )
    return CommitOptions(**commit)
