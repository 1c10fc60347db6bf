"""Rows from DB-API drivers -> Arrow tables (SQLite/PostgreSQL catalogs)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

__all__ = ["conform_to", "rows_to_arrow"]


def rows_to_arrow(names: Sequence[str], rows: Sequence[tuple]) -> pa.Table:
    """Build a table column by column, letting pyarrow infer each type.

    A column whose values do not share one Python type (SQLite's dynamic typing) falls back
    to text, which the inlined-row decoder parses with DuckDB's cast rules anyway.
    """
    columns = []
    for index, _ in enumerate(names):
        values = [row[index] for row in rows]
        sample = next((v for v in values if v is not None), None)
        if isinstance(sample, memoryview):  # some drivers hand out binary values as views
            values = [None if v is None else bytes(v) for v in values]
        try:
            columns.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            columns.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.Table.from_arrays(columns, names=list(names))


def conform_to(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s names and types (columns in the same order)."""
    if table.schema.equals(schema):
        return table
    columns = [column.cast(field.type) for column, field in zip(table.columns, schema)]
    return pa.Table.from_arrays(columns, schema=schema)
