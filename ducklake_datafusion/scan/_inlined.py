"""Rows stored in the catalog (data inlining) -> an Arrow table in the table schema.

Each inlined-data table was written with the column layout of its schema version, so its
columns are matched to column ids by *name through that layout*, then projected into the
current columns exactly like a Parquet file (by id; missing columns get their default).
SQLite and PostgreSQL catalogs store most values as text in DuckDB's literal syntax; DuckDB
itself parses them, so every type round-trips with the writer's own rules.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pyarrow as pa

from ..catalog import (
    INLINED_SYSTEM_COLUMNS,
    ColumnEntry,
    ColumnSpec,
    build_column_tree,
    duckdb_type_for,
)
from ..errors import UnsupportedTypeError
from ._conform import _duckdb, annotate_by_names, conform, default_array
from ._hugeint import exact_wide_integers

__all__ = ["REFUSED", "conform_inlined_rows", "refusal"]

ROW_ID = "rowid"
# Field metadata key of an inlined column whose values cannot be returned; value: why.
REFUSED = b"ducklake:refused"
_TEXT_LIKE = ("varchar", "json")


def conform_inlined_rows(
    raw: pa.Table,
    layout: Sequence[ColumnEntry],
    columns: Sequence[ColumnSpec],
    *,
    values_are_text: bool,
) -> pa.Table:
    """Map one inlined table's live rows onto ``columns``; adds ``rowid``.

    ``raw``'s first three columns are the system columns, named as in DuckLake 1.1
    (``catalog._format.INLINED_SYSTEM_COLUMNS``, whatever the catalog's format); the
    user's columns follow.

    A column whose values cannot be returned (its default has no value in its type, say)
    is NULLs marked with the reason (:data:`REFUSED`): the executor refuses a query that
    reads it, and one that does not read it runs. Queries are planned before their
    columns are known (DataFusion's dataset hands them to the scanner), hence the mark.
    """
    layout_tree = build_column_tree(layout)
    by_id: dict[int, tuple[pa.Array, pa.Field]] = {}
    user_names = raw.column_names[3:]  # after the system columns (a user's may be "row_id")
    for spec in layout_tree:
        name = _raw_name(user_names, spec.name)
        if name is None:
            continue
        array = raw.column(3 + user_names.index(name)).combine_chunks()
        if values_are_text:
            array = _parse_text(array, spec)
        array = exact_wide_integers(array, spec)  # as DuckDB exported them: made exact
        field = annotate_by_names(pa.field(spec.name, array.type), spec)
        by_id[spec.column_id] = (array, field)
    n = raw.num_rows
    arrays, fields = [], []
    for column in columns:
        array, refused = _column_array(by_id.get(column.column_id), column, n)
        arrays.append(array)
        metadata = None if refused is None else {REFUSED: refused.encode()}
        fields.append(pa.field(column.name, array.type, metadata=metadata))
    arrays.append(raw.column(INLINED_SYSTEM_COLUMNS.row_id).combine_chunks().cast(pa.int64()))
    fields.append(pa.field(ROW_ID, pa.int64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def refusal(rows: pa.Table, names: Collection[str]) -> str | None:
    """Why one of the columns ``names`` of conformed inlined rows cannot be read, if so."""
    for name in names:
        index = rows.schema.get_field_index(name)
        metadata = rows.schema.field(index).metadata if index >= 0 else None
        if metadata and REFUSED in metadata:
            return metadata[REFUSED].decode()
    return None


def _column_array(found, column: ColumnSpec, n: int) -> tuple[pa.Array, str | None]:
    """One table column of the inlined rows (conformed, or its default if it is newer),
    or NULLs and the reason when its values cannot be returned."""
    try:
        if found is None:
            return default_array(column, n), None
        return conform(found[0], found[1], column), None
    except UnsupportedTypeError as exc:
        return pa.nulls(n, column.arrow_type), str(exc)


def _raw_name(names: Sequence[str], wanted: str) -> str | None:
    """The inlined table's column for a layout column.

    The PostgreSQL writer creates inlined columns without quoting, so PostgreSQL folds
    ``Mixed`` to ``mixed``; fall back to a case-insensitive match when it is unambiguous.
    """
    if wanted in names:
        return wanted
    folded = [n for n in names if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def _parse_text(array: pa.Array, spec: ColumnSpec) -> pa.Array:
    """Decode a SQLite/PostgreSQL inlined column into the layout column's DuckDB type."""
    kind = spec.type_name.lower()
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        if kind in _TEXT_LIKE:
            return array.cast(pa.string())
        if kind in ("blob", "geometry"):
            return array
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), spec.arrow_type)
    con = _duckdb()
    source = pa.table({"v": array})
    value = f"CAST(v AS {duckdb_type_for(spec)})"
    if kind == "variant":  # MySQL's text, read as DuckDB reads it; exposed as JSON text
        value = f"CAST(CAST({value} AS JSON) AS VARCHAR)"
    con.register("_ducklake_inlined_values", source)
    try:
        result = con.sql(f"SELECT {value} AS v FROM _ducklake_inlined_values")
        return result.to_arrow_table().column(0).combine_chunks()
    finally:
        con.unregister("_ducklake_inlined_values")
