"""Engine-neutral planning: catalog metadata -> ``ScanPlan`` (plain data, no engine).

``Lake``/``LakeTable`` open a lake, settle the snapshot and plan scans; the planner prunes
files with catalog statistics; time travel and table lookup resolve
names. Inlined rows are turned into Arrow here, at planning time, so that a plan carries
its rows (hence the schema-mapping helpers they need live here too). Nothing here imports
``datafusion`` or ``pyspark``; ``read/`` executes the plans and the engines adapt them.
"""

from ._arrays import zero_based
from ._changes import (
    CHANGE_TYPES,
    ChangePlan,
    ChangeStep,
    change_schema,
    change_steps,
    resolve_bound,
)
from ._conform import conform, conform_duckdb_export, default_array, field_id, with_field_id
from ._count import RowCount
from ._filter import (
    COMPARISONS,
    And,
    Column,
    Compare,
    Filter,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    StringMatch,
    all_of,
    bind,
    columns_of,
)
from ._filter_arrow import literal_of, scalar_of, to_expression
from ._hugeint import WIDE_INTEGER_TYPE
from ._inlined import conform_inlined_rows, refusal
from ._lake import Lake, LakeTable
from ._lookup import find_table, require_table
from ._plan import (
    DataFileTask,
    DeleteFile,
    DeleteSource,
    FileRef,
    InlinedRowsTask,
    PlanStats,
    ScanPlan,
    ScanTask,
    balanced_groups,
)
from ._planner import build_scan_plan, kept_tasks, table_directory
from ._pruning import FilePruner
from ._timetravel import (
    SnapshotRef,
    parse_snapshot_ref,
    resolve_snapshot_ref,
    snapshot_bounds,
    split_table_suffix,
)
from ._whole_files import WholeFileMatch, whole_file_match

__all__ = [
    "CHANGE_TYPES",
    "COMPARISONS",
    "WIDE_INTEGER_TYPE",
    "And",
    "ChangePlan",
    "ChangeStep",
    "Column",
    "Compare",
    "DataFileTask",
    "DeleteFile",
    "DeleteSource",
    "FilePruner",
    "FileRef",
    "Filter",
    "In",
    "InlinedRowsTask",
    "IsNull",
    "Lake",
    "LakeTable",
    "Literal",
    "Not",
    "Or",
    "PlanStats",
    "RowCount",
    "ScanPlan",
    "ScanTask",
    "SnapshotRef",
    "StringMatch",
    "WholeFileMatch",
    "all_of",
    "balanced_groups",
    "bind",
    "build_scan_plan",
    "change_schema",
    "change_steps",
    "columns_of",
    "conform",
    "conform_duckdb_export",
    "conform_inlined_rows",
    "default_array",
    "field_id",
    "find_table",
    "kept_tasks",
    "literal_of",
    "parse_snapshot_ref",
    "refusal",
    "require_table",
    "resolve_bound",
    "resolve_snapshot_ref",
    "scalar_of",
    "snapshot_bounds",
    "split_table_suffix",
    "table_directory",
    "to_expression",
    "whole_file_match",
    "with_field_id",
    "zero_based",
]
