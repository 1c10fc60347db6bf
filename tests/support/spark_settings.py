"""Spark session settings for the length of one test (the session is shared by a file)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

__all__ = ["CATALOG_CLASS", "spark_settings"]

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
