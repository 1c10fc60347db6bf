"""Views stored in the catalog (``ducklake_view``), as DataFusion views.

DuckDB stores a view's query as SQL text in its own dialect, with the lake's catalog name
spelled ``{DUCKLAKE_CATALOG}``. The query is planned by DataFusion's SQL planner in a
private session where the lake, pinned to the snapshot being read, is the default
catalog and the view's schema the default schema, so ``{DUCKLAKE_CATALOG}.s.t``, ``s.t``
and ``t`` resolve as they do in DuckDB. The resulting DataFrame becomes the table
DataFusion scans (``datafusion.catalog.Table(df)``): its scans are our own tables, run
under the querying session.

``SchemaProvider.table()`` runs inside DataFusion's planner, where planning another query
on the same thread panics ("Cannot start a runtime from within a runtime"), so the view's
query is planned on a thread of its own (``_threads``; one per view, so views over views
nest).

A query DataFusion cannot plan (DuckDB-only functions such as ``list_value``, other
syntax) raises :class:`UnsupportedFeatureError` with the view's SQL and DataFusion's
reason when the view is queried (DuckDB's normalised spellings ``count_star()`` and
``list_value`` are translated first); views without column aliases take DataFusion's names
for computed columns, which can differ from DuckDB's.
"""

from __future__ import annotations

import logging
import re

from datafusion import SessionConfig, SessionContext, col
from datafusion.catalog import Table

from ..catalog import ViewEntry, metadata
from ..errors import DuckLakeError, UnsupportedFeatureError
from ..scan import resolve_snapshot_ref, split_table_suffix
from ._threads import on_own_thread

__all__ = ["VIEW_CATALOG", "datafusion_sql", "find_view", "plannable_view_names", "view_table"]

log = logging.getLogger("ducklake_datafusion")

# The name the lake has in the private planning session of a view.
VIEW_CATALOG = "ducklake_view_catalog"
_PLACEHOLDER = "{DUCKLAKE_CATALOG}"

# DuckDB stores views in its normalised spelling; these functions have the same meaning
# under another name in DataFusion. Applied outside quoted strings and identifiers only.
_SPELLINGS = (
    (re.compile(r"\bcount_star\(\s*\)", re.IGNORECASE), "count(*)"),
    (re.compile(r"\blist_value\(", re.IGNORECASE), "make_array("),
)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


def datafusion_sql(sql: str) -> str:
    """The view's DuckDB SQL with the catalog placeholder and DuckDB-only spellings
    replaced (string literals and quoted identifiers are left as they are)."""
    pieces, last = [], 0
    for match in _QUOTED.finditer(sql):
        pieces.append(_respell(sql[last : match.start()]))
        pieces.append(match.group(0))
        last = match.end()
    pieces.append(_respell(sql[last:]))
    return "".join(pieces)


def _respell(text: str) -> str:
    text = text.replace(_PLACEHOLDER, VIEW_CATALOG)
    for pattern, replacement in _SPELLINGS:
        text = pattern.sub(replacement, text)
    return text


def find_view(catalog, schema: str, name: str) -> tuple[ViewEntry, int] | None:
    """The view ``schema.name`` (or ``name@snapshot``) and the snapshot to read it at."""
    backend = catalog.backend
    split = split_table_suffix(name)
    if split is not None and split[1] is None:
        return None  # not a valid suffix: the table lookup reports it
    base, ref = (name, None) if split is None else split
    with backend.session() as session:
        metadata.read_settings(session, backend.description)
        if ref is None:
            snapshot = catalog.resolve_snapshot(session).snapshot_id
        else:
            snapshot = resolve_snapshot_ref(session, ref, backend.description).snapshot_id
        views = metadata.list_views(session, snapshot, schema)
    exact = [v for v in views if v.view_name == base]
    if not exact:
        exact = [v for v in views if v.view_name.lower() == base.lower()]
    return (exact[0], snapshot) if len(exact) == 1 else None


def plannable_view_names(catalog, views: list[ViewEntry], snapshot: int) -> list[str]:
    """The names of ``views`` (live at ``snapshot``) that DataFusion can plan.

    DataFusion's ``information_schema`` looks every listed name up, and one view it
    cannot plan would make ``SHOW TABLES`` fail, so such views are left out of listings
    (with a warning); querying one by name still raises the typed error saying why.
    """
    return [v.view_name for v in views if _plannable(catalog, v, snapshot)]


_PLANNABLE: dict[tuple, bool] = {}
_PLANNABLE_MAX = 1024


def _plannable(catalog, view: ViewEntry, snapshot: int) -> bool:
    key = (catalog.description, view.view_id, view.sql, snapshot)
    known = _PLANNABLE.get(key)
    if known is None:
        try:
            view_table(catalog, view, snapshot)
            known = True
        except UnsupportedFeatureError as exc:
            log.warning("%s; it is left out of table listings", exc)
            known = False
        if len(_PLANNABLE) >= _PLANNABLE_MAX:
            _PLANNABLE.clear()
        _PLANNABLE[key] = known
    return known


def view_table(catalog, view: ViewEntry, snapshot: int) -> Table:
    """The view's query at ``snapshot`` as a table DataFusion can scan."""
    label = f"view {view.schema_name}.{view.view_name} at snapshot {snapshot}"
    if view.dialect != "duckdb":
        raise UnsupportedFeatureError(
            f"{catalog.description}: {label} is written in the {view.dialect!r} SQL dialect, "
            f"which this reader does not plan. Its SQL: {view.sql}"
        )
    pinned = catalog.at(snapshot=snapshot)
    sql = datafusion_sql(view.sql)

    def plan():
        config = SessionConfig().with_default_catalog_and_schema(VIEW_CATALOG, view.schema_name)
        ctx = SessionContext(config)
        ctx.register_catalog_provider(VIEW_CATALOG, pinned)
        try:
            frame = ctx.sql(sql)
            if view.column_aliases:
                names = frame.schema().names
                if len(names) != len(view.column_aliases):
                    raise ValueError(
                        f"{len(view.column_aliases)} column aliases for {len(names)} columns"
                    )
                frame = frame.select(
                    *[col(f'"{n}"').alias(a) for n, a in zip(names, view.column_aliases)]
                )
            return frame
        except DuckLakeError:  # the lake's own error (a table gone, a bad file...)
            raise
        except Exception as exc:  # DataFusion's planning errors, reported as ours
            raise UnsupportedFeatureError(
                f"{catalog.description}: {label} cannot be planned by DataFusion ({exc}). "
                f"Its SQL, in DuckDB's dialect: {view.sql}. Query it in DuckDB, or define an "
                "equivalent view in DataFusion"
            ) from exc

    return Table(on_own_thread(plan, "ducklake-view"))
