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
from .scan import ScanPlan

if TYPE_CHECKING:
    from .provider import DuckLakeCatalog, DuckLakeTable

__all__ = ["DuckLakeCatalog", "DuckLakeError", "DuckLakeTable", "ScanPlan", "errors", "register"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # The DataFusion adapter is imported on first use: ``import ducklake_datafusion.spark``
    # (or .scan, .read) loads none of it, and DuckLakeCatalog (a subclass of datafusion's
    # CatalogProvider) imports datafusion itself.
    if name in ("DuckLakeCatalog", "DuckLakeTable"):
        from . import provider

        return getattr(provider, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(ctx, name: str, lake: DuckLakeCatalog) -> DuckLakeCatalog:
    """Register ``lake`` in a DataFusion ``SessionContext`` under ``name``.

    Also registers the table functions of :mod:`ducklake_datafusion.provider.functions`
    (``ducklake_snapshots``, ``ducklake_table_changes`` ...), which find the lake by this
    name. Returns the catalog so calls can be chained.
    """
    from .provider.functions import register as register_lake

    return register_lake(ctx, name, lake)
