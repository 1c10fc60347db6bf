"""Where each requested table column comes from in one data file, and its conversion.

A data file may predate renames, drops, type widening or added columns, may come from
``ducklake_add_data_files`` (columns found through the catalog's name mapping, partition
values from hive paths), or may be a merged/flushed file with per-row snapshot ids and
embedded row ids. :func:`file_columns` resolves all of that once per file into a
:class:`FileColumns`, which then turns decoded batches into table-typed arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from ..catalog import ColumnSpec
from ..errors import (
    DataFileCorruptError,
    DataFileError,
    UnsupportedFeatureError,
    UnsupportedTypeError,
)
from ..scan import DataFileTask, conform, default_array, field_id, with_field_id
from ._file_checks import legacy_positional
from ._request import ReadRequest

__all__ = [
    "ROW_ID_FIELD_ID",
    "SNAPSHOT_FIELD_ID",
    "FileColumns",
    "file_columns",
    "physical_fields",
]

SNAPSHOT_FIELD_ID = 2147483539
ROW_ID_FIELD_ID = 2147483540


@dataclass(frozen=True)
class FileColumns:
    """Where each requested table column comes from in one data file.

    Attributes:
        sources: column id -> physical field (None: missing, filled with default/constant).
        snapshot_field: per-row snapshot ids of merged/flushed files (rows of later
            snapshots are dropped).
        row_id_field: embedded row ids (change feed), else computed from row_id_start.
        partition_values: hive partition values of name-mapped files.
    """

    task: DataFileTask
    request: ReadRequest
    what: str
    sources: dict
    snapshot_field: pa.Field | None
    row_id_field: pa.Field | None
    partition_values: dict

    def physical(self, columns) -> list[str]:
        """Physical column names holding ``columns`` (table columns)."""
        names = [self.sources[c.column_id].name for c in columns if self.sources[c.column_id]]
        return list(dict.fromkeys(names))

    def arrays(self, batch, columns, length: int) -> list[pa.Array]:
        """``columns`` in the table types, from ``batch`` (physical names) or defaults."""
        out = []
        for column in columns:
            source = self.sources[column.column_id]
            if source is not None:
                out.append(_convert(batch.column(source.name), source, column, self.what))
            elif column.name in self.partition_values:
                out.append(_constant(self.partition_values[column.name], column, length))
            else:
                out.append(self._default(column, length))
        return out

    def _default(self, column: ColumnSpec, length: int) -> pa.Array:
        try:
            return default_array(column, length)
        except UnsupportedTypeError as exc:  # say which file needed the default
            raise UnsupportedTypeError(f"{self.what}: {exc}") from exc

    def row_ids(self, batch, offset: int, length: int) -> pa.Array:
        return _row_ids(batch, self.row_id_field, self.task, offset, length, self.what)


def file_columns(
    physical: pa.Schema, task: DataFileTask, request: ReadRequest, what: str
) -> FileColumns:
    """Resolve the requested columns against a file's physical schema (see module doc)."""
    by_id = {field_id(f): f for f in physical}
    return FileColumns(
        task=task,
        request=request,
        what=what,
        sources={c.column_id: by_id.get(c.column_id) for c in request.columns},
        snapshot_field=by_id.get(SNAPSHOT_FIELD_ID),
        row_id_field=by_id.get(ROW_ID_FIELD_ID) if request.with_row_ids else None,
        partition_values=_mapped_partitions(task, request),
    )


def physical_fields(
    schema: pa.Schema, task: DataFileTask, request: ReadRequest, metadata, what: str
) -> pa.Schema:
    """The file schema annotated with field ids: from the name mapping, if any, or by
    position for a file DuckDB reads by position (``_file_checks.legacy_positional``).

    A file without field ids that is neither never gets here: ``_file_checks`` refuses it.
    """
    if task.name_mapping is not None:
        return _apply_name_mapping(schema, task.name_mapping)
    if legacy_positional(task, metadata, schema):
        return _by_position(schema, request, what)
    return schema


def _by_position(schema: pa.Schema, request: ReadRequest, what: str) -> pa.Schema:
    """File column *i* takes the id of table column *i* (top level only, as in DuckDB).

    Nested columns are refused: DuckDB matches none of their fields in such a file and
    reads every field as NULL, which we do not repeat.
    """
    fields = []
    for position, field in enumerate(schema):
        if position >= len(request.table_columns):
            fields.append(field)
            continue
        column = request.table_columns[position]
        if pa.types.is_nested(column.arrow_type) and column in request.columns:
            raise UnsupportedFeatureError(
                f"{what} has no Parquet field ids and no name mapping (registered by an "
                f"older DuckLake), so its columns map onto the table's by position; the "
                f"nested column {column.name!r} ({column.type_name}) cannot be matched that "
                "way. Rewrite the table in DuckDB (e.g. CALL ducklake_rewrite_data_files) "
                "or select other columns"
            )
        fields.append(with_field_id(field, column.column_id))
    return pa.schema(fields)


def _apply_name_mapping(schema: pa.Schema, nodes) -> pa.Schema:
    children: dict[int | None, list] = {}
    for node in nodes:
        children.setdefault(node.parent_node, []).append(node)

    def annotate(field: pa.Field, level: list) -> pa.Field | None:
        match = _match_node(field.name, level)
        if match is None:
            return field
        return _annotate_children(with_field_id(field, match.target_field_id), children, match)

    return pa.schema([annotate(f, children.get(None, [])) for f in schema])


def _match_node(name: str, level: list):
    for node in level:
        if node.source_name == name:
            return node
    lowered = name.lower()
    for node in level:
        if node.source_name.lower() == lowered:
            return node
    return None


def _annotate_children(field: pa.Field, children: dict, node) -> pa.Field:
    level = children.get(node.node_id, [])
    if not level:
        return field
    t = field.type

    def sub(child: pa.Field, forced=None) -> pa.Field:
        match = forced or _match_node(child.name, level)
        if match is None:
            return child
        return _annotate_children(with_field_id(child, match.target_field_id), children, match)

    if pa.types.is_struct(t):
        t = pa.struct([sub(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_list(t):
        t = pa.list_(sub(t.value_field, level[0] if len(level) == 1 else None))
    elif pa.types.is_map(t):
        t = pa.map_(sub(t.key_field), sub(t.item_field))
    return field.with_type(t)


def _partition_value(url: str, name: str) -> str | None:
    for segment in url.split("/"):
        if segment.startswith(name + "="):
            value = unquote(segment[len(name) + 1 :])
            return None if value == "__HIVE_DEFAULT_PARTITION__" else value
    return None


def _convert(array: pa.Array, source: pa.Field, column: ColumnSpec, what: str) -> pa.Array:
    """conform() with an error that names the column instead of blaming the file."""
    try:
        return conform(array, source, column)
    except DataFileCorruptError as exc:  # e.g. a damaged VARIANT value: say which file
        raise DataFileCorruptError(f"{what}: {exc}") from exc
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise DataFileError(
            f"column {column.name!r} of {what} holds values that cannot be read as "
            f"{column.type_name} ({exc}). Select other columns, "
            "or cast the column in DuckDB"
        ) from exc


def _row_ids(batch, row_id_field, task, offset: int, length: int, what: str) -> pa.Array:
    if row_id_field is not None:
        return batch.column(row_id_field.name)
    if task.row_id_start is None:
        raise DataFileCorruptError(f"{what} has neither row_id_start nor embedded row ids")
    return pa.array(np.arange(task.row_id_start + offset, task.row_id_start + offset + length))


def _mapped_partitions(task: DataFileTask, request: ReadRequest) -> dict[str, str | None]:
    """Hive partition values of name-mapped files whose mapping marks them ``is_partition``."""
    if not task.name_mapping:
        return {}
    values = {}
    by_target = {n.target_field_id: n for n in task.name_mapping if n.is_partition}
    for column in request.columns:
        node = by_target.get(column.column_id)
        if node is not None:
            values[column.name] = _partition_value(task.file.url, node.source_name)
    return values


def _constant(text: str | None, column: ColumnSpec, length: int) -> pa.Array:
    if text is None:
        return pa.nulls(length, column.arrow_type)
    single = pa.array([text]).cast(column.arrow_type)
    return single.take(pa.array(np.zeros(length, dtype=np.int32)))
