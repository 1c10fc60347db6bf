"""Table maintenance, engine-neutral: what DuckDB's ``ducklake_merge_adjacent_files``,
``ducklake_rewrite_data_files``, ``ducklake_flush_inlined_data``,
``ducklake_expire_snapshots``, ``ducklake_cleanup_old_files``,
``ducklake_delete_orphaned_files`` and ``CHECKPOINT`` do, written as DuckDB writes it.

* :mod:`._groups`: which files one merge takes together (DuckDB's walk).
* :mod:`._merge`: the merged files written, committed as one snapshot (``catalog.MergeFiles``).
* :mod:`._rewrite`: files mostly deleted rewritten to their live rows (``catalog.RewriteFiles``).
* :mod:`._sources`: what both read: the tables, their sources' rows, where files go.
* :mod:`._flush`: rows inlined in the catalog written to Parquet files.
* :mod:`._checkpoint`: all of them in DuckDB's ``CHECKPOINT`` order.
* :mod:`._expire`: snapshots expired, scheduled and orphaned files deleted.
* :mod:`._operations`: the operations by name, their results as DuckDB's rows.

The engines call these: the Python API (``DuckLakeCatalog``), DataFusion SQL's ``CALL``
and Spark's procedures.
"""

from ._checkpoint import CheckpointResult, checkpoint
from ._expire import cleanup_old_files, delete_orphaned_files, expire_snapshots, interval
from ._flush import FlushResult, flush_inlined_data
from ._merge import (
    MergeResult,
    RunWrite,
    WrittenRun,
    merge_adjacent_files,
    write_run,
    write_runs_here,
)
from ._operations import OPERATIONS, Operation, split_table_argument
from ._remote_writes import gather_written, write_task
from ._rewrite import rewrite_data_files

__all__ = [
    "OPERATIONS",
    "CheckpointResult",
    "FlushResult",
    "MergeResult",
    "Operation",
    "RunWrite",
    "WrittenRun",
    "checkpoint",
    "cleanup_old_files",
    "delete_orphaned_files",
    "expire_snapshots",
    "flush_inlined_data",
    "gather_written",
    "interval",
    "merge_adjacent_files",
    "rewrite_data_files",
    "split_table_argument",
    "write_run",
    "write_runs_here",
    "write_task",
]
