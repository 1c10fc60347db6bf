"""A DataFusion ``SessionContext`` whose ``sql()`` also changes rows of lake tables.

DataFusion 55 cannot hand ``DELETE``, ``UPDATE`` or ``MERGE`` to a provider across its FFI
(apache/datafusion#22328), so ``ctx.sql("DELETE FROM lake.main.t ...")`` fails in a plain
session. :class:`DuckLakeSessionContext` is the same session with one difference: its
``sql()`` sends those statements on tables of a lake registered in it to
``ducklake_datafusion.sql`` (the row-change core) and every other statement, unchanged,
to DataFusion.
"""

from __future__ import annotations

import datafusion

from ._ddl_sql import is_schema_change
from ._dml_sql import is_row_change, sql

__all__ = ["DuckLakeSessionContext"]


class DuckLakeSessionContext(datafusion.SessionContext):
    """``datafusion.SessionContext`` that also runs ``DELETE``, ``UPDATE`` and ``MERGE
    INTO`` on lake tables, and ``ALTER TABLE``, ``DROP TABLE``, ``CREATE``/``DROP
    SCHEMA`` on its lakes (``ducklake_datafusion.register(ctx, "lake", catalog)``)."""

    def sql(self, query: str, *args, **kwargs):
        """As ``SessionContext.sql``; a row change of a lake table returns its one-row
        result (``count``, ``snapshot_id``) as a DataFrame."""
        if not args and not kwargs and (is_row_change(query) or is_schema_change(query)):
            return sql(self, query)
        return super().sql(query, *args, **kwargs)
