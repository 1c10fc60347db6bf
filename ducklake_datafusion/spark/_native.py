"""Files Spark can read itself: clean, current-layout local files on Spark's Parquet reader.

``read_table`` splits a table's live files in two. Files written at the table's current
column layout, with no deletes, no rows of other snapshots, no name mapping and no
encryption, hold exactly the table's rows under the table's column names; for a table
whose every column has a type Spark's Parquet reader returns exactly as our Spark schema
declares it, those files are read by ``spark.read.parquet`` (vectorised decoding, column
pruning, row-group and page filters, all Spark's). Everything else (files with deletes,
older layouts, inlined rows, other types, files on object stores) goes through the Python
data source, told to skip the files read natively; the two DataFrames are unioned.

Each native file is first checked against the catalog on the driver (row count, field
ids under the expected names: ``provider/_file_checks``), from its footer, which is
parsed once per process. A file that fails the name check goes to the Python source,
which reads by field id; a damaged file raises, as on every other path.
"""

from __future__ import annotations

import contextlib
import re

from ..pathres import parse_location
from ..provider import DataFileTask
from ..provider._file_checks import check_data_file, reads_by_name
from ..provider._footers import parsed_fragment
from ..provider._reader import _FORMAT
from ._types import spark_schema

__all__ = ["NATIVE_TYPES", "native_files"]

# DuckLake types whose Parquet form Spark reads as exactly the value and Spark type our
# Spark schema declares (unsigned types widen as Spark's reader does; timestamp_s/_ms are
# whole microseconds; no nanosecond, time, uuid, interval, hugeint, json, variant,
# geometry or nested types).
NATIVE_TYPES = frozenset(
    [
        "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float32", "float64", "varchar", "blob", "date", "timestamp",
        "timestamp_us", "timestamp_ms", "timestamp_s", "timestamptz",
    ]
)  # fmt: skip
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")
_GLOB = re.compile(r"([\\*?\[\]{}])")
# Spark lists more than this many paths with a distributed job (~0.6 s); the files are
# known, so the listing stays on the driver.
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def native_type(type_name: str) -> bool:
    name = type_name.lower()
    return name in NATIVE_TYPES or bool(_DECIMAL.match(name))


def native_files(spark, table, plan, storage):
    """``(DataFrame over the native files, their data_file_ids)``, or ``(None, ())``."""
    if not all(native_type(c.type_name) for c in table.columns):
        return None, ()
    chosen = []
    for task in plan.tasks:
        if not (
            isinstance(task, DataFileTask)
            and task.fast
            and task.encryption_key is None
            and parse_location(task.file.url).scheme == "file"
        ):
            continue
        what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
        fragment = parsed_fragment(task.file, storage, _FORMAT)
        physical = fragment.physical_schema
        check_data_file(task, fragment.metadata, physical, table.columns, what)
        if reads_by_name(physical, table.columns):
            chosen.append(task)
    if not chosen:
        return None, ()
    paths = [hadoop_path(parse_location(t.file.url).path) for t in chosen]
    with _driver_listing(spark, len(paths)):
        frame = spark.read.schema(spark_schema(table.columns)).parquet(*paths)
    return frame, tuple(t.data_file_id for t in chosen)


def hadoop_path(local_path: str) -> str:
    """A local path as Spark takes it: a ``file:`` URI, glob characters escaped."""
    return "file://" + _GLOB.sub(r"\\\1", local_path)


@contextlib.contextmanager
def _driver_listing(spark, paths: int):
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
