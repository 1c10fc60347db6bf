"""Rows stored in the catalog (data inlining) -> an Arrow table in the table schema.

Each inlined-data table was written with the column layout of its schema version, so its
columns are matched to column ids by *name through that layout*, then projected into the
current columns exactly like a Parquet file (by id; missing columns get their default).
SQLite and PostgreSQL catalogs store most values as text in DuckDB's literal syntax; DuckDB
itself parses them, so every type round-trips with the writer's own rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..catalog._models import ColumnEntry
from ..types import ColumnSpec, build_column_tree, duckdb_type_for
from ._conform import _duckdb, annotate_by_names, conform, default_array

__all__ = ["conform_inlined_rows"]

ROW_ID = "rowid"
_TEXT_LIKE = ("varchar", "json")


def conform_inlined_rows(
    raw: pa.Table,
    layout: Sequence[ColumnEntry],
    columns: Sequence[ColumnSpec],
    *,
    values_are_text: bool,
) -> pa.Table:
    """Map one inlined table's live rows onto ``columns``; adds ``rowid``."""
    layout_tree = build_column_tree(layout)
    by_id: dict[int, tuple[pa.Array, pa.Field]] = {}
    for spec in layout_tree:
        name = _raw_name(raw.column_names, spec.name)
        if name is None:
            continue
        array = raw.column(name).combine_chunks()
        if values_are_text:
            array = _parse_text(array, spec)
        field = annotate_by_names(pa.field(spec.name, array.type), spec)
        by_id[spec.column_id] = (array, field)
    n = raw.num_rows
    arrays, names = [], []
    for column in columns:
        found = by_id.get(column.column_id)
        arrays.append(conform(found[0], found[1], column) if found else default_array(column, n))
        names.append(column.name)
    arrays.append(raw.column("row_id").combine_chunks().cast(pa.int64()))
    names.append(ROW_ID)
    return pa.Table.from_arrays(arrays, names=names)


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
    sql_type = duckdb_type_for(spec)
    con.register("_ducklake_inlined_values", source)
    try:
        result = con.execute(f"SELECT CAST(v AS {sql_type}) AS v FROM _ducklake_inlined_values")
        return result.to_arrow_table().column(0).combine_chunks()
    finally:
        con.unregister("_ducklake_inlined_values")
