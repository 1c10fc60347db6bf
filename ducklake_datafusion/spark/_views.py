"""Spark SQL over a lake: one temporary view per table, so SQL users need no Python.

``register_spark_views(spark, "lake.ducklake")`` creates ``lake_main_orders`` (prefix,
schema, table) for every table at the lake's snapshot, each a :func:`read_table`
DataFrame, so filters in SQL are pushed down to the planner as in Python. Time travel is
a pinned registration (``snapshot=12`` with another prefix), or, in SQL alone, a view of
the ``ducklake`` format with options::

    CREATE TEMPORARY VIEW orders_v12 USING ducklake
        OPTIONS (metadata 'lake.ducklake', path 'main.orders', snapshot '12')

(the format is registered by :func:`register_spark`).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping

from ..catalog import metadata as _metadata_queries
from ..errors import UnsupportedFeatureError
from ..scan import Lake
from ._core import has_data_source
from ._read import read_table, register_spark

__all__ = ["register_spark_views"]

_UNSAFE = re.compile(r"[^0-9A-Za-z_]")


def view_name(prefix: str, schema: str, table: str) -> str:
    """``prefix_schema_table`` with characters other than letters, digits and ``_`` as
    ``_`` (so the name needs no quoting in Spark SQL)."""
    return "_".join(_UNSAFE.sub("_", part) for part in (prefix, schema, table) if part)


def register_spark_views(
    spark,
    metadata: str,
    *,
    prefix: str = "lake",
    snapshot: int | None = None,
    snapshot_time: _dt.datetime | None = None,
    data_path: str | None = None,
    storage_options: Mapping[str, object] | None = None,
    metadata_schema: str | None = None,
) -> dict[str, str]:
    """Create a temporary view for every table of the lake; returns view -> ``schema.table``.

    Args:
        spark: the ``SparkSession``.
        metadata: the catalog, as for ``DuckLakeCatalog``.
        prefix: the first part of every view name (``lake`` -> ``lake_main_orders``).
        snapshot / snapshot_time: pin every view to this snapshot (default: the latest
            now; the views keep reading that snapshot, like a pinned catalog).
        data_path, storage_options, metadata_schema: as for ``DuckLakeCatalog``.

    Raises:
        UnsupportedFeatureError: on pyspark 3.5 or 4.0 without the package's jar (whose
            catalog's scan reads every table), some tables need the data source; the
            message names each, and no view is created.
    """
    if has_data_source():  # for CREATE TEMPORARY VIEW ... USING ducklake
        register_spark(spark, check_workers=False)  # read_table checks them where needed
    lake = Lake.open(
        metadata,
        data_path=data_path,
        snapshot=snapshot,
        snapshot_time=snapshot_time,
        storage_options=storage_options,
        metadata_schema=metadata_schema,
    )
    pinned = lake.snapshot_id()
    options = {"metadata_schema": metadata_schema} if metadata_schema else {}
    with lake.backend.session() as session:
        tables = [
            (schema.schema_name, table.table_name)
            for schema in _metadata_queries.list_schemas(session, pinned)
            for table in _metadata_queries.list_tables(session, pinned, schema.schema_name)
        ]
    frames, unreadable = [], []
    for schema, table in tables:
        try:
            frame = read_table(
                spark,
                metadata,
                f"{schema}.{table}",
                snapshot=pinned,
                data_path=data_path,
                storage_options=storage_options,
                **options,
            )
            frames.append((view_name(prefix, schema, table), frame, f"{schema}.{table}"))
        except UnsupportedFeatureError as exc:  # pyspark 3.5 / 4.0: named all at once
            unreadable.append(str(exc))
    if unreadable:
        raise UnsupportedFeatureError(
            f"no view was created: {len(unreadable)} of the {len(tables)} tables cannot be "
            "read on this pyspark: " + " | ".join(unreadable)
        )
    created: dict[str, str] = {}
    for name, frame, qualified in frames:
        frame.createOrReplaceTempView(name)
        created[name] = qualified
    return created
