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
    schema_mode: str | None = None,
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
        schema_mode: ``"merge"`` (Delta's ``mergeSchema``): the frame's columns and struct
            fields the table lacks are added first, as one snapshot of their own (``ALTER
            TABLE ... ADD COLUMNS`` through the catalog, DuckDB's catalog rows); the table's
            columns the frame lacks get their default, else NULL. Spark's own resolution of a write
            refuses a column the table lacks, which is why this is an argument here and not
            a write option (a stream's ``mergeSchema`` option works: Spark leaves a stream's
            rows to the table).

    Raises:
        InvalidOptionError: an unknown mode, or keys without ``"create"``.
        MissingDependencyError: the session lacks the package's jar.
        and the catalog's typed errors (a conflict, a type Spark cannot write exactly...).
    """
    if mode not in _MODES:
        raise InvalidOptionError(f"write_table mode {mode!r}: one of {', '.join(_MODES)}")
    if schema_mode not in (None, "merge"):
        raise InvalidOptionError(
            f"write_table schema_mode must be None or 'merge' (add the frame's new columns), "
            f"got {schema_mode!r}"
        )
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
    if schema_mode == "merge" and mode != "create":
        frame = _merge_schema(frame, ident)
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


def _merge_schema(frame, ident: str):
    """Add to the table the frame's columns and struct fields it lacks (one ``ALTER TABLE``,
    one snapshot); the frame with the table's columns, in its order, the missing ones their
    default (as DuckDB's INSERT writes it), else NULL."""
    from pyspark.sql import functions

    session = frame.sparkSession
    schema = session.table(ident).schema
    added = _missing_columns(frame.schema, schema)
    if added:
        columns = ", ".join(f"{_quoted(path)} {kind.simpleString()}" for path, kind in added)
        session.sql(f"ALTER TABLE {ident} ADD COLUMNS ({columns})").collect()
        schema = session.table(ident).schema  # (with the columns just added)
    given = {name.lower(): name for name in frame.columns}

    def column(field):
        if field.name.lower() in given:
            return functions.col(f"`{given[field.name.lower()]}`").alias(field.name)
        default = field.metadata.get("CURRENT_DEFAULT")  # (the planner's, a Spark literal)
        value = functions.lit(None) if default is None else functions.expr(default)
        return value.cast(field.dataType).alias(field.name)

    return frame.select(*(column(field) for field in schema.fields))


def _missing_columns(data, table) -> list[tuple[tuple[str, ...], object]]:
    """The columns and struct fields (their paths and Spark types) of the Spark schema
    ``data`` that ``table`` lacks, names matched case-insensitively as DuckDB's are; what
    ``append(..., schema_mode="merge")`` adds."""
    from pyspark.sql.types import StructType

    def walk(fields, have, parent):
        known = {field.name.lower(): field for field in have}
        for field in fields:
            path = (*parent, field.name)
            column = known.get(field.name.lower())
            if column is None:
                yield path, field.dataType
            elif isinstance(field.dataType, StructType) and isinstance(column.dataType, StructType):
                yield from walk(field.dataType.fields, column.dataType.fields, path)

    return list(walk(data.fields, table.fields, ()))


def _quoted(path: tuple[str, ...]) -> str:
    return ".".join("`" + part.replace("`", "``") + "`" for part in path)


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
