"""Data files handed to Spark's reader: their paths as Hadoop takes them, listed on the driver.

Every Spark Parquet read of ``read_table`` (clean files, files of an older layout, the
masked scans of the mask join, the jar's reader) goes through :func:`read_files`, so the
files are spelled and listed the same way on every one of them.
"""

from __future__ import annotations

import contextlib
import re

from ...pathres import parse_location
from ._hadoop import hadoop_url

__all__ = ["driver_listing", "hadoop_path", "read_files", "spark_path", "union_frames"]

_GLOB = re.compile(r"([\\*?\[\]{}])")
# Spark lists more than this many paths with a distributed job; the files are known, so
# the listing stays on the driver.
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def read_files(spark, schema, tasks, read_options=None, storage=None, format="parquet"):
    """The tasks' files read by Spark's ``format`` reader (Parquet, or the jar's), listed
    on the driver."""
    paths = [spark_path(t.file.url, storage) for t in tasks]
    with driver_listing(spark, len(paths)):
        return spark.read.format(format).schema(schema).options(**(read_options or {})).load(paths)


def spark_path(url: str, storage=None) -> str:
    """A data file URL as Spark's reader takes it (Hadoop scheme, globs escaped)."""
    location = parse_location(url)
    if location.scheme == "file":
        return hadoop_path(location.path)
    return _GLOB.sub(r"\\\1", hadoop_url(url, storage))


def hadoop_path(local_path: str) -> str:
    """A local path as Spark takes it: a ``file:`` URI, glob characters escaped."""
    return "file://" + _GLOB.sub(r"\\\1", local_path)


@contextlib.contextmanager
def driver_listing(spark, paths: int):
    """Raise the parallel-listing threshold while the file index is built (restored)."""
    previous = spark.conf.get(_LISTING_THRESHOLD, None)
    spark.conf.set(_LISTING_THRESHOLD, str(max(paths + 1, 32)))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_LISTING_THRESHOLD)
        else:
            spark.conf.set(_LISTING_THRESHOLD, previous)


def union_frames(frames: list):
    """The frames unioned by column name (None when there is none)."""
    if not frames:
        return None
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame
