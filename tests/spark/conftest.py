"""Fixtures of the Spark catalog tests: a DuckLake catalog of a test lake in the shared session."""

from __future__ import annotations

import pytest
from support.spark_settings import register_catalog


@pytest.fixture
def catalog(spark, spark_package_jar):
    """``catalog(lake, **options) -> name``: a DuckLake catalog of ``lake`` in the shared
    session (``register_catalog``)."""
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    return lambda lake, **options: register_catalog(spark, lake, **options)
