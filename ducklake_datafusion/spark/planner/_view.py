"""A view of the lake as the JVM's view resolution asks for it (``view`` request).

Spark resolves a DataSourceV2 catalog's relations as tables only; the package's session
extension (``DuckLakeViews`` in the jar) asks this request when a name is not a table.
The answer is the view's query respelled for Spark (``_spark_sql``), its column aliases
and the snapshot it was read at: the JVM reads every table of the query at that same
snapshot, so a view and its tables are one consistent state of the lake, also under
``VERSION AS OF`` / ``TIMESTAMP AS OF`` and a pinned catalog.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...catalog import metadata
from ...errors import TableNotFoundError, UnsupportedFeatureError
from ...scan import Lake, resolve_snapshot_ref
from ._spark_sql import CATALOG_MARKER, spark_sql
from ._table import snapshot_ref

__all__ = ["table_names", "view_names", "view_response"]


def table_names(lake: Lake, namespace: str) -> list[str]:
    """The tables of ``namespace`` at the lake's snapshot (``SHOW TABLES``)."""
    return _names(
        lake,
        namespace,
        lambda s, snap: [t.table_name for t in metadata.list_tables(s, snap, namespace)],
    )


def view_names(lake: Lake, namespace: str) -> list[str]:
    """The views of ``namespace`` at the lake's snapshot (``SHOW VIEWS``)."""
    return _names(
        lake,
        namespace,
        lambda s, snap: [v.view_name for v in metadata.list_views(s, snap, namespace)],
    )


def _names(lake: Lake, namespace: str, listing) -> list[str]:
    """``listing(session, snapshot)`` at the lake's snapshot; raises
    ``TableNotFoundError`` for a schema the lake does not have there."""
    with lake.backend.session() as session:
        metadata.read_settings(session, lake.description)
        snapshot = lake.resolve_snapshot(session).snapshot_id
        if namespace not in {s.schema_name for s in metadata.list_schemas(session, snapshot)}:
            raise TableNotFoundError(
                f"{lake.description} has no schema {namespace!r} at snapshot {snapshot}"
            )
        return listing(session, snapshot)


def view_response(lake: Lake, request: Mapping) -> dict:
    """``{view: {...}, snapshot}``, or ``{view: None, snapshot}`` when the schema has no
    view of that name at the snapshot (the name is then neither table nor view)."""
    namespace, name = str(request["namespace"]), str(request["name"])
    ref = snapshot_ref(request, f"view {namespace}.{name}")
    with lake.backend.session() as session:
        metadata.read_settings(session, lake.description)
        if ref is None:
            snapshot = lake.resolve_snapshot(session).snapshot_id
        else:
            snapshot = resolve_snapshot_ref(session, ref, lake.description).snapshot_id
        views = metadata.list_views(session, snapshot, namespace)
    found = [v for v in views if v.view_name == name] or [
        v for v in views if v.view_name.lower() == name.lower()
    ]
    if len(found) != 1:
        return {"view": None, "snapshot": snapshot}
    view = found[0]
    label = f"{lake.description}: view {view.schema_name}.{view.view_name} at snapshot {snapshot}"
    if view.dialect != "duckdb":
        raise UnsupportedFeatureError(
            f"{label} is written in the {view.dialect!r} SQL dialect, which Spark does not "
            f"run. Its SQL: {view.sql}"
        )
    return {
        "view": {
            "namespace": view.schema_name,
            "name": view.view_name,
            "sql": spark_sql(view.sql, label),
            "duckdb_sql": view.sql,
            "columns": list(view.column_aliases),
            "catalog_marker": CATALOG_MARKER,
            "label": label,
        },
        "snapshot": snapshot,
    }
