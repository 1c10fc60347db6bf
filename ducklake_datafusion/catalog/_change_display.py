"""How DuckDB shows a snapshot's ``changes_made``: the ``changes`` map of
``ducklake_snapshots()`` (and of ``ducklake_expire_snapshots``), a key per kind of change
and the tables, schemas or names it touched, for every engine that shows snapshots."""

from __future__ import annotations

import functools
import re

from ._change_tokens import ChangeToken, split_quoted_names

__all__ = ["changes_map", "duckdb_identifier", "token_display"]

# DuckDB's display key per token kind, in the order DuckDB lists them. Kinds that carry
# names are shown by name, all others as id lists. Unknown kinds follow under their own name.
_KEYS = (
    ("created_schema", "schemas_created"),
    ("dropped_schema", "schemas_dropped"),
    ("created_table", "tables_created"),
    ("created_view", "views_created"),
    ("created_scalar_macro", "scalar_macros_created"),
    ("created_table_macro", "table_macros_created"),
    ("dropped_table", "tables_dropped"),
    ("altered_table", "tables_altered"),
    ("inserted_into_table", "tables_inserted_into"),
    ("deleted_from_table", "tables_deleted_from"),
    ("dropped_view", "views_dropped"),
    ("dropped_scalar_macro", "scalar_macros_dropped"),
    ("dropped_table_macro", "table_macros_dropped"),
    ("altered_view", "views_altered"),
    ("inlined_insert", "inlined_insert"),
    ("inlined_delete", "inlined_delete"),
    ("inline_flush", "flushed_inlined"),
    ("flushed_inlined", "flushed_inlined"),
    ("merge_adjacent", "merge_adjacent"),
    ("rewrite_delete", "rewrite_delete"),
)
_KEY_OF = dict(_KEYS)
_KEY_ORDER = {key: index for index, (_, key) in enumerate(_KEYS)}
_HIDDEN = frozenset({"compacted_table"})  # parsed by DuckDB but not shown
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@functools.lru_cache(maxsize=1)
def _keywords() -> frozenset[str]:
    import duckdb

    with duckdb.connect() as con:
        return frozenset(
            r[0] for r in con.execute("SELECT keyword_name FROM duckdb_keywords()").fetchall()
        )


def duckdb_identifier(name: str) -> str:
    """DuckDB's optional quoting: plain identifiers that are not keywords stay bare."""
    if _PLAIN.match(name) and name.lower() not in _keywords():
        return name
    return '"' + name.replace('"', '""') + '"'


def token_display(token: ChangeToken) -> str:
    """A token's value as DuckDB shows it (a created table by its quoted name)."""
    if token.kind == "created_schema":
        return split_quoted_names(token.value)[0]
    if token.kind.startswith("created_"):
        return ".".join(duckdb_identifier(n) for n in split_quoted_names(token.value))
    return token.value


def changes_map(tokens) -> list[tuple[str, list[str]]]:
    """``changes_made`` tokens -> DuckDB's ``changes`` map entries (key, values)."""
    grouped: dict[str, list[str]] = {}
    for token in tokens or ():
        if token.kind in _HIDDEN:
            continue
        key = _KEY_OF.get(token.kind, token.kind)
        values = grouped.setdefault(key, [])
        value = token_display(token)
        if value not in values:
            values.append(value)
    for key, values in grouped.items():
        if all(v.isdigit() for v in values):
            values.sort(key=int)
    return sorted(grouped.items(), key=lambda kv: _KEY_ORDER.get(kv[0], len(_KEY_ORDER)))
