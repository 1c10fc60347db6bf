"""Spark's writes, as the planner process plans and commits them.

Spark's executors write a table's Parquet files themselves (the jar's ``DuckLakeDataWriter``);
what they need, and the one commit at the end, come from here, through the core's write
plan (``write.append_plan`` / ``create_plan``) and commit protocol (``write.commit_files``):

* ``write_begin`` ``{namespace, name, mode, snapshot?}`` (mode ``append``, ``overwrite``
  or ``overwrite_partitions``: only the partitions the files fall in; ``snapshot``: the one Spark loaded the table at, which an overwrite must
  not lose rows committed after) and ``create_begin`` ``{namespace, name, schema,
  partitioning}`` -> where and how to write: the table's directory as a Hadoop URL and the
  Hadoop options of its store, the Spark schema files are written with and the column id
  of every field (nested ones too: the files' field ids), the target file size, a
  partitioned table's keys, and ``target``: the few facts that identify the write (table,
  snapshot it began at, a new table's uuid), handed back at commit. Nothing
  is kept here between requests: a planner that exited idle during a long job is
  replaced, and the commit still finds its write.
* ``write_commit`` ``{target, files, author?, commit_message?, commit_extra_info?}`` ->
  ``{snapshot}``: each file (its path below the directory, size and footer, base64, and
  for a partitioned table its rows' key values) becomes
  the commit's facts from its footer (``write.data_file_from_footer``), and the core
  commits them all as one snapshot, or raises and commits nothing.
* ``create_table`` ``{namespace, name, schema, partitioning}`` -> ``{snapshot}``: an empty
  table (``CREATE TABLE`` without ``AS``).

Spark writes a column exactly only when its Spark type is the DuckLake type's own:
booleans, signed integers, floats, decimals, text, blobs, dates, ``timestamp`` (Spark's
``timestamp_ntz``) and ``timestamptz`` (Spark's ``timestamp``), and structs, lists and
maps of them. A table with another type (unsigned or 128-bit integers, ``time``, ``uuid``,
``json``, non-microsecond timestamps, intervals) is refused by name: Spark reads those
as a wider or different type, and writing that back would change them.
"""

from __future__ import annotations

import base64
import dataclasses
import decimal
import json
import posixpath
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from ...catalog import AlreadyCommitted, CommitOptions
from ...errors import InvalidOptionError, UnsupportedFeatureError, UnsupportedTypeError
from ...pathres import parse_location
from ...scan import Lake
from ...write import (
    TEMPORAL_TRANSFORMS,
    StreamBatch,
    WritePlan,
    append_plan,
    commit_files,
    create_plan,
    data_file_from_footer,
    file_schema,
    split_partitions,
)
from .._core import spark_arrow_type, spark_schema
from ..parquet import hadoop_options, hadoop_url
from ._table import default_metadata

__all__ = [
    "WriteTarget",
    "arrow_schema",
    "commit_options",
    "create_begin_response",
    "create_table_response",
    "partition_values",
    "relative_path",
    "stream_commit_info",
    "write_begin_response",
    "write_commit_response",
    "written_data_file",
]

# (``delete``: a row-level change that deletes only: it writes no data file, so a table of
# types Spark would write differently, or storage Hadoop cannot write, is no obstacle)
_MODES = ("append", "overwrite", "overwrite_partitions", "delete")
_CALENDAR = frozenset(TEMPORAL_TRANSFORMS)
_EXACT = frozenset(
    (
        "boolean",
        "int8",
        "int16",
        "int32",
        "int64",
        "float32",
        "float64",
        "varchar",
        "blob",
        "date",
        "timestamp",
        "timestamptz",
    )
)


def write_begin_response(lake: Lake, request: Mapping) -> dict:
    """What Spark's executors need to append to (or overwrite) an existing table."""
    mode = str(request.get("mode") or "append")
    if mode not in _MODES:
        raise InvalidOptionError(f"unknown write mode {mode!r}: one of {', '.join(_MODES)}")
    snapshot = request.get("snapshot")
    plan = append_plan(
        lake,
        str(request["namespace"]),
        str(request["name"]),
        overwrite=mode not in ("append", "delete"),
        at_snapshot=None if snapshot is None else int(snapshot),
    )
    target = WriteTarget(
        kind="append",
        namespace=plan.request.schema_name,
        name=plan.request.table_name,
        snapshot=plan.snapshot,
        table_id=plan.request.table_id,
        overwrite=plan.request.overwrite,
        # a dynamic partition overwrite of an unpartitioned table replaces its one partition
        replace_partitions=mode == "overwrite_partitions" and plan.partitioning is not None,
    )
    return _begin_answer(lake, plan, target, writes_rows=mode != "delete")


def create_begin_response(lake: Lake, request: Mapping) -> dict:
    """What Spark's executors need to write the rows of a table a commit will create."""
    schema_json = str(request["schema"])
    partitioning = [str(k) for k in request.get("partitioning") or ()]
    namespace, name = str(request["namespace"]), str(request["name"])
    plan = create_plan(
        lake,
        namespace,
        name,
        arrow_schema(schema_json, f"{namespace}.{name}"),
        partitioned_by=partitioning,
    )
    target = WriteTarget(
        kind="create",
        namespace=namespace,
        name=name,
        snapshot=plan.snapshot,
        table_uuid=str(plan.request.new_table.table_uuid),
        schema=schema_json,
        partitioning=tuple(partitioning),
    )
    return _begin_answer(lake, plan, target)


def create_table_response(lake: Lake, request: Mapping) -> dict:
    """Create an empty table (``CREATE TABLE ... USING`` / ``writeTo(...).create()`` of
    no rows): one snapshot."""
    namespace, name = str(request["namespace"]), str(request["name"])
    plan = create_plan(
        lake,
        namespace,
        name,
        arrow_schema(str(request["schema"]), f"{namespace}.{name}"),
        partitioned_by=[str(k) for k in request.get("partitioning") or ()],
        options=commit_options(request),
    )
    return {"snapshot": commit_files(lake, plan, ())}


def write_commit_response(lake: Lake, request: Mapping) -> dict:
    """Commit the files Spark's executors wrote as one snapshot; for a streaming query's
    batch (``stream``), none when that batch of that query was committed before."""
    stream = request.get("stream")
    options = commit_options(request)
    batch = None
    if stream is not None:
        query_id, batch_id = str(stream["query_id"]), int(stream["batch_id"])
        extra_info, marker = stream_commit_info(query_id, batch_id, options.commit_extra_info)
        # checked inside the commit's own transaction: a batch is committed at most once
        batch = StreamBatch(query_id, batch_id, marker)
        options = dataclasses.replace(options, commit_extra_info=extra_info)
    target = WriteTarget.from_json(request["target"])
    plan = _plan_again(lake, target, options)
    description = f"table {plan.name} of {lake.description}"
    files = [
        written_data_file(entry, plan.columns, plan.partitioning, description)
        for entry in request.get("files") or ()
    ]
    if target.replace_partitions:
        written = tuple(dict.fromkeys(f.partition_values for f in files))
        plan = dataclasses.replace(
            plan, request=dataclasses.replace(plan.request, replace_partitions=written)
        )
    try:
        return {"snapshot": commit_files(lake, plan, files, stream=batch)}
    except AlreadyCommitted as committed:
        return {"snapshot": committed.snapshot, "replayed": True}


def written_data_file(entry: Mapping, columns, partitioning, description: str, *, row_ids=False):
    """The commit's facts of one file an executor wrote (the protocol's ``WrittenFile``):
    its path checked below the table's directory, its footer read, its partition values
    computed from its rows' key values."""
    path = relative_path(str(entry["path"]), description)
    return data_file_from_footer(
        path,
        int(entry["size"]),
        base64.b64decode(str(entry["footer"])),
        columns,
        partition_values(partitioning, columns, entry.get("partition_row"), description),
        description=description,
        row_ids=row_ids,
    )


def stream_commit_info(query_id: str, batch_id: int, extra: str | None) -> tuple[str, str]:
    """A streaming batch's ``commit_extra_info`` (one JSON object: the query, the batch and
    the user's own commit info) and its marker, the prefix a replay of the batch is known by
    in a lake whose stream has no batch record yet (the sink's first releases)."""
    info = json.dumps({"spark_streaming_query_id": query_id, "batch_id": batch_id, "info": extra})
    marker = info[: info.index('"info": ')]
    return info, marker


@dataclass(frozen=True)
class WriteTarget:
    """The facts that identify a write (the protocol's ``WriteTarget``), handed out by
    ``*_begin`` and back at ``write_commit``, where :func:`_plan_again` makes the plan
    again from them: the planner keeps nothing between requests."""

    kind: str
    """``append`` (to an existing table: also an overwrite) or ``create``."""
    namespace: str
    name: str
    snapshot: int
    """The snapshot the write began at: the commit's base."""
    table_id: int | None = None
    """An append's table, which must still be the one of that name at commit."""
    overwrite: bool = False
    replace_partitions: bool = False
    """A dynamic partition overwrite: only the partitions the files fall in."""
    table_uuid: str | None = None
    """A new table's uuid, chosen at ``create_begin``."""
    schema: str | None = None
    """A new table's Spark schema (JSON)."""
    partitioning: tuple[str, ...] = ()
    """A new table's ``PARTITIONED BY`` keys."""

    def to_json(self) -> dict:
        values = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        return {**values, "partitioning": list(self.partitioning)}

    @classmethod
    def from_json(cls, value: Mapping) -> WriteTarget:
        """The target as it came back (its fields checked by the protocol on arrival)."""
        if value["kind"] not in ("append", "create"):
            raise InvalidOptionError(f"a Spark write's target of unknown kind {value['kind']!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in value.items() if k in names and v is not None}
        return cls(**{**values, "partitioning": tuple(value.get("partitioning") or ())})


def _plan_again(lake: Lake, target: WriteTarget, options: CommitOptions) -> WritePlan:
    """The plan ``*_begin`` made, from the facts it handed out."""
    if target.kind == "create":
        return create_plan(
            lake,
            target.namespace,
            target.name,
            arrow_schema(str(target.schema), f"{target.namespace}.{target.name}"),
            partitioned_by=list(target.partitioning),
            options=options,
            table_uuid=uuid.UUID(str(target.table_uuid)),
            at_snapshot=target.snapshot,
        )
    if target.table_id is None:
        raise InvalidOptionError(
            f"a Spark append to {target.namespace}.{target.name} came back without its table id"
        )
    return append_plan(
        lake,
        target.namespace,
        target.name,
        overwrite=target.overwrite,
        expected_table_id=target.table_id,
        options=options,
        at_snapshot=target.snapshot,
    )


def _begin_answer(
    lake: Lake, plan: WritePlan, target: WriteTarget, *, writes_rows: bool = True
) -> dict:
    if writes_rows:
        _check_spark_writes(plan)
    location = parse_location(plan.directory)
    if location.scheme == "file":
        directory, options = "file://" + location.path, {}
    else:
        directory = hadoop_url(plan.directory, lake.storage)
        options = hadoop_options(plan.directory, lake.storage)
        if options is None and not writes_rows:
            directory, options = plan.directory, {}
        elif options is None:
            raise UnsupportedFeatureError(
                f"table {plan.name} of {lake.description}: the lake's storage options for "
                f"{location.scheme}:// have no Hadoop equivalent, so Spark cannot write its "
                "files; write with the package's Python API (DuckLakeCatalog) instead"
            )
    return {
        "target": target.to_json(),
        "directory": directory.rstrip("/") + "/",
        "hadoop_options": options,
        "schema": _schema_with_defaults(plan).json(),
        "field_ids": [_id_tree(c) for c in plan.columns],
        "target_file_size": plan.target_file_size,
        "partition_keys": _partition_keys(plan) if writes_rows else [],
    }


def _schema_with_defaults(plan: WritePlan):
    """The Spark schema files are written with, each column's default in its metadata (a
    stream's rows that lack the column get it, as DuckDB's INSERT gives it)."""
    defaults = {i: (text, kind) for i, text, kind in plan.defaults}
    fields = []
    for column, field in zip(plan.columns, spark_schema(plan.columns).fields, strict=True):
        text, kind = defaults.get(column.column_id, (None, None))
        about = default_metadata(column, text, kind, field)
        fields.append(StructField(field.name, field.dataType, field.nullable, about))
    return StructType(fields)


def _partition_keys(plan: WritePlan) -> list[dict]:
    """A partitioned table's keys as the executors split rows by them: the key column's
    position and the transform (a column's value, or a calendar part of a date or time)."""
    if plan.partitioning is None:
        return []
    ordinals = {c.column_id: i for i, c in enumerate(plan.columns)}
    keys = []
    for key in plan.partitioning.keys:
        temporal = key.type_name in ("date", "timestamp", "timestamptz")
        if key.transform != "identity" and not (key.transform in _CALENDAR and temporal):
            raise UnsupportedFeatureError(
                f"table {plan.name} is partitioned by {key.transform} of column {key.column_name!r}, "
                "which Spark does not write yet (nothing was written); write it with the "
                "package's Python API (DuckLakeCatalog) or DuckDB"
            )
        keys.append({"ordinal": ordinals[key.column_id], "transform": key.transform})
    return keys


def partition_values(partitioning, columns, raw, description: str) -> tuple[str | None, ...]:
    """The catalog's partition values of a file of a table of ``columns`` partitioned by
    ``partitioning`` (``None``: unpartitioned), from the key columns' values of its rows
    (the executors' ``partition_row``), by the same code that splits this package's writes."""
    if partitioning is None:
        return ()
    keys = partitioning.keys
    if not isinstance(raw, list) or len(raw) != len(keys):
        raise InvalidOptionError(
            f"{description}: a written file came without its partition's key values"
        )
    by_id = {c.column_id: c for c in columns}
    arrays = {}
    for key, value in zip(keys, raw):
        arrow_type = file_schema([by_id[key.column_id]]).field(0).type
        arrays[key.column_name] = pa.array([_key_value(value, arrow_type)], arrow_type)
    (partition,) = split_partitions(pa.table(arrays), partitioning)
    return partition.values


def _key_value(value, arrow_type: pa.DataType):
    """A key column's value as the executors send it (``PartitionKeys.raw``)."""
    if value is None:
        return None
    if pa.types.is_date(arrow_type):
        return pa.scalar(int(value), pa.int32()).cast(arrow_type)
    if pa.types.is_timestamp(arrow_type):
        return pa.scalar(int(value), pa.int64()).cast(arrow_type)
    if pa.types.is_decimal(arrow_type):
        return decimal.Decimal(str(value))
    if pa.types.is_floating(arrow_type):
        return float(value)
    if pa.types.is_binary(arrow_type):
        return base64.b64decode(str(value))
    return value


def _check_spark_writes(plan: WritePlan) -> None:

    def check(spec, path: str) -> None:
        kind = spec.type_name.lower()
        if kind in ("struct", "list", "map"):
            for child in spec.children:
                check(child, f"{path}.{child.name}")
        elif kind not in _EXACT and not kind.startswith("decimal"):
            raise UnsupportedTypeError(
                f"table {plan.name}: column {path!r} is a DuckLake {spec.type_name}, which "
                "Spark holds as another type, so a Spark write would change its values; "
                "write this table with the package's Python API (DuckLakeCatalog) or DuckDB"
            )

    for column in plan.columns:
        check(column, column.name)


def _id_tree(spec) -> dict:
    """A column's id and its children's, in the order of the Spark type's fields (a
    list's element; a map's key and value)."""
    return {"id": spec.column_id, "children": [_id_tree(c) for c in spec.children]}


def arrow_schema(schema_json: str, table: str) -> pa.Schema:
    """A Spark schema (its JSON) as the Arrow schema a Spark write of it has."""
    schema = StructType.fromJson(json.loads(schema_json))
    fields = []
    for field in schema.fields:
        try:
            arrow = spark_arrow_type(field.dataType, field.name)
        except UnsupportedTypeError as exc:
            raise UnsupportedTypeError(f"table {table}: {exc}") from exc
        fields.append(pa.field(field.name, arrow))
    return pa.schema(fields)


def commit_options(request: Mapping) -> CommitOptions:
    def text(key: str) -> str | None:
        value = request.get(key)
        return None if value is None else str(value)

    return CommitOptions(
        author=text("author"),
        commit_message=text("commit_message"),
        commit_extra_info=text("commit_extra_info"),
    )


def relative_path(path: str, description: str) -> str:
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal != path or normal.startswith(".."):
        raise InvalidOptionError(
            f"{description}: written file path {path!r} is not below the table's directory"
        )
    return path
