"""Writes to a lake, start to end: resolve the table, write its files, commit once.

:func:`append` (also an overwrite) and :func:`create_table` (also ``CREATE TABLE AS``)
are what every entry point calls: ``DuckLakeCatalog.create_table``,
``DuckLakeTable.append`` / ``overwrite``, and DataFusion's ``INSERT INTO`` and ``CREATE
TABLE AS``. Each reads the table as the latest snapshot has it (one read session), streams
the data into Parquet files (``_files``), and hands the files' facts to the catalog's
commit protocol (``catalog.commit``): one new snapshot, or none at all. Whatever fails
after files were written (the data, storage, the catalog, a conflict) deletes them again;
a file that cannot be deleted is named in the error as an orphan.

Small appends are written as files too, never inlined into the catalog (both are valid
DuckLake; DuckDB inlines them when its ``data_inlining_row_limit`` allows).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from ..catalog import (
    CommitOptions,
    NewColumn,
    NewTable,
    TableCommit,
    build_column_tree,
    commit,
    metadata,
)
from ..errors import CatalogReadOnlyError, DuckLakeError
from ..pathres import join_path
from ..scan import Lake, require_table, table_directory
from ._files import (
    DEFAULT_TARGET_FILE_SIZE,
    ROW_GROUP_ROWS,
    DataFileWriter,
    uuid7,
)
from ._input import as_arrow, batches_of
from ._partitions import PartitionSpec, partition_keys, read_partition_spec
from ._types import columns_for_schema, conform

__all__ = ["append", "create_table"]

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
class _Target:
    """Where a write goes, read from the latest snapshot when it starts."""

    snapshot: int
    schema_name: str
    table_name: str
    table_id: int | None
    directory: str
    columns: tuple
    target_file_size: int
    partitioning: PartitionSpec | None = None


def append(
    lake: Lake,
    schema: str,
    table: str,
    data,
    *,
    overwrite: bool = False,
    expected_table_id: int | None = None,
    options: CommitOptions | None = None,
) -> int:
    """Append ``data`` (or replace the table's rows with it) as one new snapshot.

    Args:
        data: a ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader``, any object
            with ``__arrow_c_stream__`` (Polars, DataFusion DataFrames) or a pandas
            DataFrame; streamed, so a reader larger than memory is fine.
        overwrite: end every row live before (``INSERT OVERWRITE``).
        expected_table_id: the id of the table the caller resolved; a table replaced
            since then is a ``CommitConflictError``.

    Returns:
        The new snapshot id (the latest one, unchanged, when there was nothing to write).
    """
    _require_writable(lake)
    target = _existing_target(lake, schema, table)
    base_id = expected_table_id if expected_table_id is not None else target.table_id
    request = TableCommit(
        schema_name=target.schema_name,
        table_name=target.table_name,
        base_snapshot=target.snapshot,
        table_id=base_id,
        files=(),
        column_types=_leaf_types(target.columns),
        overwrite=overwrite,
        partition_id=target.partitioning.partition_id if target.partitioning else None,
        options=options or CommitOptions(),
    )
    return _write_and_commit(lake, target, data, request)


def create_table(
    lake: Lake,
    schema: str,
    table: str,
    schema_or_data,
    *,
    partitioned_by: Sequence[str] = (),
    options: CommitOptions | None = None,
) -> int:
    """Create ``schema.table`` with the columns of an Arrow schema, or with the columns
    and rows of data (``CREATE TABLE AS``: one snapshot holds both), partitioned by
    ``partitioned_by`` (``["region", "year(day)"]``: DuckDB's ``PARTITIONED BY`` keys).
    Returns the new snapshot id."""
    _require_writable(lake)
    if isinstance(schema_or_data, pa.Schema):
        arrow_schema, data = schema_or_data, None
    else:
        data = as_arrow(schema_or_data, f"table {schema}.{table}")
        arrow_schema = data.schema
    new_columns = columns_for_schema(arrow_schema, f"{schema}.{table}")
    # (DuckDB gives every new column, nested or not, its column id as column_order)
    rows = [
        NewColumn(spec.column_id, spec.name, spec.type_name, parent, spec.column_id)
        for column in new_columns
        for spec, parent in column.walk()
    ]
    table_uuid = uuid7()
    path = f"{table}/" if _PLAIN_NAME.match(table) else f"{table_uuid}/"
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
        latest = metadata.latest_snapshot(session).snapshot_id
        schemas = {s.schema_name: s for s in metadata.list_schemas(session, latest)}
        entry = schemas.get(schema)
        schema_dir = (
            join_path(lake.data_path(settings), entry.path, entry.path_is_relative)
            if entry is not None
            else lake.data_path(settings)  # the commit names the missing schema
        )
        target_size = _target_file_size(session, settings, None)
    columns = build_column_tree(
        _ColumnRow(c.column_id, c.name, c.type_name, c.parent_column, c.column_order) for c in rows
    )
    keys = partition_keys(partitioned_by, columns, f"{schema}.{table}")
    spec = PartitionSpec(-1, keys) if keys else None  # its id is given at commit
    target = _Target(
        latest, schema, table, None, join_path(schema_dir, path, True), columns, target_size, spec
    )
    request = TableCommit(
        schema_name=schema,
        table_name=table,
        base_snapshot=latest,
        table_id=None,
        files=(),
        column_types=_leaf_types(columns),
        new_table=NewTable(
            table_uuid, path, tuple(rows), tuple((k.column_id, k.transform) for k in keys)
        ),
        options=options or CommitOptions(),
    )
    return _write_and_commit(lake, target, data, request)


@dataclass(frozen=True, slots=True)
class _ColumnRow:
    column_id: int
    column_name: str
    column_type: str
    parent_column: int | None
    column_order: int
    initial_default: str | None = None


def _write_and_commit(lake: Lake, target: _Target, data, request: TableCommit) -> int:
    description = f"table {target.schema_name}.{target.table_name} of {lake.description}"
    writer = DataFileWriter(
        target.directory,
        target.columns,
        lake.storage,
        target_file_size=target.target_file_size,
        description=description,
        partitioning=target.partitioning,
    )
    name = f"{target.schema_name}.{target.table_name}"
    try:
        if data is not None:
            for rows in _chunks(batches_of(data, description)):
                writer.write(conform(rows, writer.schema, name))
        written = writer.close()
        files = tuple(f.data_file for f in written)
        request = replace(request, files=files)
        return commit(lake.backend, request)
    except BaseException as exc:
        orphans = writer.discard()
        if orphans and isinstance(exc, DuckLakeError):
            exc.add_note(
                "these files were written but could not be deleted; no snapshot refers to "
                "them (ducklake_delete_orphaned_files removes them): " + ", ".join(orphans)
            )
        raise


def _chunks(batches) -> Iterator[pa.Table]:
    """The batches as tables of about a row group each: the rows are cast to the table's
    types once per chunk, not once per (often 8,192-row) batch."""
    held, rows = [], 0
    for batch in batches:
        held.append(batch)
        rows += batch.num_rows
        if rows >= ROW_GROUP_ROWS:
            yield pa.Table.from_batches(held)
            held, rows = [], 0
    if held:
        yield pa.Table.from_batches(held)


def _require_writable(lake: Lake) -> None:
    if lake.pinned:
        raise CatalogReadOnlyError(
            f"{lake.description} was opened pinned to a snapshot (snapshot= or "
            "snapshot_time=), which is read-only; open it without a pin to write"
        )


def _existing_target(lake: Lake, schema: str, table: str) -> _Target:
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
        latest = metadata.latest_snapshot(session).snapshot_id
        entry = require_table(session, lake.description, latest, schema, table)
        entries = metadata.read_columns(session, entry.table_id, latest)
        columns = build_column_tree(entries)
        description = f"{lake.description}: table {entry.schema_name}.{entry.table_name}"
        spec = read_partition_spec(session, entry.table_id, latest, columns, description)
        target_size = _target_file_size(session, settings, entry.table_id)
        directory = table_directory(lake.data_path(settings), entry)
    return _Target(
        latest,
        entry.schema_name,
        entry.table_name,
        entry.table_id,
        directory,
        columns,
        target_size,
        spec,
    )


def _target_file_size(session, settings: Mapping[str, str], table_id: int | None) -> int:
    """The lake's ``target_file_size`` (a table's own setting first), in bytes."""
    text = settings.get("target_file_size")
    if table_id is not None:
        rows = session.rows(
            "SELECT value FROM ducklake_metadata WHERE key = 'target_file_size' AND "
            "scope = 'table' AND scope_id = ?",
            [table_id],
        )
        if rows:
            text = rows[0][0]
    match = _SIZE.match(text or "")
    if not match:
        return DEFAULT_TARGET_FILE_SIZE
    unit = (match.group(2) or "").lower()
    return max(int(float(match.group(1)) * _UNITS.get(unit, 1)), 1)


def _leaf_types(columns) -> dict[int, str]:
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
