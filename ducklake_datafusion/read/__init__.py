"""Engine-neutral execution: a ``ScanPlan`` (or some of its tasks) -> Arrow batches.

Parquet readers, deletion vectors, mapping file columns to the table's columns, footers,
file checks (``checked_file``, shared by both engines' native scans), encrypted files,
exact row counts, the plan export for engines outside Python (``export_plan``; in memory
``plan_export``) and the row diff of the change feed. Spark executors only run ``execute_tasks``, so nothing here
imports ``datafusion`` or ``pyspark``.
"""

from ._appends import InsertPlan, plan_inserts
from ._changes import differing_rows, plan_changes, step_feed, table_changes
from ._checked import CheckedFile, checked_file
from ._count import catalog_count, count_rows
from ._deletes import delete_file_positions
from ._executor import execute_plan, execute_tasks, read_request
from ._export import (
    PLAN_SCHEMA,
    PLAN_VERSION,
    PlanExport,
    PlanVersionError,
    export_bytes,
    export_plan,
    import_plan,
    plan_export,
)
from ._file_checks import check_data_file, files_unchanged, reads_by_name
from ._footers import parsed_fragment, require_regular_file
from ._layouts import FileLayout, file_layout
from ._reader import (
    FILE_ID,
    POSITION,
    ROW_ID,
    deleted_positions_of,
    open_file,
    parquet_format,
    read_data_file,
    read_error,
)

__all__ = [
    "FILE_ID",
    "PLAN_SCHEMA",
    "PLAN_VERSION",
    "POSITION",
    "ROW_ID",
    "CheckedFile",
    "FileLayout",
    "InsertPlan",
    "PlanExport",
    "PlanVersionError",
    "catalog_count",
    "check_data_file",
    "checked_file",
    "count_rows",
    "delete_file_positions",
    "deleted_positions_of",
    "differing_rows",
    "execute_plan",
    "execute_tasks",
    "export_bytes",
    "export_plan",
    "file_layout",
    "files_unchanged",
    "import_plan",
    "open_file",
    "parquet_format",
    "parsed_fragment",
    "plan_changes",
    "plan_export",
    "plan_inserts",
    "read_data_file",
    "read_error",
    "read_request",
    "reads_by_name",
    "require_regular_file",
    "step_feed",
    "table_changes",
]
