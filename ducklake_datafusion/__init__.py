"""Query DuckLake lakes from Apache DataFusion (and hand the same scans to Spark).

    >>> from datafusion import SessionContext
    >>> from ducklake_datafusion import DuckLakeCatalog, register
    >>> ctx = SessionContext()
    >>> register(ctx, "lake", DuckLakeCatalog("lake.ducklake"))
    >>> ctx.sql("SELECT count(*) FROM lake.main.orders").show()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from .errors import DuckLakeError
from .provider import DuckLakeTable
from .scan import ScanPlan

if TYPE_CHECKING:
    from .provider import DuckLakeCatalog

__all__ = ["DuckLakeCatalog", "DuckLakeError", "DuckLakeTable", "ScanPlan", "errors", "register"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # DuckLakeCatalog subclasses datafusion's CatalogProvider; import datafusion on first use.
    if name == "DuckLakeCatalog":
        from .provider import DuckLakeCatalog

        return DuckLakeCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(ctx, name: str, lake: DuckLakeCatalog) -> DuckLakeCatalog:
    """Register ``lake`` in a DataFusion ``SessionContext`` under ``name``.

    Also registers the table functions of :mod:`ducklake_datafusion.functions`
    (``ducklake_snapshots``, ``ducklake_table_changes`` ...), which find the lake by this
    name. Returns the catalog so calls can be chained.
    """
    from .functions import register_table_functions

    ctx.register_catalog_provider(name, lake)
    register_table_functions(ctx)
    return lake
