"""Files of an older column layout, read by Spark under their physical names and projected.

A file written before a column was renamed, added, widened or dropped (or a merged file
with per-row snapshots) is read by one Spark scan per layout under its physical names
and types, then projected onto the table's columns (``read/_layouts``: fields matched by
field id, exact widenings as casts, missing columns as their default literal, rows of
later snapshots dropped). A layout needing a conversion that is not exact, or a default
Spark cannot take as a literal exactly, leaves the file to the Python data source.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal

from ...read import CheckedFile, FileLayout
from ...scan import default_array
from .._core import spark_type

__all__ = ["layout_schema", "projected", "spark_layout"]


def spark_layout(task, checked: CheckedFile, columns) -> tuple[bool, FileLayout | None]:
    """Whether Spark reads the file itself, and how (``None``: by the table's names).

    ``checked``: the file checked against the catalog and mapped (``read.checked_file``).
    A file at the table's current layout whose fields carry the table's names is read as
    the table; any other file by its layout (``read/_layouts``: physical names by field
    id, exact widenings, defaults), if each missing column's default is a literal Spark
    takes exactly.
    """
    if task.layout_current and checked.by_name:
        return True, None
    layout = checked.layout
    if layout is None:
        return False, None
    missing = [c for s, c in zip(layout.sources, columns, strict=True) if s.physical is None]
    return all(_default_literal(c) is not None for c in missing), layout


def layout_schema(layout: FileLayout):
    """The Spark schema of a layout's by-name scan (physical names and types)."""
    from pyspark.sql.types import StructField, StructType

    return StructType(
        [StructField(name, spark_type(type_, name), nullable=True) for name, type_ in layout.read]
    )


def projected(frame, layout: FileLayout, table, schema):
    """The table's columns, in order, from a scan of ``layout_schema(layout)``."""
    from pyspark.sql import functions as F

    if layout.snapshot_column is not None:  # merged files: drop rows of later snapshots
        frame = frame.where(_column(layout.snapshot_column) <= F.lit(table.snapshot_id))
    exprs = []
    for source, column, field in zip(layout.sources, table.columns, schema.fields, strict=True):
        if source.physical is None:
            expr = _default_literal(column).cast(field.dataType)
        else:
            expr = _column(source.physical)
            if source.cast:
                expr = expr.cast(field.dataType)
        exprs.append(expr.alias(column.name))
    return frame.select(*exprs)


def _default_literal(column):
    """The column's initial default as a Spark literal, or ``None`` where a literal could
    change it (timestamps: a Python ``datetime`` literal is read in the session's zone)."""
    from pyspark.sql import functions as F

    value = default_array(column, 1)[0].as_py()
    if value is None:
        return F.lit(None)
    if isinstance(value, (bytes, bytearray)):
        return F.lit(bytearray(value))
    if isinstance(value, _dt.datetime) or not isinstance(
        value, (bool, int, float, str, Decimal, _dt.date)
    ):
        return None
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return None  # a UBIGINT beyond Spark's long literals
    return F.lit(value)


def _column(name: str):
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
