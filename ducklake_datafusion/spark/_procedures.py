"""The catalog's maintenance procedures from Python, on every pyspark release.

Spark 4 runs ``CALL lake.system.merge_adjacent_files(table => 'main.t')`` itself (the jar's
catalog is a ``ProcedureCatalog``); Spark 3.5 has no ``CALL``. :func:`call_procedure` runs
the same procedures on any release through the jar's ``Procedures.callJson``, in the
catalog the session has configured (its planner, its options), and answers with the columns
``CALL`` answers with, as a DataFrame.
"""

from __future__ import annotations

import datetime as _dt
import json

from ..errors import InvalidOptionError, raised_as_ours
from ._core import is_connect

__all__ = ["call_procedure"]

_PROCEDURES_CLASS = "io.ducklake_datafusion.spark.Procedures"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def call_procedure(
    spark, catalog: str, procedure: str, *, on_executors: bool | None = None, **arguments
):
    """Run maintenance procedure ``procedure`` (``merge_adjacent_files``,
    ``rewrite_data_files``, ``flush_inlined_data``, ``expire_snapshots``,
    ``cleanup_old_files``, ``delete_orphaned_files``, ``checkpoint``) of the DuckLake catalog
    ``catalog`` that ``spark`` has configured (``spark.sql.catalog.<catalog>``), with
    DuckDB's named arguments, and return its rows as a DataFrame: what ``CALL
    <catalog>.system.<procedure>(...)`` returns on Spark 4, on pyspark 3.5 too::

        call_procedure(spark, "lake", "merge_adjacent_files", table="main.events")
        call_procedure(spark, "lake", "expire_snapshots", older_than=datetime(...))

    ``older_than`` is a ``datetime`` (naive: UTC). A Spark Connect client has no JVM here:
    it calls the procedure with ``CALL``.

    ``on_executors`` (``merge_adjacent_files`` only; ``CALL``'s argument of that name): the
    merged files are written by Spark tasks, groups of files in parallel, and the driver's
    planner commits them once (``Procedures.java``'s ``ExecutorMerge``); the executors need
    this package installed. Default (``None``): so when Spark runs on a cluster (its master
    is not ``local``); otherwise the merge runs in the catalog's planner, on the driver.
    """
    if is_connect(spark):
        raise InvalidOptionError(
            "call_procedure needs a classic Spark session (the catalog's JVM); from a Spark "
            f'Connect client run spark.sql("CALL {catalog}.system.{procedure}(...)")'
        )
    if on_executors is not None:
        if procedure != "merge_adjacent_files":
            raise InvalidOptionError(
                f"on_executors runs merge_adjacent_files on Spark's executors; "
                f"{procedure} runs in the catalog's planner"
            )
        arguments["on_executors"] = bool(on_executors)
    values = {name: _json_value(name, value) for name, value in arguments.items()}
    jvm = spark._jvm
    procedures = getattr(jvm, _PROCEDURES_CLASS)
    with raised_as_ours():
        plugin = spark._jsparkSession.sessionState().catalogManager().catalog(catalog)
        answer = json.loads(procedures.callJson(plugin, procedure, json.dumps(values)))
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(answer["schema"]))
    rows = [_row(row, schema) for row in answer["rows"]]
    return spark.createDataFrame(rows, schema)


def _json_value(name: str, value):
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        return (aware - _EPOCH) // _dt.timedelta(microseconds=1)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return list(value)
    raise InvalidOptionError(
        f"procedure argument {name}={value!r}: give a string, number, boolean, datetime or "
        "a list of snapshot ids"
    )


def _row(values: list, schema) -> tuple:
    out = []
    for value, field in zip(values, schema.fields, strict=True):
        if value is not None and field.dataType.typeName() == "timestamp":
            value = _EPOCH + _dt.timedelta(microseconds=value)
        out.append(value)
    return tuple(out)
