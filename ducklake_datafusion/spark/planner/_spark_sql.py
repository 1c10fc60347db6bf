"""A view's SQL, as DuckDB stored it, respelled for Spark's SQL parser without changing
what it means.

DuckDB stores a view's query normalised, in its own dialect: identifiers that need it in
double quotes, strings in single quotes with ``''`` for a quote and ``\\`` as a plain
character, ``ORDER BY x`` meaning ``ASC NULLS LAST``, the lake's catalog spelled
``{DUCKLAKE_CATALOG}``. Spark reads each of these differently and would, silently, answer
something else: ``"g"`` is a string there, ``'it''s'`` two adjacent strings (``its``),
``\\`` an escape, and ``ORDER BY x`` puts NULLs first (a different row under ``LIMIT``).
So the query is parsed by DuckDB itself (``json_serialize_sql``), every sort order that
relies on DuckDB's defaults made explicit, printed back (``json_deserialize_sql``), and
its quoted tokens re-quoted the way Spark reads them. What is left is Spark's to parse
and analyse; what it cannot (DuckDB-only syntax and functions) is refused by the JVM with
the view named.

The catalog placeholder becomes the identifier :data:`CATALOG_MARKER`, which the JVM
replaces by the Spark catalog the view was read through.
"""

from __future__ import annotations

import json
import re

import duckdb

from ...errors import UnsupportedFeatureError

__all__ = ["CATALOG_MARKER", "spark_sql"]

PLACEHOLDER = "{DUCKLAKE_CATALOG}"
# A name no schema of a lake has: the JVM maps it to the catalog, unambiguously.
CATALOG_MARKER = "__ducklake_catalog__"
# DuckDB's defaults (``default_order``, ``default_null_order``).
_DEFAULT_ORDER, _DEFAULT_NULLS = "ASCENDING", "NULLS_LAST"
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
# What DuckDB prints under a spelling Spark knows by another, same meaning: functions, and
# ``x IN (SELECT ...)`` / ``x NOT IN (SELECT ...)``, printed as ``= ANY`` / ``<> ALL``.
_SPELLINGS = (
    (re.compile(r"\bcount_star\(\s*\)", re.IGNORECASE), "count(*)"),
    (re.compile(r"\blist_value\(", re.IGNORECASE), "array("),
    (re.compile(r"=\s*ANY\((?=\s*SELECT\b)", re.IGNORECASE), "IN ("),
    (re.compile(r"<>\s*ALL\((?=\s*SELECT\b)", re.IGNORECASE), "NOT IN ("),
)


def spark_sql(sql: str, label: str) -> str:
    """``sql`` (DuckDB's dialect) as Spark SQL of the same meaning; ``label`` names the
    view in the error raised when DuckDB itself cannot parse it."""
    marked = _outside_quotes(sql, lambda text: text.replace(PLACEHOLDER, f'"{CATALOG_MARKER}"'))
    explicit = _explicit_orders(marked, label)
    return _outside_quotes(explicit, _respell, requote=True)


def _explicit_orders(sql: str, label: str) -> str:
    """``sql`` printed back by DuckDB with every default sort direction and NULL order
    spelled out, so that a parser with other defaults reads the same order."""
    con = duckdb.connect()
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        if tree.get("error"):
            raise UnsupportedFeatureError(
                f"{label}: DuckDB cannot parse the view's SQL ({tree.get('error_message')}). "
                f"Its SQL: {sql}"
            )
        _fill_orders(tree)
        return con.execute("SELECT json_deserialize_sql(?::JSON)", [json.dumps(tree)]).fetchone()[0]
    finally:
        con.close()


def _fill_orders(node) -> None:
    """Replace DuckDB's ``ORDER_DEFAULT`` in every ORDER BY term (queries, windows,
    ordered aggregates) by the direction and NULL order DuckDB applies for it."""
    if isinstance(node, dict):
        if "null_order" in node and "expression" in node:
            if node.get("type") == "ORDER_DEFAULT":
                node["type"] = _DEFAULT_ORDER
            if node["null_order"] == "ORDER_DEFAULT":
                node["null_order"] = _DEFAULT_NULLS
        for value in node.values():
            _fill_orders(value)
    elif isinstance(node, list):
        for value in node:
            _fill_orders(value)


def _outside_quotes(sql: str, change, *, requote: bool = False) -> str:
    """``change`` applied to the text outside quoted tokens; with ``requote``, each
    quoted token re-quoted for Spark."""
    pieces, last = [], 0
    for match in _QUOTED.finditer(sql):
        pieces.append(change(sql[last : match.start()]))
        token = match.group(0)
        pieces.append(_requote(token) if requote else token)
        last = match.end()
    pieces.append(change(sql[last:]))
    return "".join(pieces)


def _requote(token: str) -> str:
    """A DuckDB quoted token as Spark reads the same value: ``"id"`` -> ```id```,
    ``'it''s \\ x'`` -> ``'it\\'s \\\\ x'``."""
    body = token[1:-1]
    if token[0] == '"':
        return "`" + body.replace('""', '"').replace("`", "``") + "`"
    value = body.replace("''", "'")
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _respell(text: str) -> str:
    for pattern, replacement in _SPELLINGS:
        text = pattern.sub(replacement, text)
    return text
