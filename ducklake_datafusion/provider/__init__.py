"""Planning and execution: metadata -> ScanPlan -> Arrow batches, and the DataFusion adapter.

The DataFusion catalog providers are imported on first use, so Spark executors (which only
run ``execute_tasks``) never pay for importing ``datafusion``.
"""

from ._dataset import DuckLakeDataset
from ._executor import execute_plan, execute_tasks, read_request
from ._plan import (
    DataFileTask,
    DeleteFile,
    DeleteSource,
    FileRef,
    InlinedRowsTask,
    PlanStats,
    ScanPlan,
    ScanTask,
)
from ._table import DuckLakeTable

__all__ = [
    "DataFileTask",
    "DeleteFile",
    "DeleteSource",
    "DuckLakeCatalog",
    "DuckLakeDataset",
    "DuckLakeSchema",
    "DuckLakeTable",
    "FileRef",
    "InlinedRowsTask",
    "PlanStats",
    "ScanPlan",
    "ScanTask",
    "execute_plan",
    "execute_tasks",
    "read_request",
]


def __getattr__(name: str):
    if name in ("DuckLakeCatalog", "DuckLakeSchema"):
        from . import _catalog_provider

        return getattr(_catalog_provider, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
