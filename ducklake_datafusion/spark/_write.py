"""``write_table``: a Spark DataFrame into a lake, without configuring a catalog first.

The write goes through the package's Spark catalog (``DuckLakeCatalog`` in the jar),
configured for this lake at runtime as ``read_table`` configures it (``_catalog_read``):
Spark's executors write the files, the driver commits them once through the core's
protocol, exactly as ``INSERT INTO`` / ``df.writeTo(...)`` on a configured catalog do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import InvalidOptionError
from ._catalog_read import runtime_identifier

__all__ = ["write_table"]

_MODES = ("append", "overwrite", "create")
_TEMPORAL = re.compile(r"^\s*(year|month|day|hour)\s*\(\s*([^()\s]+)\s*\)\s*$", re.IGNORECASE)
_BUCKET = re.compile(r"^\s*bucket\s*\(\s*(\d+)\s*,\s*([^()\s]+)\s*\)\s*$", re.IGNORECASE)


def write_table(
    frame,
    metadata: str,
    table: str,
    *,
    mode: str = "append",
    partitioned_by: Sequence[str] = (),
    data_path: str | None = None,
    metadata_schema: str | None = None,
    storage_options: Mapping[str, object] | None = None,
    author: str | None = None,
    commit_message: str | None = None,
    commit_extra_info: str | None = None,
) -> None:
    """Write ``frame`` into ``schema.table`` of a lake as one new snapshot.

    Args:
        frame: the Spark DataFrame (classic or Spark Connect).
        metadata: the catalog, as for ``read_table``.
        table: ``"schema.table"`` (or ``"table"`` in ``main``).
        mode: ``"append"``; ``"overwrite"`` (the table's rows replaced); ``"create"`` (a
            new table with the frame's columns and rows, in one snapshot).
        partitioned_by: for ``"create"``: DuckDB's ``PARTITIONED BY`` keys (``"region"``,
            ``"year(day)"``, ``"month(ts)"``...).
        author / commit_message / commit_extra_info: the snapshot's, as DuckDB's
            ``set_commit_message`` (default: the Spark user and application).

    Raises:
        InvalidOptionError: an unknown mode, or keys without ``"create"``.
        MissingDependencyError: the session lacks the package's jar.
        and the catalog's typed errors (a conflict, a type Spark cannot write exactly...).
    """
    if mode not in _MODES:
        raise InvalidOptionError(f"write_table mode {mode!r}: one of {', '.join(_MODES)}")
    if partitioned_by and mode != "create":
        raise InvalidOptionError(
            "write_table partitioned_by= applies to mode='create' (an existing table keeps "
            "its partitioning)"
        )
    ident = runtime_identifier(
        frame.sparkSession,
        "write_table",
        metadata,
        table,
        data_path=data_path,
        metadata_schema=metadata_schema,
        storage_options=storage_options,
    )
    writer = frame.writeTo(ident)
    for key, value in (
        ("author", author),
        ("commit_message", commit_message),
        ("commit_extra_info", commit_extra_info),
    ):
        if value is not None:
            writer = writer.option(key, value)
    if mode == "append":
        writer.append()
    elif mode == "overwrite":
        from pyspark.sql.functions import lit

        writer.overwrite(lit(True))
    else:
        if partitioned_by:
            writer = writer.partitionedBy(*(_transform(key) for key in partitioned_by))
        writer.create()


def _transform(key: str):
    """A DuckDB partition key as Spark's partition transform column."""
    from pyspark.sql import functions

    transforms = getattr(functions, "partitioning", functions)  # pyspark 4: its own module
    temporal = _TEMPORAL.match(key)
    if temporal:
        unit, column = temporal.groups()
        return getattr(transforms, unit.lower() + "s")(column)
    bucket = _BUCKET.match(key)
    if bucket:
        return transforms.bucket(int(bucket.group(1)), bucket.group(2))
    if re.fullmatch(r"\s*[^()\s]+\s*", key):
        return functions.col(key.strip())
    raise InvalidOptionError(
        f"partition key {key!r}: a column, year(c), month(c), day(c), hour(c) or bucket(n, c)"
    )
