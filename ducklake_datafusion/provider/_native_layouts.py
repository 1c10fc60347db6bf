"""How a file layout (``read/_layouts``) becomes a DataFusion frame of the table's columns.

The layout says which physical column of a group of files holds each table column, and
whether it is widened or missing (its initial default); this module turns that into one
projection expression per column over the group's by-name listing, and the snapshot
filter of merged files.
"""

from __future__ import annotations

from collections.abc import Sequence

from datafusion import DataFrame, col, lit

from ..read._layouts import FileLayout
from ..scan._conform import default_array
from ..types import ColumnSpec

__all__ = ["layout_frame"]


def layout_frame(scan: DataFrame, layout: FileLayout, columns: Sequence[ColumnSpec], snapshot: int):
    """The table's columns, in order, from ``scan`` (a listing with ``layout.read_schema``)."""
    if layout.snapshot_column is not None:
        scan = scan.filter(_quoted(layout.snapshot_column) <= lit(snapshot))
    exprs = []
    for source, column in zip(layout.sources, columns, strict=True):
        if source.physical is None:
            expr = lit(default_array(column, 1)[0])
        else:
            expr = _quoted(source.physical)
            if source.cast:
                expr = expr.cast(column.arrow_type)
        exprs.append(expr.alias(column.name))
    return scan.select(*exprs)


def _quoted(name: str):
    return col('"' + name.replace('"', '""') + '"')
