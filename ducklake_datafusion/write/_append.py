"""Writes to a lake, start to end: resolve the table, write its files, commit once.

:func:`append` (also an overwrite) and :func:`create_table` (also ``CREATE TABLE AS``)
are what every entry point calls: ``DuckLakeCatalog.create_table``,
``DuckLakeTable.append`` / ``overwrite``, and DataFusion's ``INSERT INTO`` and ``CREATE
TABLE AS``. Each plans the write from the latest snapshot (``_plan``), streams the data into
Parquet files (``_files``), and hands the files' facts to the catalog's commit protocol
(``catalog.commit``): one new snapshot, or none at all. Whatever fails
after files were written (the data, storage, the catalog, a conflict) deletes them again,
unless the commit's outcome is unknown (``_cleanup``).

Small appends are written as files too, never inlined into the catalog (both are valid
DuckLake; DuckDB inlines them when its ``data_inlining_row_limit`` allows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import pyarrow as pa

from ..catalog import CommitOptions, commit
from ..scan import Lake
from ._cleanup import after_failed_commit
from ._files import ROW_GROUP_ROWS, DataFileWriter
from ._input import as_arrow, batches_of
from ._plan import WritePlan, append_plan, create_plan
from ._types import conform

__all__ = ["append", "create_table"]


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
    plan = append_plan(
        lake,
        schema,
        table,
        overwrite=overwrite,
        expected_table_id=expected_table_id,
        options=options,
    )
    return _write_and_commit(lake, plan, data)


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
    if isinstance(schema_or_data, pa.Schema):
        arrow_schema, data = schema_or_data, None
    else:
        data = as_arrow(schema_or_data, f"table {schema}.{table}")
        arrow_schema = data.schema
    plan = create_plan(
        lake, schema, table, arrow_schema, partitioned_by=partitioned_by, options=options
    )
    return _write_and_commit(lake, plan, data)


def _write_and_commit(lake: Lake, plan: WritePlan, data) -> int:
    description = f"table {plan.name} of {lake.description}"
    writer = DataFileWriter(
        plan.directory,
        plan.columns,
        lake.storage,
        target_file_size=plan.target_file_size,
        description=description,
        partitioning=plan.partitioning,
    )
    try:
        if data is not None:
            for rows in _chunks(batches_of(data, description)):
                writer.write(conform(rows, writer.schema, plan.name, _defaults(plan)))
        written = writer.close()
        request = replace(plan.request, files=tuple(f.data_file for f in written))
        return commit(lake.backend, request)
    except BaseException as exc:
        after_failed_commit(exc, [f.url for f in writer.written], writer.discard)
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


def _defaults(plan: WritePlan) -> dict:
    """``{column name: (ColumnSpec, text, kind)}`` of the plan's columns with a default."""
    by_id = {c.column_id: c for c in plan.columns}
    return {by_id[i].name: (by_id[i], text, kind) for i, text, kind in plan.defaults if i in by_id}
