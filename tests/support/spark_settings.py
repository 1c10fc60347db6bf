"""Spark session settings for the length of one test (the session is shared by a file)."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Iterator, Mapping

__all__ = ["CATALOG_CLASS", "register_catalog", "spark_settings"]

# The package's Spark catalog class (spark.sql.catalog.<name> = CATALOG_CLASS).
CATALOG_CLASS = "io.ducklake_datafusion.spark.DuckLakeCatalog"


@contextlib.contextmanager
def spark_settings(spark, conf: Mapping[str, str]) -> Iterator[None]:
    """Set ``conf`` on ``spark``; on exit put back what each key had (or unset it)."""
    previous = {key: spark.conf.get(key, None) for key in conf}
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


_names = itertools.count()


def register_catalog(spark, lake, **options) -> str:
    """A DuckLake catalog of ``lake`` in ``spark`` (its storage options as the catalog's),
    under a fresh name, its planner exiting after 60 idle seconds (the JVM keeps at most 8
    and hands the one unused longest to the next catalog: the suite's hundreds of catalogs
    start few Python processes); the name."""
    name = f"dl{os.getpid()}_{next(_names)}"
    args = lake.reader_args()
    values = {
        "metadata": args["metadata"],
        "data_path": args.get("data_path"),
        "metadata_schema": args.get("metadata_schema"),
        **(args["storage_options"] or {}),
        "python": sys.executable,
        "planner_idle_seconds": "60",
        **options,
    }
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, CATALOG_CLASS)
    for key, value in values.items():
        if value is not None:
            spark.conf.set(f"{prefix}.{key}", str(value))
    return name
