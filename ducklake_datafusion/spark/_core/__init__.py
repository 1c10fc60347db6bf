"""The Spark adapter's kernel: what the entry points and every route below them share.

Spark's types and Arrow batches (``_types``, ``_arrow``), the data source's options
(``_options``), Spark's filters as the scan's ``Filter`` (``_filters``: the rules every
form of a Spark filter is translated by, in one step), a local session's frames
(``_local``) and the pyspark release checks (``_versions``). It sits below ``spark``'s
subpackages (``parquet``, ``source``, ``changes``, ``planner``) and its entry points:
a parent imports its children and never the reverse, so the routes import this kernel,
never the package above them.
"""

from ._arrow import (
    INTERVAL_STRUCT,
    check_castable,
    interval_struct,
    to_spark_batch,
    to_spark_table,
)
from ._filters import (
    SPARK_FILTERS,
    FilterColumn,
    combine,
    condition_filter,
    leaf_filter,
)
from ._local import (
    local_frame,
)
from ._options import (
    ALREADY_READ_OPTION,
    CHANGE_KEYS,
    DEFAULT_PARTITION_BYTES,
    GUARD_COLUMN,
    GUARD_OPTION,
    SOURCE_KEYS,
    AlreadyRead,
    OpenTable,
    SourceOptions,
    guard_field,
    option_text,
    quoted_table_name,
    snapshot_option,
    snapshot_time_option,
    split_table_name,
)
from ._types import (
    schema_from_ddl,
    spark_arrow_field,
    spark_arrow_type,
    spark_schema,
    spark_type,
)
from ._versions import (
    DATA_SOURCE_PYSPARK,
    OLDEST_PYSPARK,
    has_data_source,
    is_connect,
    pyspark_at_least,
    pyspark_version,
    require_data_source,
    require_supported_pyspark,
)

__all__ = [
    "ALREADY_READ_OPTION",
    "CHANGE_KEYS",
    "DATA_SOURCE_PYSPARK",
    "DEFAULT_PARTITION_BYTES",
    "GUARD_COLUMN",
    "GUARD_OPTION",
    "INTERVAL_STRUCT",
    "OLDEST_PYSPARK",
    "SOURCE_KEYS",
    "SPARK_FILTERS",
    "AlreadyRead",
    "FilterColumn",
    "OpenTable",
    "SourceOptions",
    "check_castable",
    "combine",
    "condition_filter",
    "guard_field",
    "has_data_source",
    "interval_struct",
    "is_connect",
    "leaf_filter",
    "local_frame",
    "option_text",
    "pyspark_at_least",
    "pyspark_version",
    "quoted_table_name",
    "require_data_source",
    "require_supported_pyspark",
    "schema_from_ddl",
    "snapshot_option",
    "snapshot_time_option",
    "spark_arrow_field",
    "spark_arrow_type",
    "spark_schema",
    "spark_type",
    "split_table_name",
    "to_spark_batch",
    "to_spark_table",
]
