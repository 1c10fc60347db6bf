"""``read_table(..., where=...)``: a Spark SQL condition that also prunes the lake's files.

A Spark DataFrame is built before the query that filters it, so a filter applied to the
DataFrame ``read_table`` returns can only prune row groups (Spark's Parquet reader opens
every file it is given). A condition passed as ``where`` is known in time: the files whose
catalog statistics show they cannot match are left out before Spark lists any, and the
condition is then applied to the rows by Spark as usual.

The condition means what Spark means. Spark itself parses, resolves and optimises it
against the table's Spark schema, over an empty Parquet file of that schema (written once
per schema and process), and translates it into the data source filters it pushes to a
Parquet scan (``pushedDownFilters``: literals cast to the column types, ``BETWEEN``
split, constants folded). Those filters become the scan's ``Filter`` through the very
translation the data source uses for pushed filters (``spark/_core/_filters``); a filter that
does not translate exactly prunes nothing. Pruning is a subset test on catalog statistics, so
a file it keeps may hold no matching row; the rows are always filtered by Spark.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import hashlib
import logging
import os
import shutil
import tempfile
import threading

import pyarrow as pa
import pyarrow.parquet as pq

from ...common import LRUCache
from ...errors import InvalidOptionError
from ...scan import Filter, Or
from .._core import (
    FilterColumn,
    combine,
    is_connect,
    sources,
    spark_arrow_type,
    spark_schema,
    translate_filter,
)
from ._exact_types import spark_reads_exactly

_log = logging.getLogger("ducklake_datafusion.spark")

__all__ = ["pruning_filter"]

# Filters with one column and a value, by their (identical) class names in Scala and Python.
_VALUED = {
    name: getattr(sources, name)
    for name in (
        "EqualTo",
        "EqualNullSafe",
        "GreaterThan",
        "GreaterThanOrEqual",
        "LessThan",
        "LessThanOrEqual",
        "StringStartsWith",
        "StringEndsWith",
        "StringContains",
    )
}
_probe_lock = threading.Lock()
_probe_dir: str | None = None
# Translated conditions by (session, columns, where): planning the probe costs about as
# much as a selective query (docs/benchmarks.md), and read_table calls for a cached scan
# must not pay it again. The session is held with its filter, so its id stays unique.
_FOUND_MAX = 64
_filters_found: LRUCache[tuple, tuple[Filter | None, object]] = LRUCache(_FOUND_MAX)


def pruning_filter(spark, table, where: str) -> Filter | None:
    """The exact pyarrow form of what Spark pushes to a Parquet scan for ``where``.

    ``None`` (nothing pruned here) for a table Spark's reader does not return exactly
    (``_exact_types``): the data source prunes its files with the filters Spark pushes
    to it.

    Raises:
        InvalidOptionError: ``where`` is not a valid Spark SQL condition on the table.
    """
    if not all(spark_reads_exactly(c.type_name) for c in table.columns):
        return None
    if is_connect(spark):  # no JVM here to ask which filters Spark pushes: Spark filters
        _log.info(
            "read_table(where=...) on Spark Connect filters the rows but prunes no files; "
            "the DuckLake catalog on the server prunes with the query's filters"
        )
        return None
    key = (id(spark), tuple((c.name, c.type_name, str(c.arrow_type)) for c in table.columns), where)
    found = _filters_found.get_or_compute(key, lambda: (_pushed_filter(spark, table, where), spark))
    return found[0]


def _pushed_filter(spark, table, where: str) -> Filter | None:
    """Plan ``where`` over the probe file and translate the filters Spark pushes."""
    from pyspark.errors import AnalysisException

    schema = spark_schema(table.columns)
    probe = spark.read.schema(schema).parquet(_probe_file(schema))
    try:
        physical = probe.where(where)._jdf.queryExecution().sparkPlan()
    except AnalysisException as exc:  # also a ParseException
        raise InvalidOptionError(
            f"where={where!r} for table {table.name} (snapshot {table.snapshot_id}) is not a "
            f"Spark SQL condition on its columns ({', '.join(schema.names)}): {exc}"
        ) from exc
    columns = {c.name: FilterColumn(c.name, c.arrow_type, True) for c in table.columns}
    found = []
    leaves = physical.collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.getClass().getSimpleName() != "FileSourceScanExec":
            continue
        pushed = leaf.pushedDownFilters().iterator()
        while pushed.hasNext():
            expression = _translated(pushed.next(), columns)
            if expression is not None:
                found.append(expression)
    return combine(found)


def _translated(java_filter, columns) -> Filter | None:
    """One of Spark's ``sources.Filter`` (a JVM object) as an exact scan ``Filter``."""
    kind = java_filter.getClass().getSimpleName()
    if kind in ("And", "Or"):
        left = _translated(java_filter.left(), columns)
        right = _translated(java_filter.right(), columns)
        if kind == "And":
            return combine([e for e in (left, right) if e is not None])
        return None if left is None or right is None else Or((left, right))
    if kind == "Not":
        child = _python_filter(java_filter.child())
        return None if child is None else translate_filter(sources.Not(child), columns)
    python = _python_filter(java_filter)
    return None if python is None else translate_filter(python, columns)


def _python_filter(java_filter):
    """The pyspark data source filter of the same meaning, or ``None``."""
    kind = java_filter.getClass().getSimpleName()
    if kind in ("IsNull", "IsNotNull", "In") or kind in _VALUED:
        attribute = java_filter.attribute()
        if "." in attribute or "`" in attribute:
            return None  # a nested field or a quoted name: left to Spark
        path = (attribute,)
    if kind == "IsNull":
        return sources.IsNull(path)
    if kind == "IsNotNull":
        return sources.IsNotNull(path)
    if kind == "In":
        values = [_value(v) for v in java_filter.values()]
        return None if any(v is _UNKNOWN for v in values) else sources.In(path, tuple(values))
    if kind in _VALUED:
        value = _value(java_filter.value())
        return None if value is _UNKNOWN else _VALUED[kind](path, value)
    return None


_UNKNOWN = object()


def _value(value):
    """A filter's literal as the data source API gives it; timestamps are not taken
    (``java.sql.Timestamp`` is in the JVM's time zone, not Spark's session zone)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, bytearray)):
        return value
    if type(value).__name__ == "Decimal":
        return value
    if hasattr(value, "getClass") and value.getClass().getName() == "java.sql.Date":
        return _dt.date.fromisoformat(value.toString())
    return _UNKNOWN


def _probe_file(schema) -> str:
    """An empty Parquet file of ``schema`` (as Spark's Arrow types), made once per schema."""
    global _probe_dir
    arrow = pa.schema([pa.field(f.name, spark_arrow_type(f.dataType, f.name)) for f in schema])
    name = hashlib.sha256(schema.json().encode()).hexdigest()[:24] + ".parquet"
    with _probe_lock:
        if _probe_dir is None:
            _probe_dir = tempfile.mkdtemp(prefix="ducklake-spark-where-")
            atexit.register(shutil.rmtree, _probe_dir, True)
        path = os.path.join(_probe_dir, name)
        if not os.path.exists(path):
            pq.write_table(arrow.empty_table(), path)
    return "file://" + path
