"""Where a write goes and what its commit will say, decided once when the write starts.

Every writer needs the same facts before its first row: the table's columns and
partitioning as the latest snapshot has them, its directory, the lake's target file size,
and the commit request its files will complete. :func:`append_plan` reads them for an
existing table, :func:`create_plan` builds them for a table a commit will create (``CREATE
TABLE AS``). The Python writer (``_append``) and Spark's executors (through the planner
process) both start from a :class:`WritePlan` and end in :func:`commit_files`, so both
commit the same way; a writer that runs elsewhere carries the plan's few identifying
facts away and gets the same plan back with ``append_plan(..., at_snapshot=...)`` or
``create_plan(..., table_uuid=...)``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from ..catalog import (
    CommitOptions,
    NewColumn,
    NewDataFile,
    NewTable,
    NotCommittedBefore,
    RecordStreamBatch,
    TableCommit,
    TableRef,
    build_column_tree,
    commit,
    metadata,
    transaction_of,
)
from ..errors import CatalogReadOnlyError, CommitConflictError, TableNotFoundError
from ..pathres import join_path
from ..scan import Lake, require_table, table_directory
from ._files import DEFAULT_TARGET_FILE_SIZE, uuid7
from ._partitions import PartitionSpec, partition_keys, read_partition_spec
from ._types import columns_for_schema

__all__ = ["WritePlan", "append_plan", "commit_files", "create_plan"]

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "t": 1000**4,
}


@dataclass(frozen=True, slots=True)
class WritePlan:
    """One write's target, read from one snapshot, and its commit request (no files yet).

    Attributes:
        request: what the commit says; its ``files`` are filled in by :func:`commit_files`.
        directory: the table's directory URL (ends with ``/``); files go below it.
        columns: the table's column tree (``ColumnSpec``s, nested children included).
        target_file_size: bytes after which a writer starts a new file.
        partitioning: the spec files are split by (``None``: unpartitioned).
        defaults: ``(column id, text, "literal" or "expression")`` of the top-level
            columns with a default: what rows that leave one out get (DuckDB's
            ``INSERT``).
    """

    request: TableCommit
    directory: str
    columns: tuple
    target_file_size: int
    partitioning: PartitionSpec | None = None
    defaults: tuple[tuple[int, str, str], ...] = ()

    @property
    def snapshot(self) -> int:
        return self.request.base_snapshot

    @property
    def name(self) -> str:
        return f"{self.request.schema_name}.{self.request.table_name}"


def require_writable(lake: Lake) -> None:
    """Refuse a write to a lake opened at a fixed snapshot."""
    if lake.pinned:
        raise CatalogReadOnlyError(
            f"{lake.description} was opened pinned to a snapshot (snapshot= or "
            "snapshot_time=), which is read-only; open it without a pin to write"
        )


def append_plan(
    lake: Lake,
    schema: str,
    table: str,
    *,
    overwrite: bool = False,
    expected_table_id: int | None = None,
    options: CommitOptions | None = None,
    at_snapshot: int | None = None,
) -> WritePlan:
    """The plan of an append to (or overwrite of) an existing table, at the latest
    snapshot, or at ``at_snapshot`` for a write that began there."""
    require_writable(lake)
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
        snapshot = _base_snapshot(session, at_snapshot)
        entry = require_table(session, lake.description, snapshot, schema, table)
        description = f"{lake.description}: table {entry.schema_name}.{entry.table_name}"
        if expected_table_id is not None and expected_table_id != entry.table_id:
            # (so a commit's table id is always the table's at its base snapshot, which the
            # commit's requirements check takes for granted when nothing committed since)
            raise CommitConflictError(
                f"{description} was replaced by another table of the same name before "
                f"snapshot {snapshot}, where this write began; nothing was committed, write "
                "again against the table as it is now"
            )
        columns = build_column_tree(metadata.read_columns(session, entry.table_id, snapshot))
        defaults = metadata.column_defaults(session, entry.table_id, snapshot)
        spec = read_partition_spec(session, entry.table_id, snapshot, columns, description)
        target_size = _target_file_size(session, settings, entry.table_id)
        directory = table_directory(lake.data_path(settings), entry)
    request = TableCommit(
        schema_name=entry.schema_name,
        table_name=entry.table_name,
        base_snapshot=snapshot,
        table_id=entry.table_id,
        files=(),
        column_types=leaf_types(columns),
        overwrite=overwrite,
        partition_id=spec.partition_id if spec else None,
        options=options or CommitOptions(),
    )
    found = tuple((i, text, kind) for i, (text, kind) in sorted(defaults.items()))
    return WritePlan(request, directory, tuple(columns), target_size, spec, found)


def _base_snapshot(session, at_snapshot: int | None) -> int:
    """The snapshot a write is based on: the one it began at, or the latest."""
    if at_snapshot is not None:
        return at_snapshot
    return metadata.latest_snapshot(session).snapshot_id


def create_plan(
    lake: Lake,
    schema: str,
    table: str,
    arrow_schema: pa.Schema,
    *,
    partitioned_by: Sequence[str] = (),
    options: CommitOptions | None = None,
    table_uuid: uuid.UUID | None = None,
    at_snapshot: int | None = None,
) -> WritePlan:
    """The plan of a write that creates ``schema.table`` with the columns of
    ``arrow_schema`` (its rows, if any, committed in the same snapshot)."""
    require_writable(lake)
    new_columns = columns_for_schema(arrow_schema, f"{schema}.{table}")
    # (DuckDB gives every new column, nested or not, its column id as column_order)
    rows = [
        NewColumn(spec.column_id, spec.name, spec.type_name, parent, spec.column_id)
        for column in new_columns
        for spec, parent in column.walk()
    ]
    table_uuid = table_uuid or uuid7()
    path = f"{table}/" if _PLAIN_NAME.match(table) else f"{table_uuid}/"
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
        latest = _base_snapshot(session, at_snapshot)
        schemas = {s.schema_name: s for s in metadata.list_schemas(session, latest)}
        entry = schemas.get(schema)
        if entry is None:
            raise TableNotFoundError(
                f"{lake.description}: schema {schema!r} does not exist at snapshot {latest}, "
                f"so table {schema}.{table} cannot be created there; create the schema in "
                "DuckDB first (CREATE SCHEMA)"
            )
        schema_dir = join_path(lake.data_path(settings), entry.path, entry.path_is_relative)
        target_size = _target_file_size(session, settings, None)
    columns = build_column_tree(
        _ColumnRow(c.column_id, c.name, c.type_name, c.parent_column, c.column_order) for c in rows
    )
    keys = partition_keys(partitioned_by, columns, f"{schema}.{table}")
    spec = PartitionSpec(-1, keys) if keys else None  # its id is given at commit
    request = TableCommit(
        schema_name=schema,
        table_name=table,
        base_snapshot=latest,
        table_id=None,
        files=(),
        column_types=leaf_types(columns),
        new_table=NewTable(
            table_uuid, path, tuple(rows), tuple((k.column_id, k.transform) for k in keys)
        ),
        options=options or CommitOptions(),
    )
    directory = join_path(schema_dir, path, True)
    return WritePlan(request, directory, tuple(columns), target_size, spec)


@dataclass(frozen=True, slots=True)
class StreamBatch:
    """A streaming query's micro-batch, committed at most once: ``marker`` is what its
    snapshot's ``commit_extra_info`` starts with (``commit_extra_info`` itself carries it)."""

    query_id: str
    batch_id: int
    marker: str


def commit_files(
    lake: Lake,
    plan: WritePlan,
    files: Sequence[NewDataFile],
    *,
    stream: StreamBatch | None = None,
) -> int:
    """Commit ``files`` (written under ``plan.directory``) as the plan's one new snapshot;
    a ``stream`` batch only if that batch of that query was not committed before (else
    ``AlreadyCommitted``), recording it in the same transaction."""
    transaction = transaction_of(replace(plan.request, files=tuple(files)))
    if stream is not None:
        request = plan.request
        table = TableRef(request.schema_name, request.table_name, request.table_id)
        once = NotCommittedBefore(stream.marker, table, stream.query_id, stream.batch_id)
        record = RecordStreamBatch(table, stream.query_id, stream.batch_id)
        transaction = replace(
            transaction,
            actions=(*transaction.actions, record),
            requirements=(*transaction.requirements, once),
        )
    return commit(lake.backend, transaction)


def _snapshot(session, at_snapshot: int | None) -> int:
    """The snapshot a write plans from: the one it began at, else the latest."""
    return at_snapshot if at_snapshot is not None else metadata.latest_snapshot(session).snapshot_id


@dataclass(frozen=True, slots=True)
class _ColumnRow:
    column_id: int
    column_name: str
    column_type: str
    parent_column: int | None
    column_order: int
    initial_default: str | None = None


def _target_file_size(session, settings: Mapping[str, str], table_id: int | None) -> int:
    """The lake's ``target_file_size`` (a table's own setting first), in bytes."""
    text = settings.get("target_file_size")
    if table_id is not None:
        text = metadata.table_setting(session, table_id, "target_file_size") or text
    return parse_file_size(text) or DEFAULT_TARGET_FILE_SIZE


def parse_file_size(text: str | None) -> int | None:
    """A size setting (``target_file_size``: bytes, or ``512MB``, ``1GiB`` ...) in bytes;
    ``None`` when unset or not a size."""
    match = _SIZE.match(text or "")
    if not match:
        return None
    unit = (match.group(2) or "").lower()
    return max(int(float(match.group(1)) * _UNITS.get(unit, 1)), 1)


def leaf_types(columns) -> dict[int, str]:
    """The DuckLake type of every leaf column id (what the commit compares bounds by)."""
    types: dict[int, str] = {}

    def visit(spec) -> None:
        if spec.children:
            for child in spec.children:
                visit(child)
        else:
            types[spec.column_id] = spec.type_name

    for column in columns:
        visit(column)
    return types
