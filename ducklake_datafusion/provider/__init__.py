"""Planning and execution: metadata -> ScanPlan -> Arrow batches, and the DataFusion adapter."""

from ._catalog_provider import DuckLakeCatalog, DuckLakeSchema
from ._dataset import DuckLakeDataset
from ._executor import execute_plan, execute_tasks, read_request
from ._plan import (
    DataFileTask,
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
