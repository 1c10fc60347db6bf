"""Engine-neutral execution: a ``ScanPlan`` (or some of its tasks) -> Arrow batches.

Parquet readers, deletion vectors, mapping file columns to the table's columns, footers,
file checks, encrypted files, and the row diff of the change feed. Spark executors only
run ``execute_tasks``, so nothing here imports ``datafusion`` or ``pyspark``.
"""

from ._executor import execute_plan, execute_tasks, read_request

__all__ = ["execute_plan", "execute_tasks", "read_request"]
