"""Deletes applied inside Spark's own Parquet reader, by the package's jar.

The jar (``jvm/``, built per Scala version into ``spark/jars/``; ``spark_jar()`` names
the one for the installed pyspark) holds ``DeletedRowsParquetFormat``: Spark's Parquet
file format, whose reader also fills a boolean column ``__ducklake_keep`` from each row's
position in its file (``_tmp_metadata_row_index``, which Spark's reader fills by that
name) and the file's deleted positions. A filter on that column drops the deleted rows.
Spark's reader needs neither the ``_metadata`` struct of every row nor a join for it, which
is what the mask join costs (``docs/benchmarks.md``).

The positions are the very ones the exact reader removes (``deleted_positions_of``),
registered on the driver as one broadcast variable per scan; the read names it by a key
(option ``ducklake.deleted_rows``). Files are named by their Hadoop path, so no two files
can share a mask, and the reader refuses a file whose length in Spark's listing is not the
catalog's. Where a row's flag could not be set (a reader that is not ours), the filter
raises instead of keeping the row.

The jar must be on the session's classpath (``spark.jars``, which also ships it to the
executors); without it ``_mask_join`` applies the deletes by a broadcast join, exactly, slower.
"""

from __future__ import annotations

import functools
import logging
import struct
from pathlib import Path

import numpy as np

from ...errors import InvalidOptionError, MissingDependencyError
from ...pathres import parse_location
from ...read import deleted_positions_of
from .._core import is_connect, pyspark_at_least
from ._files import read_files
from ._hadoop import hadoop_url

__all__ = ["FORMAT_CLASS", "KEEP", "ROW_INDEX", "has_reader", "read_keeping", "spark_jar"]

_log = logging.getLogger("ducklake_datafusion.spark")
FORMAT_CLASS = "io.ducklake_datafusion.spark.DeletedRowsParquetFormat"
_REGISTRY_CLASS = "io.ducklake_datafusion.spark.DeletedRows"
_OPTION = "ducklake.deleted_rows"
# Spark's reader fills a read-schema column of this name with each row's file position
# (Spark 3.4+; FileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME). Delta Lake reads it the same way.
ROW_INDEX = "_tmp_metadata_row_index"
KEEP = "__ducklake_keep"
# spark/jars/: where jvm/build.sh puts them, and the wheel carries both ([tool.maturin] include)
_JARS = Path(__file__).resolve().parents[1] / "jars"


_SCALA_VERSIONS = ("2.12", "2.13")


def spark_jar(scala: str | None = None) -> str:
    """The path of the package's Spark jar for a Scala binary version.

    ``scala``: ``"2.12"`` (Spark 3.5) or ``"2.13"`` (Spark 4); by default the installed
    pyspark's. The wheel carries both jars, so a driver can name the one of a cluster whose
    Spark differs from its own pyspark. Put it in ``spark.jars`` when building the session
    (Spark ships it to the executors) and ``read_table`` applies deletes inside Spark's
    Parquet reader::

        SparkSession.builder.config("spark.jars", spark_jar()).getOrCreate()
    """
    if scala is None:
        scala = "2.13" if pyspark_at_least(4, 0) else "2.12"
    elif scala not in _SCALA_VERSIONS:
        raise InvalidOptionError(
            f"spark_jar(scala={scala!r}): the package's Spark jar is built for Scala "
            f"{' and '.join(_SCALA_VERSIONS)} (Spark 3.5 and Spark 4); pass one of those"
        )
    jar = _JARS / f"ducklake-spark_{scala}.jar"
    if not jar.is_file():
        raise MissingDependencyError(
            f"the package's Spark jar for Scala {scala} is not in this installation ({jar}); "
            "the wheel carries it: install ducklake-datafusion from its wheel, or in a source "
            "checkout run `make jars` (both jars; a JDK and Maven) or jvm/build.sh PYTHON "
            "(the jar for that Python's pyspark; a JDK)"
        )
    return str(jar)


@functools.lru_cache(maxsize=16)
def has_reader(spark) -> bool:
    """Whether the session's JVM loads the jar's format (cached per session)."""
    from py4j.protocol import Py4JError

    if is_connect(spark):  # the jar may well be on the server; this client cannot reach it
        _log.info(
            "Spark Connect: read_table cannot hand deleted positions to the server's JVM, so "
            "deletes are applied by a join; the DuckLake catalog (spark.sql.catalog.<name> = "
            "io.ducklake_datafusion.spark.DuckLakeCatalog on the server) applies them inside "
            "Spark's reader"
        )
        return False
    try:
        jvm = spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(FORMAT_CLASS, False, loader)
    except (Py4JError, AttributeError):  # not on the classpath, or Spark Connect
        _log.info(
            "the ducklake Spark jar is not on this session's classpath (spark.jars = "
            "ducklake_datafusion.spark.spark_jar()): deletes are applied by a join, slower"
        )
        return False
    return True


def read_keeping(spark, schema, tasks, plan, storage, read_options):
    """The tasks' files read by the jar's format, their deleted rows dropped.

    ``schema``: the Spark schema to read the files with (the file layout's). Every task
    carries deletes.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, LongType, StructField, StructType

    registry = functools.reduce(getattr, _REGISTRY_CLASS.split("."), spark._jvm)
    key = registry.register(bytearray(_encoded(tasks, plan, storage)))
    read_schema = StructType(
        [*schema.fields, StructField(ROW_INDEX, LongType()), StructField(KEEP, BooleanType())]
    )
    options = {**(read_options or {}), _OPTION: key}
    rows = read_files(spark, read_schema, tasks, options, storage, format=FORMAT_CLASS)
    # The row index is named so that Spark's reader always fills it (an unreferenced
    # column would be pruned from the read); a NULL flag raises rather than keep a row.
    applied = F.col(KEEP) & F.col(ROW_INDEX).isNotNull()
    unapplied = F.raise_error(
        F.lit(
            f"StorageError: the reader of table {plan.table} (snapshot {plan.snapshot_id}) "
            "left rows unflagged; its deletes cannot be applied"
        )
    )
    kept = rows.where(F.coalesce(applied, unapplied))
    return kept.select(*[F.col(f"`{field.name}`") for field in schema.fields])


def _encoded(tasks, plan, storage) -> bytes:
    """The tasks' files and deleted positions as ``DeletedRows.register`` reads them (a
    file of unknown length: -1, unchecked): each file's positions sorted, or as a bitmap
    where that is smaller (more than one deleted row in 64)."""
    scan = f"table {plan.table} (snapshot {plan.snapshot_id})".encode()
    parts = [struct.pack("<i", len(scan)), scan, struct.pack("<i", len(tasks))]
    for task in tasks:
        url = _hadoop_file_url(task.file.url, storage).encode()
        positions = deleted_positions_of(task, plan.table, plan.snapshot_id, storage)
        positions = np.unique(np.asarray(positions, dtype=np.int64))
        length = -1 if task.file.size is None else task.file.size
        parts += [struct.pack("<i", len(url)), url, struct.pack("<q", length)]
        words = int(positions[-1] >> 6) + 1 if len(positions) else 0
        if words < len(positions):
            bitmap = np.zeros(words, dtype=np.uint64)
            np.bitwise_or.at(
                bitmap,
                positions >> 6,
                np.left_shift(np.uint64(1), (positions & 63).astype(np.uint64)),
            )
            parts += [struct.pack("<i", -words), bitmap.astype("<u8", copy=False).tobytes()]
        else:
            parts += [
                struct.pack("<i", len(positions)),
                positions.astype("<i8", copy=False).tobytes(),
            ]
    return b"".join(parts)


def _hadoop_file_url(url: str, storage) -> str:
    """The file's URL as a Hadoop path names it (no glob escaping: this is not a pattern)."""
    location = parse_location(url)
    if location.scheme == "file":
        return "file://" + location.path
    return hadoop_url(url, storage)
