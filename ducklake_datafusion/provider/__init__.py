"""The DataFusion adapter: catalog, schema and table providers over a lake.

Planning lives in ``scan/`` and execution in ``read/``; this package only adapts them to
DataFusion (catalog providers, the ``pyarrow.dataset`` adapter, views, lake-info tables,
the row-changing statements: ``run_sql``).
The catalog providers are imported on first use, so importing ``DuckLakeTable`` does
not import ``datafusion``.
"""

from ._dataset import DuckLakeDataset
from ._dml_sql import sql as run_sql
from ._lake_info import list_files_table, snapshots_table, table_info_table
from ._table import DuckLakeTable

__all__ = [
    "DuckLakeCatalog",
    "DuckLakeDataset",
    "DuckLakeSchema",
    "DuckLakeSessionContext",
    "DuckLakeTable",
    "list_files_table",
    "run_sql",
    "snapshots_table",
    "table_info_table",
]


def __getattr__(name: str):
    if name in ("DuckLakeCatalog", "DuckLakeSchema"):
        from . import _catalog_provider

        return getattr(_catalog_provider, name)
    if name == "DuckLakeSessionContext":
        from ._session import DuckLakeSessionContext

        return DuckLakeSessionContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
