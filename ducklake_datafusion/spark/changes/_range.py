"""A change feed's bounds, schema and rows, as the data source and the driver compute them.

``resolve_changes`` turns the bounds (ids or times) into snapshot ids with the core's
rules (``scan._changes.resolve_bound``) and reads the table's columns at the end snapshot;
``feed_table`` computes the feed with the core's ``table_changes`` in the Arrow schema
Spark expects. The ``read_changes`` option of the data source
(``source/_changes_reader``) and ``read_changes`` on pyspark 3.5 and 4.0
(``_driver_feed``) both use them; neither needs pyspark's data source API.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ...catalog import ColumnSpec, list_snapshot_records, metadata
from ...errors import InvalidOptionError, SnapshotNotFoundError
from ...read import table_changes
from ...scan import resolve_bound, snapshot_bounds
from .._core import (
    SourceOptions,
    check_castable,
    spark_arrow_field,
    spark_arrow_type,
    spark_schema,
    to_spark_table,
)

__all__ = [
    "CHANGE_FIELDS",
    "ChangeRange",
    "changes_schema",
    "feed_column",
    "feed_table",
    "feed_target",
    "resolve_bounds",
    "resolve_changes",
]

CHANGE_FIELDS = (
    StructField("snapshot_id", LongType(), nullable=True),
    StructField("rowid", LongType(), nullable=True),
    StructField("change_type", StringType(), nullable=True),
)


def changes_schema(columns: tuple[ColumnSpec, ...]) -> StructType:
    """The Spark schema of the feed: the three change columns, then the table's columns."""
    return StructType([*CHANGE_FIELDS, *spark_schema(columns).fields])


@dataclass(frozen=True)
class ChangeRange:
    """A change feed's bounds resolved to snapshot ids, and the columns at the end one."""

    first: int
    last: int
    columns: tuple[ColumnSpec, ...]


def resolve_changes(options: SourceOptions) -> ChangeRange:
    """Resolve the bounds of ``options`` and read the table's columns at the end snapshot.

    Only the driver's planning workers call this.

    Raises:
        SnapshotNotFoundError: a bound names no existing snapshot (or no snapshot at or
            after / at or before a time).
        InvalidOptionError: a bound is neither a snapshot id nor an ISO timestamp.
        TableNotFoundError: the table does not exist at the end snapshot.
    """
    with options.open_lake() as lake:
        first, last = resolve_bounds(lake, options.changes_start, options.changes_end)
    with options.pinned(last).open_table() as table:
        return ChangeRange(first, last, table.columns)


def resolve_bounds(lake, start: str | None, end: str | None) -> tuple[int, int]:
    """The same resolution ``table_changes`` applies, in one catalog transaction."""
    backend = lake.backend
    description = backend.description
    with backend.session() as session:
        metadata.read_settings(session, description)
        records = list_snapshot_records(session)

        def bounds() -> str:
            return snapshot_bounds(session)

        if not records:
            raise SnapshotNotFoundError(f"{description} has no snapshots; {bounds()}")
        first = resolve_bound(records, start, lower=True, description=description, bounds=bounds)
        if end is None:
            return first, records[-1].snapshot_id
        last = resolve_bound(records, end, lower=False, description=description, bounds=bounds)
    return first, last


def feed_target(schema: StructType) -> tuple[pa.Schema, tuple[str, ...]]:
    """The Arrow schema Spark expects for a feed declared as ``schema``, and the declared
    type names (for error messages)."""
    target = pa.schema(
        [spark_arrow_field(f, spark_arrow_type(f.dataType, f.name)) for f in schema.fields]
    )
    return target, tuple(f.dataType.simpleString() for f in schema.fields)


def feed_table(options: SourceOptions, target: pa.Schema, declared: tuple[str, ...]) -> pa.Table:
    """The change feed of ``options``' table and bounds, in ``target``'s columns and types.

    Raises:
        InvalidOptionError: ``target`` names a column the feed lacks, or declares a type
            the column cannot be cast to.
        SnapshotNotFoundError, TableNotFoundError: as ``table_changes``.
    """
    with options.open_lake() as lake:
        end = options.changes_end
        if end is None:  # a user schema skipped DataSource.schema(): latest now
            end = lake.snapshot_id()
        feed = table_changes(
            lake, options.schema_name, options.table_name, options.changes_start, end
        )
    names = feed.schema.names
    if target.names == names:  # the derived schema (even with duplicate names)
        selected = feed
    else:
        indices = [feed_column(names, name, options.table_label) for name in target.names]
        selected = feed.select(indices)
    for column, field, type_name in zip(selected.columns, target, declared, strict=True):
        check_castable(column.type, field.type, field.name, type_name)
    return to_spark_table(selected, target)


def feed_column(names: list[str], name: str, table: str) -> int:
    """Spark resolves names case-insensitively by default; so do we, unless ambiguous."""
    exact = [i for i, n in enumerate(names) if n == name]
    if len(exact) == 1:
        return exact[0]
    folded = [i for i, n in enumerate(names) if n.lower() == name.lower()]
    if not exact and len(folded) == 1:
        return folded[0]
    problem = "which matches several" if exact or folded else "which is none"
    raise InvalidOptionError(
        f"the schema given for the change feed of {table} names column {name!r}, {problem} "
        f"of the feed's columns ({', '.join(names)})"
    )
