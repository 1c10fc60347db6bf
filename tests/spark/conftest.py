"""Fixtures of the Spark catalog tests: a DuckLake catalog of a test lake in the shared session."""

from __future__ import annotations

import itertools
import os
import sys

import pytest
from support.spark_settings import CATALOG_CLASS

_names = itertools.count()


@pytest.fixture
def catalog(spark, spark_package_jar):
    """``catalog(lake, **options) -> name``: a DuckLake catalog of ``lake`` in the shared
    session (a fresh name each time, its planner exiting after 5 idle seconds)."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")

    def register(lake, **options) -> str:
        name = f"dl{os.getpid()}_{next(_names)}"
        args = lake.reader_args()
        values = {
            "metadata": args["metadata"],
            "data_path": args.get("data_path"),
            "metadata_schema": args.get("metadata_schema"),
            **(args["storage_options"] or {}),
            "python": sys.executable,
            "planner_idle_seconds": "5",
            **options,
        }
        prefix = f"spark.sql.catalog.{name}"
        spark.conf.set(prefix, CATALOG_CLASS)
        for key, value in values.items():
            if value is not None:
                spark.conf.set(f"{prefix}.{key}", str(value))
        return name

    return register
