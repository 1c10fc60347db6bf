"""Schema evolution on write: the columns a write's data brings that its table lacks.

``append(..., schema_mode="merge")`` (Delta's ``mergeSchema``, pyiceberg's
``union_by_name``): before the rows are written, every top-level column and struct field of
the data that the table does not have (names matched case-insensitively, as DuckDB's) is
added, as DuckDB's ``ALTER TABLE ... ADD COLUMN`` of each would add it (``s.f`` for a
struct's field), all in one snapshot; the rows then go in as a second snapshot, against the
table with its new columns. Columns the data lacks stay (NULL, or their default, in the new
rows); a column whose type differs is cast as any append casts it (exactly, or refused by
name): merging adds, it never retypes.

Two snapshots, not one: a data file carries its columns' field ids, and a new column's id
is drawn when its ALTER commits. A write that fails after the ALTER committed leaves the
columns added (readers see them NULL in every row before), which is what a retry needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..catalog import AddColumn, ColumnChange, ColumnSpec, ColumnType, CommitOptions
from ..errors import CommitConflictError, InvalidOptionError
from ..scan import Lake
from ._schema_changes import alter_table
from ._types import columns_for_schema

__all__ = ["SCHEMA_MODES", "add_missing_columns", "column_type_of"]

# ``schema_mode`` of a write: ``None`` (the data's columns must be the table's) or ``merge``.
SCHEMA_MODES = (None, "merge")


def add_missing_columns(
    lake: Lake,
    schema: str,
    table: str,
    data_schema: pa.Schema,
    *,
    expected_table_id: int | None = None,
    options: CommitOptions | None = None,
) -> int | None:
    """Add to ``schema.table`` (at the latest snapshot) the columns and struct fields of
    ``data_schema`` it lacks, as one snapshot; its id, or ``None`` when it has them all."""
    target = lake.table(schema, table)
    if expected_table_id is not None and target.entry.table_id != expected_table_id:
        raise CommitConflictError(
            f"table {schema}.{table} of {lake.description} was dropped or replaced since it "
            "was resolved; nothing was committed: resolve it again"
        )
    what = f"table {schema}.{table}"
    changes = _missing(target.columns, list(data_schema), (), what)
    if not changes:
        return None
    return alter_table(lake, schema, table, changes, options=options)


def _missing(
    columns: Sequence[ColumnSpec], fields: Sequence[pa.Field], parent: tuple[str, ...], what: str
) -> list[ColumnChange]:
    have = {column.name.lower(): column for column in columns}
    changes: list[ColumnChange] = []
    seen: set[str] = set()
    for field in fields:
        key = field.name.lower()
        if key in seen:
            raise InvalidOptionError(f"{what}: the data has column {field.name!r} twice")
        seen.add(key)
        path = (*parent, field.name)
        column = have.get(key)
        if column is None:
            changes.append(AddColumn(path, column_type_of(field.type, field.name, what)))
        elif column.type_name == "struct" and pa.types.is_struct(field.type):
            changes.extend(_missing(column.children, list(field.type), path, what))
    return changes


def column_type_of(arrow: pa.DataType, name: str, what: str) -> ColumnType:
    """The DuckLake type a write of ``arrow`` records (as ``create_table`` maps it)."""
    (spec,) = columns_for_schema(pa.schema([pa.field(name, arrow)]), what)

    def convert(node) -> ColumnType:
        return ColumnType(node.type_name, tuple((c.name, convert(c)) for c in node.children))

    return convert(spec)
