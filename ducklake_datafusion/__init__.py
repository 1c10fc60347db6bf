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
    from .provider import DuckLakeCatalog, DuckLakeSessionContext, DuckLakeTable

__all__ = [
    "DuckLakeCatalog",
    "DuckLakeError",
    "DuckLakeSessionContext",
    "DuckLakeTable",
    "ScanPlan",
    "errors",
    "register",
    "sql",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    # The DataFusion adapter is imported on first use: ``import ducklake_datafusion.spark``
    # (or .scan, .read) loads none of it, and DuckLakeCatalog (a subclass of datafusion's
    # CatalogProvider) imports datafusion itself.
    if name in ("DuckLakeCatalog", "DuckLakeTable", "DuckLakeSessionContext"):
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


def sql(ctx, statement: str, **commit_options):
    """Run ``statement`` in the DataFusion session ``ctx``: ``DELETE FROM``, ``UPDATE``
    and ``MERGE INTO`` of a table of a lake registered there (:func:`register`) change its
    rows, as one new snapshot, with the conditions, values and MERGE sources evaluated by
    DataFusion in ``ctx``; ``CALL ducklake_merge_adjacent_files('lake', 't')`` and DuckDB's
    other maintenance functions run on that lake (their rows, DuckDB's columns); any other
    statement is ``ctx.sql(statement)``. Returns a
    DataFusion DataFrame (for a change: one row, ``count`` and ``snapshot_id``; a MERGE's
    ``deleted``, ``updated`` and ``inserted`` too). ``commit_options``: ``author``,
    ``commit_message``, ``commit_extra_info``.

    >>> ducklake_datafusion.sql(ctx, "DELETE FROM lake.main.t WHERE id IN (SELECT id FROM gone)")
    """
    from .provider import run_sql

    return run_sql(ctx, statement, **commit_options)
