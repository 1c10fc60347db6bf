"""Engine-neutral writing: Arrow data -> Parquet files as DuckDB writes them -> one commit.

* :mod:`._types`: Arrow types <-> DuckLake column types, the files' schema (field ids).
* :mod:`._stats`: per-column bounds in the catalog's text encoding.
* :mod:`._files`: the Parquet files of one commit and their facts.
* :mod:`._input`: what a user may hand to a write, as a stream of record batches.
* :mod:`._plan`: where a write goes and its commit request, read once when it starts.
* :mod:`._footers`: a file another engine wrote (Spark), described from its footer.
* :mod:`._append`: plan, write, commit (``catalog.commit``); delete the files if not.
* :mod:`._delete_files`: positional delete files as DuckDB writes them.
* :mod:`._row_changes`: rows deleted and added per table, as one snapshot's actions.
* :mod:`._schema_changes`: ALTER, RENAME, DROP of tables, CREATE/DROP of schemas.
* :mod:`._cleanup`: what a failed write does with its files (the one rule).

``maintain/`` writes merged and flushed files with the same writers (``DataFileWriter``,
``write_delete_file``).

The engines (``provider/`` for DataFusion, the Python API) only hand batches here;
Spark's executors write files themselves and hand their footers to ``commit_files``.
"""

from ._append import append, create_table
from ._cleanup import after_failed_commit
from ._delete_files import WrittenDeleteFile, write_delete_file
from ._evolve import SCHEMA_MODES, add_missing_columns, column_type_of
from ._files import (
    DEFAULT_TARGET_FILE_SIZE,
    ROW_GROUP_ROWS,
    ROW_ID_FIELD,
    SNAPSHOT_ID_FIELD,
    DataFileWriter,
    WrittenFile,
    delete_files,
)
from ._footers import data_file_from_footer
from ._input import as_arrow
from ._partitions import CALENDAR, EPOCH, PartitionSpec, read_partition_spec
from ._partitions import split as split_partitions
from ._plan import (
    StreamBatch,
    WritePlan,
    append_plan,
    commit_files,
    create_plan,
    leaf_types,
    parse_file_size,
    require_writable,
)
from ._row_changes import ChangeResult, TableChange, commit_changes
from ._schema_changes import (
    alter_table,
    create_schema,
    drop_schema,
    drop_table,
    rename_table,
    set_comment,
    set_partitioned_by,
)
from ._types import columns_for_schema, conform, file_schema

__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "ROW_GROUP_ROWS",
    "ROW_ID_FIELD",
    "SCHEMA_MODES",
    "SNAPSHOT_ID_FIELD",
    "TEMPORAL_TRANSFORMS",
    "ChangeResult",
    "DataFileWriter",
    "PartitionSpec",
    "StreamBatch",
    "TableChange",
    "WritePlan",
    "WrittenDeleteFile",
    "WrittenFile",
    "add_missing_columns",
    "after_failed_commit",
    "alter_table",
    "append",
    "append_plan",
    "as_arrow",
    "column_type_of",
    "columns_for_schema",
    "commit_changes",
    "commit_files",
    "conform",
    "create_plan",
    "create_schema",
    "create_table",
    "data_file_from_footer",
    "delete_files",
    "drop_schema",
    "drop_table",
    "file_schema",
    "leaf_types",
    "parse_file_size",
    "read_partition_spec",
    "rename_table",
    "require_writable",
    "set_comment",
    "set_partitioned_by",
    "split_partitions",
    "write_delete_file",
]

# The partition transforms of a date or time: DuckDB 1.0's calendar parts, 1.1's epoch units.
TEMPORAL_TRANSFORMS = (*CALENDAR, *EPOCH)
