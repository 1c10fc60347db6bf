"""The JVM <-> planner protocol, defined once on each side and checked on both.

Every request the jar's catalog sends (``op`` and its fields) and every answer the planner
sends back is declared here, field by field, with its JSON kind; the jar declares the same
table (``Protocol.java``, in the same spelling) and ``tests/spark/test_planner_protocol.py``
compares the two, as ``tests/provider/test_rust_contract.py`` compares the Rust boundary's.
Both sides check every message against its declaration when it crosses: the jar each
request before it sends it and each answer when it arrives, reading only declared fields;
the planner each request when it arrives (:func:`check_request`, an error naming the op
and the field) and each answer before it sends it (:func:`check_answer`). A field spelled
differently on the two sides is a test failure, not a value silently absent.

A field is ``"name: kind"`` (``"name?: kind"`` when it may be absent or null). A kind is a
JSON kind (``string``, ``integer``, ``number``, ``boolean``; ``object``: any object, left
to its own reader, as a filter tree is to ``FilterJson``; ``any``: any value), ``{string}``
(an object of strings), ``[kind]`` (an array of that kind) or a record's name
(:data:`RECORDS`: an object of declared fields).

:data:`PROTOCOL_VERSION` changes with any change of the table; the jar refuses a planner of
another version (a jar and a package of different releases), naming both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...errors import InternalError, InvalidOptionError

__all__ = [
    "MESSAGES",
    "PROTOCOL_VERSION",
    "RECORDS",
    "Field",
    "Message",
    "check_answer",
    "check_request",
    "describe",
]

PROTOCOL_VERSION = 7

_SCALARS = frozenset(("string", "integer", "number", "boolean", "object", "any"))
_FIELD = re.compile(r"^([a-z_]+)(\??): (.+)$")


@dataclass(frozen=True)
class Field:
    """One field of a message or a record."""

    name: str
    kind: str
    required: bool

    @classmethod
    def parse(cls, text: str) -> Field:
        found = _FIELD.match(text)
        if found is None:
            raise ValueError(f"not a protocol field: {text!r}")
        return cls(found.group(1), found.group(3), not found.group(2))

    def __str__(self) -> str:
        return f"{self.name}{'' if self.required else '?'}: {self.kind}"


@dataclass(frozen=True)
class Message:
    """One request (``op``) and its answer."""

    op: str
    request: tuple[Field, ...]
    answer: tuple[Field, ...]


def _fields(texts: Iterable[str]) -> tuple[Field, ...]:
    return tuple(Field.parse(t) for t in texts)


_TABLE_NAME = ("namespace: string", "name: string")
_AS_OF = ("version?: string", "timestamp_us?: integer")
_COMMIT_INFO = ("author?: string", "commit_message?: string", "commit_extra_info?: string")
_HADOOP_REACH = ("hadoop_schemes?: [string]", "hadoop_version?: string")
# What a scan and a stream's micro-batch both answer (their blobs: the plan export, rows).
_SCAN_FILES = (
    "snapshot: integer",
    "files_spark: integer",
    "files_exact: integer",
    "exact_rows: integer",
    "exact_reasons: [string]",
    "hadoop_urls: [string]",
    "hadoop_options: {string}",
    "row_id_starts?: [integer]",  # (a scan with metadata columns: each Spark file's first)
)
_WRITE_PLACE = (
    "target: WriteTarget",
    "directory: string",
    "hadoop_options: {string}",
    "schema: string",
    "field_ids: [FieldIds]",
    "target_file_size: integer",
    "partition_keys: [PartitionKey]",
)

RECORDS: dict[str, tuple[Field, ...]] = {
    # the facts that identify a write, handed out at its beginning and back at its commit
    "WriteTarget": _fields(
        (
            "kind: string",
            *_TABLE_NAME,
            "snapshot: integer",
            "table_id?: integer",
            "overwrite?: boolean",
            "replace_partitions?: boolean",
            "table_uuid?: string",
            "schema?: string",
            "partitioning?: [string]",
        )
    ),
    # a column's id and its children's (the Parquet field ids of a written file)
    "FieldIds": _fields(("id: integer", "children: [FieldIds]")),
    # a partition key as Spark's executors split rows by it
    "PartitionKey": _fields(("ordinal: integer", "transform: string")),
    # a file an executor wrote: below the table's directory, its footer in base64
    "WrittenFile": _fields(
        (
            "path: string",
            "size: integer",
            "footer: string",
            "partition_row?: [any]",
            "row_ids?: boolean",
        )
    ),
    "StreamBatch": _fields(("query_id: string", "batch_id: integer", "compact_every?: integer")),
    "View": _fields(
        (
            *_TABLE_NAME,
            "sql: string",
            "duckdb_sql: string",
            "columns: [string]",
            "catalog_marker: string",
            "label: string",
        )
    ),
}


def _message(op: str, request: Iterable[str], answer: Iterable[str]) -> Message:
    return Message(op, _fields(request), _fields(answer))


MESSAGES: dict[str, Message] = {
    m.op: m
    for m in (
        _message(
            "open",
            ("options: {string}", "idle_seconds?: number"),
            ("protocol: integer", "package: string"),
        ),
        _message("namespaces", (), ("namespaces: [string]",)),
        _message("tables", ("namespace: string",), ("tables: [string]",)),
        _message(
            "table",
            (*_TABLE_NAME, *_AS_OF, "snapshot?: integer"),
            (
                *_TABLE_NAME,
                "snapshot: integer",
                "snapshot_time: string",
                "table_id: integer",
                "table_uuid: string",
                "catalog: string",
                "schema: string",
            ),
        ),
        _message(
            "scan",
            (
                *_TABLE_NAME,
                *_AS_OF,
                "snapshot?: integer",
                "columns?: [string]",
                "filters?: [object]",
                "metadata?: [string]",
                *_HADOOP_REACH,
            ),
            (
                *_SCAN_FILES,
                "table: string",
                "columns: [string]",
                "filter?: string",
                "files_live: integer",
                "files_pruned: integer",
                "rows: integer",
                "bytes: integer",
            ),
        ),
        _message(
            "changes",
            (*_TABLE_NAME, "start: string", "end?: string"),
            (
                *_TABLE_NAME,
                "first: integer",
                "last: integer",
                "rows: integer",
                "schema: string",
            ),
        ),
        _message("views", ("namespace: string",), ("views: [string]",)),
        _message("view", (*_TABLE_NAME, *_AS_OF), ("view?: View", "snapshot: integer")),
        _message(
            "stream_start",
            (*_TABLE_NAME, "starting_version?: string", "starting_timestamp?: string"),
            ("after: integer",),
        ),
        _message(
            "stream_end",
            (
                *_TABLE_NAME,
                "after: integer",
                "until?: integer",
                "max_snapshots?: integer",
                "max_files?: integer",
                "max_bytes?: integer",
            ),
            ("end: integer", "latest: integer"),
        ),
        _message(
            "stream_rows",
            (
                *_TABLE_NAME,
                "after: integer",
                "through: integer",
                "mode: string",
                "skip_change_commits: boolean",
                "schema: string",
                *_HADOOP_REACH,
            ),
            (*_SCAN_FILES, "skipped_snapshots: [integer]"),
        ),
        _message(
            "write_begin",
            (*_TABLE_NAME, "mode: string", "snapshot?: integer"),
            _WRITE_PLACE,
        ),
        _message(
            "create_begin",
            (*_TABLE_NAME, "schema: string", "partitioning: [string]"),
            _WRITE_PLACE,
        ),
        _message(
            "write_commit",
            (
                "target: WriteTarget",
                "files: [WrittenFile]",
                "stream?: StreamBatch",
                *_COMMIT_INFO,
            ),
            ("snapshot: integer", "replayed?: boolean", "compaction?: string"),
        ),
        _message(
            "delete_where",
            (*_TABLE_NAME, "filters: [object]", "dry_run?: boolean", *_COMMIT_INFO),
            ("snapshot: integer", "files: integer", "rows: integer", "decided: boolean"),
        ),
        _message(
            "change_commit",
            (
                "target: WriteTarget",
                "command: string",
                "files: [WrittenFile]",
                "deletes: integer",
                "stream?: StreamBatch",
                *_COMMIT_INFO,
            ),
            (
                "snapshot: integer",
                "deleted: integer",
                "updated: integer",
                "inserted: integer",
                "replayed?: boolean",
            ),
        ),
        _message(
            "maintain",
            ("operation: string", "arguments: object", "on_executors?: boolean", *_COMMIT_INFO),
            ("rows: [any]", "token?: string"),
        ),
        _message(
            "maintain_written",
            ("token: string", "failed?: string"),
            ("rows: [any]", "token?: string"),
        ),
        _message(
            "create_table",
            (*_TABLE_NAME, "schema: string", "partitioning: [string]", *_COMMIT_INFO),
            ("snapshot: integer",),
        ),
        _message(
            "schema_change",
            (
                "change: string",
                "namespace: string",
                "name?: string",
                "new_name?: string",
                "cascade?: boolean",
                "changes?: [object]",
                "schema?: string",
                *_COMMIT_INFO,
            ),
            ("snapshot: integer", "changed: boolean"),
        ),
    )
}


def describe() -> dict:
    """The whole table as plain data: what the test compares with the jar's."""
    return {
        "version": PROTOCOL_VERSION,
        "messages": {
            op: {"request": [str(f) for f in m.request], "answer": [str(f) for f in m.answer]}
            for op, m in sorted(MESSAGES.items())
        },
        "records": {name: [str(f) for f in fields] for name, fields in sorted(RECORDS.items())},
    }


def check_request(request: Mapping) -> Message:
    """The declared message of ``request``; raises ``InvalidOptionError`` naming the op and
    the field when the request is not as declared (a jar of another release, or a bug)."""
    op = request.get("op")
    message = MESSAGES.get(op) if isinstance(op, str) else None
    if message is None:
        raise InvalidOptionError(
            f"the DuckLake planner has no request {op!r} (protocol {PROTOCOL_VERSION}); use "
            "the Spark jar of the installed ducklake-datafusion (ducklake_datafusion.spark_jar())"
        )
    problem = _problem(request, message.request, skip=("op",))
    if problem is not None:
        raise InvalidOptionError(
            f"the DuckLake planner's request {op!r} {problem} (protocol {PROTOCOL_VERSION}); "
            "use the Spark jar of the installed ducklake-datafusion"
        )
    return message


def check_answer(message: Message, answer: Mapping) -> None:
    """Raise ``InternalError`` when the planner's own answer to ``message`` is not as
    declared: the jar would misread it."""
    problem = _problem(answer, message.answer, skip=())
    if problem is not None:
        raise InternalError(f"the DuckLake planner's answer to {message.op!r} {problem}")


def _problem(value: Mapping, fields: tuple[Field, ...], skip: tuple[str, ...]) -> str | None:
    declared = {f.name for f in fields}
    extra = sorted(k for k in value if k not in declared and k not in skip)
    if extra:
        return f"has undeclared field(s) {extra}"
    for field in fields:
        item = value.get(field.name)
        if item is None:
            if field.required:
                return f"lacks its field {field.name!r} ({field.kind})"
            continue
        problem = _kind_problem(item, field.kind)
        if problem is not None:
            return f"field {field.name!r}: {problem}"
    return None


def _kind_problem(value, kind: str) -> str | None:
    """What is wrong with ``value`` as a ``kind``, naming its JSON type, never the value
    itself (an option's value may be a secret)."""
    if kind.startswith("[") and kind.endswith("]"):
        if not isinstance(value, list):
            return f"{_json_type(value)} is not of kind {kind}"
        for i, item in enumerate(value):
            problem = _kind_problem(item, kind[1:-1])
            if problem is not None:
                return f"item {i}: {problem}"
        return None
    if kind == "{string}":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            return f"{_json_type(value)} is not of kind {{string}}"
        return None
    if kind in RECORDS:
        if not isinstance(value, dict):
            return f"{_json_type(value)} is not of kind {kind}"
        problem = _problem(value, RECORDS[kind], skip=())
        return None if problem is None else f"{kind} {problem}"
    if kind not in _SCALARS:
        raise InternalError(f"the planner protocol has no kind {kind!r}")
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "any": True,
    }[kind]
    return None if ok else f"{_json_type(value)} is not of kind {kind}"


def _json_type(value) -> str:
    if isinstance(value, dict):
        kinds = sorted({_json_type(v) for v in value.values()})
        return f"an object of {', '.join(kinds) or 'nothing'}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
