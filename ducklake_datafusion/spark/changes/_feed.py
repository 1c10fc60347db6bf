"""``read_changes``: the change feed computed by Spark, from two side scans joined by rowid.

The feed is a state difference keyed by rowid (``read/_changes.py``). Here the driver
only resolves the bounds and the end snapshot's columns (metadata); everything that
touches rows is a Spark operation over executor reads:

1. two scans of the internal ``ducklake_change_side`` source (``_side_source``): the
   *old* side holds, for every compared step ``(p, s)``, the candidate rows of the table at
   ``p``, the *new* side those at ``s``, each tagged with ``s``; only data files that differ
   between ``p`` and ``s`` are read, and rows both states hold identically are dropped on
   the executors;
2. a full outer join of the two on ``(snapshot, rowid)``;
3. the classification: no new row -> ``delete``, no old row -> ``insert``, both but not
   null-safe equal in every table column (NaN = NaN, NULL = NULL; maps compared as their
   ordered entries) -> ``update_preimage`` + ``update_postimage``, both equal -> nothing;
4. one sort by ``(snapshot_id, rowid, change rank)``, the order of ``table_changes``.

So the feed never passes through the driver and may be far larger than its memory. Why
two scans and not one scan split by a filter: pyspark cannot reuse the exchange of a
Python data source scan, so a self-join reads every file twice anyway (and Spark pushes
such a filter below the shuffle); two scans read each row once. Each side plans the feed
itself in its planning worker (metadata and delete files only).

Columns compared are always all table columns at the end snapshot, in an exact form
(``_side_source.compare_type``), whatever a user schema selects: an update to a column
that is not selected is still an update, as in ``table_changes``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from ...catalog import ColumnSpec
from ...scan import CHANGE_TYPES
from .._core import SourceOptions, check_castable, schema_from_ddl, spark_arrow_type, spark_type
from ._range import CHANGE_FIELDS, feed_column, resolve_changes
from ._side_source import (
    SIDE_FORMAT,
    SIDE_OPTION,
    SIDES,
    DuckLakeChangeSideSource,
    compare_type,
    side_key_fields,
)

__all__ = ["FeedColumn", "FeedLayout", "feed_layout", "read_changes_frame"]

_KEY = ("__snapshot", "__rowid")
_RANK = "__rank"


@dataclass(frozen=True)
class FeedColumn:
    """One output column of the feed.

    Attributes:
        name: the output name.
        source: ``snapshot_id``, ``rowid``, ``change_type`` (the change columns) or the
            side field holding the table column.
        data_type: the output Spark type.
        cast: a change column re-typed by a user schema (cast by Spark).
    """

    name: str
    source: str
    data_type: DataType
    cast: bool = False


@dataclass(frozen=True)
class FeedLayout:
    """What the side scans produce and how the feed is assembled from them.

    Attributes:
        side_schema: the schema of both side scans.
        compare: per table column, the side field compared and its Spark type.
        outputs: the feed's columns in order.
    """

    side_schema: StructType
    compare: tuple[tuple[str, DataType], ...]
    outputs: tuple[FeedColumn, ...]


def feed_layout(columns: Sequence[ColumnSpec], schema: StructType | None, table: str) -> FeedLayout:
    """Decide the side fields and the output columns for the table's end columns.

    Raises:
        InvalidOptionError: the user schema names a column the feed lacks (or ambiguously),
            or declares a type the column cannot be cast to.
        UnsupportedTypeError: an output column has no Spark type (INTERVAL), or a column
            cannot be compared exactly (an INTERVAL inside a nested type).
    """
    side: dict[str, DataType] = {}
    compare = []
    for index, column in enumerate(columns):
        exact = compare_type(column)
        name = f"__c_{index}" if exact is None else f"__x_{index}"
        side[name] = spark_type(column.arrow_type if exact is None else exact, column.name)
        compare.append((name, side[name]))
    if schema is None:
        outputs = [FeedColumn(f.name, f.name, f.dataType) for f in CHANGE_FIELDS]
        for index, column in enumerate(columns):
            data_type = spark_type(column.arrow_type, column.name)
            side.setdefault(f"__c_{index}", data_type)
            outputs.append(FeedColumn(column.name, f"__c_{index}", data_type))
    else:
        outputs = [
            _user_column(j, field, columns, side, table) for j, field in enumerate(schema.fields)
        ]
    fields = side_key_fields() + [StructField(n, t, nullable=True) for n, t in side.items()]
    return FeedLayout(StructType(fields), tuple(compare), tuple(outputs))


def _user_column(
    j: int, field: StructField, columns: Sequence[ColumnSpec], side: dict, table: str
) -> FeedColumn:
    """A user schema field -> the feed column it selects (by name, as Spark resolves)."""
    names = [f.name for f in CHANGE_FIELDS] + [c.name for c in columns]
    index = feed_column(names, field.name, table)
    target = spark_arrow_type(field.dataType, field.name)
    declared = field.dataType.simpleString()
    if index < len(CHANGE_FIELDS):
        change = CHANGE_FIELDS[index]
        check_castable(spark_arrow_type(change.dataType, change.name), target, field.name, declared)
        return FeedColumn(
            field.name, change.name, field.dataType, field.dataType != change.dataType
        )
    column_index = index - len(CHANGE_FIELDS)
    column = columns[column_index]
    check_castable(column.arrow_type, target, field.name, declared)
    if _derived(column) == field.dataType:
        name = f"__c_{column_index}"
    else:
        name = f"__u{j}_{column_index}"
    side.setdefault(name, field.dataType)
    return FeedColumn(field.name, name, field.dataType)


def _derived(column: ColumnSpec) -> DataType | None:
    try:
        return spark_type(column.arrow_type, column.name)
    except Exception:  # noqa: BLE001 - no derived type: the user type is a cast
        return None


# -- the DataFrame ----------------------------------------------------------------------------


def read_changes_frame(spark, table: str, options: Mapping[str, str], schema=None):
    """The change feed of ``table`` as a Spark DataFrame computed on the executors.

    Args:
        spark: the ``SparkSession`` (the ``ducklake`` format already registered).
        table: ``"schema.table"`` (or ``"table"`` in ``main``).
        options: the ``ducklake`` format's options as text, with ``changes_start`` (and
            ``changes_end``, default the latest snapshot now).
        schema: a user schema (``StructType`` or DDL) selecting feed columns by name.

    Raises:
        SnapshotNotFoundError, InvalidOptionError, TableNotFoundError: bad bounds, options
            or table (from the catalog, on the driver, before any Spark job).
    """
    parsed = SourceOptions.parse({**options, "path": table})
    found = resolve_changes(parsed)  # bounds -> ids, columns at the end: metadata only
    if isinstance(schema, str):
        schema = schema_from_ddl(schema)
    layout = feed_layout(found.columns, schema, parsed.table_label)
    spark.dataSource.register(DuckLakeChangeSideSource)
    pinned = {**options, "changes_start": str(found.first), "changes_end": str(found.last)}
    pinned.pop("read_changes", None)
    old, new = (_side(spark, table, pinned, side, layout.side_schema) for side in SIDES)
    return _feed(old, new, layout)


def _side(spark, table: str, options: Mapping[str, str], side: str, schema: StructType):
    reader = spark.read.format(SIDE_FORMAT).option(SIDE_OPTION, side)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.schema(schema).load(table)


def _feed(old, new, layout: FeedLayout):
    """Join the sides on (snapshot, rowid), classify, explode update pairs, sort, project."""
    names = [f.name for f in layout.side_schema.fields[2:]]
    joined = _prefixed(old, "o", names).join(_prefixed(new, "n", names), list(_KEY), "full_outer")
    has_old, has_new = F.col("o__present").isNotNull(), F.col("n__present").isNotNull()
    same = functools.reduce(
        lambda a, b: a & b,
        [
            _comparable(F.col(f"o{name}"), data_type).eqNullSafe(
                _comparable(F.col(f"n{name}"), data_type)
            )
            for name, data_type in layout.compare
        ],
        F.lit(True),
    )
    ranks = (
        F.when(~has_new, F.array(F.lit(0)))
        .when(~has_old, F.array(F.lit(3)))
        .otherwise(F.array(F.lit(1), F.lit(2)))
    )
    changed = joined.where(~has_old | ~has_new | ~same)
    exploded = changed.select(
        *_KEY, *[f"{p}{n}" for p in "on" for n in names], F.explode(ranks).alias(_RANK)
    )
    ordered = exploded.orderBy(*_KEY, _RANK)
    return ordered.select(*[_output(column) for column in layout.outputs])


def _prefixed(side, prefix: str, names: list[str]):
    return side.select(
        *_KEY,
        F.lit(True).alias(f"{prefix}__present"),
        *[F.col(name).alias(f"{prefix}{name}") for name in names],
    )


def _output(column: FeedColumn):
    if column.source == "snapshot_id":
        value = F.col(_KEY[0])
    elif column.source == "rowid":
        value = F.col(_KEY[1])
    elif column.source == "change_type":
        value = F.element_at(F.array(*[F.lit(c) for c in CHANGE_TYPES]), F.col(_RANK) + 1)
    else:  # deletes and preimages from the old side, the rest from the new side
        value = F.when(F.col(_RANK) >= 2, F.col(f"n{column.source}")).otherwise(
            F.col(f"o{column.source}")
        )
    if column.cast:
        value = value.cast(column.data_type)
    return value.alias(column.name)


def _has_map(data_type: DataType) -> bool:
    if isinstance(data_type, MapType):
        return True
    if isinstance(data_type, ArrayType):
        return _has_map(data_type.elementType)
    if isinstance(data_type, StructType):
        return any(_has_map(f.dataType) for f in data_type.fields)
    return False


def _comparable(column, data_type: DataType):
    """A form of ``column`` Spark can compare: maps (not comparable) as ordered entries."""
    if not _has_map(data_type):
        return column
    if isinstance(data_type, MapType):
        key, value = data_type.keyType, data_type.valueType
        return F.transform(
            F.map_entries(column),
            lambda e: F.struct(
                _comparable(e["key"], key).alias("key"),
                _comparable(e["value"], value).alias("value"),
            ),
        )
    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        return F.transform(column, lambda x: _comparable(x, element))
    fields = [_comparable(column[f.name], f.dataType).alias(f.name) for f in data_type.fields]
    return F.when(column.isNull(), F.lit(None)).otherwise(F.struct(*fields))
