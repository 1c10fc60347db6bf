"""Table maintenance, engine-neutral: what DuckDB's ``ducklake_merge_adjacent_files``,
``ducklake_expire_snapshots``, ``ducklake_cleanup_old_files`` and
``ducklake_delete_orphaned_files`` do, written as DuckDB writes it.

* :mod:`._groups`: which files one merge takes together (DuckDB's walk).
* :mod:`._merge`: the merged files written, committed as one snapshot (``catalog.MergeFiles``).
* :mod:`._rewrite`: files mostly deleted rewritten to their live rows (``catalog.RewriteFiles``).
* :mod:`._sources`: what both read: the tables, their sources' rows, where files go.
* :mod:`._expire`: snapshots expired, scheduled and orphaned files deleted.

The engines call these: the Python API (``DuckLakeCatalog``), DataFusion SQL's ``CALL``
and Spark's procedures.
"""

from ._expire import cleanup_old_files, delete_orphaned_files, expire_snapshots, interval
from ._merge import MergeResult, merge_adjacent_files
from ._rewrite import rewrite_data_files

__all__ = [
    "MergeResult",
    "cleanup_old_files",
    "delete_orphaned_files",
    "expire_snapshots",
    "interval",
    "merge_adjacent_files",
    "rewrite_data_files",
]
