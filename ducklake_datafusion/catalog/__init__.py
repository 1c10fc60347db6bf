"""Catalog access: the only package that runs SQL against a DuckLake catalog database.

The read queries are the public module :mod:`.metadata`; this namespace also exports the
entries they return and the other names the engine-side packages use (the change
history, change tokens, the catalog cut, the inlined system columns, and the DuckLake
type mapping every layer reads columns with: ``ColumnSpec``, ``arrow_type_for``), so that those
import them from ``ducklake_datafusion.catalog`` instead of its private modules.
"""

from . import metadata
from ._backend import MetadataBackend, MetadataSession, open_backend
from ._change_display import changes_map, duckdb_identifier, token_display
from ._change_tokens import ROW_CHANGE_KINDS, ChangeToken, split_quoted_names
from ._comments import table_column_comments, view_column_comments
from ._commit import AlreadyCommitted, commit, transaction_of
from ._commit_request import (
    CommitOptions,
    FileColumnStats,
    NewColumn,
    NewDataFile,
    NewTable,
    TableCommit,
)
from ._compaction import CompactionCandidate, compaction_candidates
from ._expire import (
    KnownFile,
    ScheduledFile,
    expire_snapshot_rows,
    forget_scheduled,
    known_files,
    scheduled_files,
)
from ._file_cut import CUT_TYPES, BeganCut, ColumnBound, DeletedCut, StatsCut, bounded
from ._flush_rows import drop_emptied_inlined_tables
from ._format import INLINED_SYSTEM_COLUMNS
from ._history import (
    SnapshotRecord,
    list_file_rows,
    list_snapshot_records,
    table_sizes,
)
from ._models import (
    ColumnEntry,
    DataFileEntry,
    NameMappingNode,
    SnapshotInfo,
    TableEntry,
    TableFiles,
    ViewEntry,
)
from ._names import table_by_id
from ._transaction import (
    AddDataFiles,
    CreateTable,
    EndDataFiles,
    EndInlinedRows,
    EndPartitions,
    EndTableRows,
    FilesUnchanged,
    FlushedFile,
    FlushedInlinedTable,
    FlushInlined,
    MergeFiles,
    NewDeleteFile,
    NoRowsInserted,
    NotCommittedBefore,
    RecordStreamBatch,
    RewriteFiles,
    RowsUnchanged,
    SetDeleteFile,
    SnapshotMoved,
    TableRef,
    TableUnchanged,
    Transaction,
)
from ._types import (
    ColumnSpec,
    arrow_schema,
    arrow_type_for,
    build_column_tree,
    duckdb_type_for,
)

__all__ = [
    "CUT_TYPES",
    "INLINED_SYSTEM_COLUMNS",
    "ROW_CHANGE_KINDS",
    "AddDataFiles",
    "AlreadyCommitted",
    "BeganCut",
    "ChangeToken",
    "ColumnBound",
    "ColumnEntry",
    "ColumnSpec",
    "CommitOptions",
    "CompactionCandidate",
    "CreateTable",
    "DataFileEntry",
    "DeletedCut",
    "EndDataFiles",
    "EndInlinedRows",
    "EndPartitions",
    "EndTableRows",
    "FileColumnStats",
    "FilesUnchanged",
    "FlushInlined",
    "FlushedFile",
    "FlushedInlinedTable",
    "KnownFile",
    "MergeFiles",
    "MetadataBackend",
    "MetadataSession",
    "NameMappingNode",
    "NewColumn",
    "NewDataFile",
    "NewDeleteFile",
    "NewTable",
    "NoRowsInserted",
    "NotCommittedBefore",
    "RecordStreamBatch",
    "RewriteFiles",
    "RowsUnchanged",
    "ScheduledFile",
    "SetDeleteFile",
    "SnapshotInfo",
    "SnapshotMoved",
    "SnapshotRecord",
    "StatsCut",
    "TableCommit",
    "TableEntry",
    "TableFiles",
    "TableRef",
    "TableUnchanged",
    "Transaction",
    "ViewEntry",
    "arrow_schema",
    "arrow_type_for",
    "bounded",
    "build_column_tree",
    "changes_map",
    "commit",
    "compaction_candidates",
    "drop_emptied_inlined_tables",
    "duckdb_identifier",
    "duckdb_type_for",
    "expire_snapshot_rows",
    "forget_scheduled",
    "known_files",
    "list_file_rows",
    "list_snapshot_records",
    "metadata",
    "open_backend",
    "scheduled_files",
    "split_quoted_names",
    "table_by_id",
    "table_column_comments",
    "table_sizes",
    "token_display",
    "transaction_of",
    "view_column_comments",
]
