"""The catalog's read API: the metadata queries of the DuckLake read path (steps 0-12).

Other packages read a catalog through this module only (``from ..catalog import
metadata``); it gathers the functions they call from the private modules that implement
them, one job each:

* ``_settings``: step 0, the global settings and the format-version check;
* ``_names``: snapshots, schemas, tables, views and columns (steps 1-4, 12);
* ``_table_files``: a table's files at a snapshot (steps 5-11), read in full, cut by the
  query's bounds or refreshed from the previous lake version;
* ``_file_list``, ``_file_details``, ``_refresh``, ``_file_cut``: what it builds on;
* ``_write_reads``, ``_history``: what writers and streams read beside it (a table's own
  settings, its live partitioning, the files each snapshot added);
* ``_flush_reads``: what a flush of inlined data reads (every inlined row, deleted ones
  too, and the positions deleted through the catalog).

Every function takes an open :class:`MetadataSession` so that all reads of one query share
one transaction. The SQL is plain and dialect neutral (``_sql``); all values are bound
parameters.
"""

from __future__ import annotations

from ._file_details import holds_merged_rows, inlined_insert_snapshots
from ._flush_reads import (
    DeletedPositions,
    InlinedDeletions,
    InlinedRows,
    LiveDeleteFile,
    has_sort_keys,
    inlined_deletions_to_flush,
    inlined_rows_to_flush,
)
from ._history import files_added_per_snapshot
from ._names import (
    columns_of,
    find_table,
    latest_snapshot,
    list_schemas,
    list_snapshots,
    list_tables,
    list_views,
    nested_schema_names,
    read_columns,
    snapshot_at_time,
    snapshot_by_id,
    table_names_of,
    top_level_schemas,
)
from ._settings import SUPPORTED_VERSIONS, read_settings
from ._table_files import file_summary_of, read_table_files
from ._write_reads import (
    column_defaults,
    live_partition_columns,
    scoped_setting,
    table_setting,
)

__all__ = [
    "SUPPORTED_VERSIONS",
    "DeletedPositions",
    "InlinedDeletions",
    "InlinedRows",
    "LiveDeleteFile",
    "column_defaults",
    "columns_of",
    "file_summary_of",
    "files_added_per_snapshot",
    "find_table",
    "has_sort_keys",
    "holds_merged_rows",
    "inlined_deletions_to_flush",
    "inlined_insert_snapshots",
    "inlined_rows_to_flush",
    "latest_snapshot",
    "list_schemas",
    "list_snapshots",
    "list_tables",
    "list_views",
    "live_partition_columns",
    "nested_schema_names",
    "read_columns",
    "read_settings",
    "read_table_files",
    "scoped_setting",
    "snapshot_at_time",
    "snapshot_by_id",
    "table_names_of",
    "table_setting",
    "top_level_schemas",
]
