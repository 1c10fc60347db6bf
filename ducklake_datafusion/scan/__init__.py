"""Engine-neutral planning: catalog metadata -> ``ScanPlan`` (plain data, no engine).

``Lake``/``LakeTable`` open a lake, settle the snapshot and plan scans; the planner prunes
files with catalog statistics and decodes filters; time travel and table lookup resolve
names. Inlined rows are turned into Arrow here, at planning time, so that a plan carries
its rows (hence the schema-mapping helpers they need live here too). Nothing here imports
``datafusion`` or ``pyspark``; ``read/`` executes the plans and the engines adapt them.
"""

from ._arrays import zero_based
from ._hugeint import WIDE_INTEGER_TYPE
from ._lake import Lake, LakeTable
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

__all__ = [
    "WIDE_INTEGER_TYPE",
    "DataFileTask",
    "DeleteFile",
    "DeleteSource",
    "FileRef",
    "InlinedRowsTask",
    "Lake",
    "LakeTable",
    "PlanStats",
    "ScanPlan",
    "ScanTask",
    "balanced_groups",
    "zero_based",
]
