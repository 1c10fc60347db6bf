"""A table as the JVM catalog loads it: at the latest snapshot, or at one Spark names.

``loadTable(ident)`` reads the lake's snapshot (the latest now, or the catalog's pinned
``snapshot`` / ``snapshot_time``); ``VERSION AS OF v`` and ``TIMESTAMP AS OF t`` name one
(``t`` arrives as microseconds since the epoch, UTC: the last snapshot at or before it,
as DuckDB's ``AT (TIMESTAMP => ...)``). Later scans of the loaded table name the snapshot
id it resolved to, so every scan of one ``Table`` object reads the same snapshot.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Mapping
from dataclasses import replace

from ...catalog import ColumnSpec, constant_default, metadata, table_column_comments
from ...common import LRUCache
from ...errors import InvalidOptionError
from ...scan import Lake, LakeTable, SnapshotRef, default_array
from .._core import spark_schema

__all__ = ["default_metadata", "resolve_table", "snapshot_ref", "table_response"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
# Tables resolved at a fixed snapshot id, by (lake, schema, table, snapshot): a scan
# after loadTable needs no catalog query for the table's columns.
_RESOLVED: LRUCache[tuple, LakeTable] = LRUCache(64)


def resolve_table(lake: Lake, request: Mapping) -> LakeTable:
    """The table a request names, at the snapshot it names (raises our typed errors)."""
    namespace, name = str(request["namespace"]), str(request["name"])
    ref = snapshot_ref(request, f"table {namespace}.{name}")
    if ref is None:
        return lake.table(namespace, name)
    if ref.snapshot_id is None:
        return lake.table_at(namespace, name, ref)
    found = _RESOLVED.get((id(lake), namespace, name, ref.snapshot_id))
    if found is not None and found.lake is lake:  # the id of a closed lake may be reused
        return found
    table = lake.table_at(namespace, name, ref)
    _RESOLVED.put((id(lake), namespace, name, ref.snapshot_id), table)
    return table


def table_response(lake: Lake, request: Mapping) -> dict:
    """What ``loadTable`` needs: the Spark schema (column comments included) and the
    snapshot the table was resolved at."""
    from pyspark.sql.types import StructField, StructType

    table = resolve_table(lake, request)
    with lake.backend.session() as session:
        comments = table_column_comments(session, table.entry.table_id, table.snapshot_id)
        defaults = metadata.column_defaults(session, table.entry.table_id, table.snapshot_id)
    fields = []
    for column, field in zip(table.columns, spark_schema(table.columns).fields, strict=True):
        comment = comments.get(column.column_id)
        about = {"comment": comment} if comment else {}
        text, kind = defaults.get(column.column_id, (None, None))
        about.update(default_metadata(column, text, kind, field))
        fields.append(StructField(field.name, field.dataType, True, about))
    return {
        "namespace": table.entry.schema_name,
        "name": table.entry.table_name,
        "snapshot": table.snapshot_id,
        "snapshot_time": table.snapshot.snapshot_time.isoformat(),
        "table_id": table.entry.table_id,
        "table_uuid": table.entry.table_uuid,
        "catalog": lake.description,
        "schema": StructType(fields).json(),
    }


# The field metadata Spark reads a column's default from (``ResolveDefaultColumns``): the
# expression an INSERT that leaves the column out writes, and the value of rows written
# before the column existed (our readers take that from the catalog, not from Spark).
CURRENT_DEFAULT = "CURRENT_DEFAULT"
EXISTS_DEFAULT = "EXISTS_DEFAULT"


# The Spark types whose literal :func:`spark_default` spells exactly (a time, an interval's
# struct, a nested type get no default: Spark analyzes every default when it loads the
# table, and one it cannot resolve would make the table unreadable).
_SPELLED = frozenset(
    (
        "boolean",
        "byte",
        "short",
        "integer",
        "long",
        "float",
        "double",
        "decimal",
        "string",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
    )
)
# DuckLake types Spark holds less precisely than their default's text says.
_INEXACT = frozenset(("timestamp_ns",))


def default_metadata(column: ColumnSpec, text: str | None, kind: str | None, field) -> dict:
    """The Spark field metadata of a column's default (``ducklake_column.default_value`` of
    ``kind``): Spark's INSERT that leaves the column out writes it, as DuckDB's does, and so
    does a stream whose rows lack the column (the jar's ``WriteLayout``). Empty for none,
    for an expression DuckDB evaluates per row (``now()``: DuckDB SQL, not Spark's), and for
    a column of a type outside ``_SPELLED`` (Spark's INSERT writes NULL there)."""
    spelled = field.dataType.typeName() in _SPELLED and column.type_name not in _INEXACT
    if not spelled:
        return {}
    if kind == "expression":  # (DuckDB's DEFAULT true is one: CAST('t' AS BOOLEAN))
        text = constant_default(text)
        kind = None if text is None else "literal"
    if kind != "literal" or text is None:
        return {}
    sql = spark_default(column, text, field)
    return {CURRENT_DEFAULT: sql, EXISTS_DEFAULT: sql}


def spark_default(column: ColumnSpec, text: str, field) -> str:
    """A literal DuckLake default (``ducklake_column.default_value``) as Spark SQL: the value
    DuckDB's INSERT writes, read as our readers read an initial default, spelled as a Spark
    literal of the column's type. (An expression default that is not one constant,
    ``now()``, is DuckDB SQL, not Spark's: such a column gets none, and Spark's INSERT
    writes NULL there.)"""
    value = default_array(replace(column, initial_default=text), 1)[0].as_py()
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, str):
        return _spark_string(value)
    if isinstance(value, _decimal.Decimal):
        spelled = format(value, "f")
    elif isinstance(value, _dt.date | _dt.time):  # (datetimes too)
        spelled = value.isoformat()
    else:
        spelled = repr(value) if isinstance(value, float) else str(value)
    return f"CAST({_spark_string(spelled)} AS {field.dataType.simpleString()})"


def _spark_string(text: str) -> str:
    """A Spark SQL string literal (Spark's parser reads backslash escapes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def snapshot_ref(request: Mapping, what: str) -> SnapshotRef | None:
    """The snapshot a request names (``version``, ``timestamp_us``, the catalog's pinned
    ``snapshot``), ``None`` for the lake's own; ``what`` names the relation in errors."""
    version = request.get("version")
    if version is not None:
        text = str(version).strip()
        digits = text[1:] if text[:1] in ("v", "V") else text
        if not digits.isdigit():
            raise InvalidOptionError(
                f"VERSION AS OF {text!r} for {what}: a DuckLake version is a snapshot "
                "id (an integer, e.g. VERSION AS OF 12)"
            )
        return SnapshotRef(snapshot_id=int(digits))
    micros = request.get("timestamp_us")
    if micros is not None:
        return SnapshotRef(time=_EPOCH + _dt.timedelta(microseconds=int(micros)))
    snapshot = request.get("snapshot")
    return None if snapshot is None else SnapshotRef(snapshot_id=int(snapshot))
