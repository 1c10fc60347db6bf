"""A MERGE's model and what both of its evaluators share: the statement and its clauses,
the join of the target to the source, and each clause's values.

A MERGE's clauses are evaluated either as DataFusion SQL (``_merge``: ``CASE`` expressions
in one query) or as pyarrow expressions (``_merge_arrow``: over the joined rows); both
join the same way (:func:`join_query`) and give each writing clause's values by the same
rules (:func:`clause_values`), so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidOptionError
from ._sql_text import quoted

__all__ = [
    "ACTION",
    "ACTIONS",
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "SOURCE_ROW",
    "MergeClause",
    "MergeStatement",
    "clause_values",
    "join_query",
    "value_column",
]

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not matched", "not matched by source"
ACTIONS = {
    MATCHED: ("update", "delete", "nothing", "error"),
    NOT_MATCHED: ("insert", "nothing", "error"),
    NOT_MATCHED_BY_SOURCE: ("update", "delete", "nothing", "error"),
}
ACTION = "__ducklake_action"
SOURCE_ROW = "__ducklake_source_row"


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN`` of a MERGE.

    ``columns``/``expressions``: an ``UPDATE``'s ``SET column = expression`` pairs, or an
    ``INSERT``'s columns (``None``: the table's, in order) and values; ``by``: instead,
    every column from the source's, by ``"position"`` (``SET *``, ``INSERT *``, as DuckDB
    reads them) or by ``"name"`` (``BY NAME``). An ``INSERT`` with neither inserts
    ``DEFAULT VALUES`` (nulls).
    """

    when: str  # MATCHED, NOT_MATCHED or NOT_MATCHED_BY_SOURCE
    action: str  # "update", "delete", "insert", "nothing" or "error"
    condition: object = None  # SQL text or a pyarrow expression (``_merge_arrow``)
    columns: tuple[str, ...] | None = None
    expressions: tuple = ()  # SQL text, or pyarrow expressions
    by: str | None = None
    message: str | None = None  # an ERROR's


@dataclass(frozen=True)
class MergeStatement:
    """``MERGE INTO target [AS target_alias] USING source [AS source_alias] ON on`` (or
    ``USING (using)``), then ``clauses``. ``source``: a relation in the session's SQL (a
    table's name, a table function, a parenthesized query)."""

    source: str
    source_alias: str
    target_alias: str | None
    on: str | None
    using: tuple[str, ...] = ()
    clauses: tuple[MergeClause, ...] = ()


def join_query(table, statement: MergeStatement, listed: str):
    """A function of the target's relation: ``SELECT listed`` from the target joined to
    the source (``INNER``, ``LEFT``, ``RIGHT`` or ``FULL`` as the clauses need); the
    source's rows carry ``SOURCE_ROW`` (true), null where no source row joined."""
    target = quoted(statement.target_alias or table.entry.table_name)
    source = quoted(statement.source_alias)
    kinds = {c.when for c in statement.clauses if c.action != "nothing"}
    join = {
        frozenset(): "INNER",
        frozenset({MATCHED}): "INNER",
        frozenset({NOT_MATCHED}): "RIGHT",
        frozenset({NOT_MATCHED_BY_SOURCE}): "LEFT",
    }.get(frozenset(kinds - {MATCHED}), "FULL")
    if statement.using:
        on = " AND ".join(f"{target}.{quoted(c)} = {source}.{quoted(c)}" for c in statement.using)
    else:
        on = statement.on
    inner = (
        f"(SELECT *, TRUE AS {quoted(SOURCE_ROW)} FROM {statement.source} "
        f"AS __ducklake_source) AS {source}"
    )
    return lambda relation: f"SELECT {listed} FROM {relation} {join} JOIN {inner} ON ({on})"


def value_column(clause: int, column: int) -> str:
    """The name of clause ``clause``'s value of the table's ``column``-th column."""
    return f"__ducklake_value_{clause}_{column}"


def clause_values(table, statement, clause: MergeClause, source_columns, column_of, value_of):
    """Column -> value under ``clause`` (an UPDATE's unset columns keep their value, an
    INSERT's are absent: null), or ``None`` for a clause that writes no row.
    ``column_of(alias, column)`` names a column of the target or the source;
    ``value_of(expression)`` takes a value the clause gives (SQL text or a pyarrow
    expression, as the caller evaluates)."""
    if clause.action not in ("update", "insert"):
        return None
    target = statement.target_alias or table.entry.table_name
    source = statement.source_alias
    names = list(table.schema.names)
    by_lower = {n.lower(): n for n in names}
    values = {n: column_of(target, n) for n in names} if clause.action == "update" else {}
    what = f"a MERGE into {table.name}: WHEN {clause.when.upper()} THEN {clause.action.upper()}"
    if clause.by == "position":
        if len(source_columns) != len(names):
            raise InvalidOptionError(
                f"{what} * takes the source's columns by position: the table has "
                f"{len(names)} columns ({names}), the source {len(source_columns)} "
                f"({source_columns}); name them (SET column = ..., BY NAME)"
            )
        values.update({n: column_of(source, c) for n, c in zip(names, source_columns)})
    elif clause.by == "name":
        for column in source_columns:
            found = by_lower.get(column.lower())
            if found is None:
                raise InvalidOptionError(
                    f"{what} BY NAME: the source's column {column!r} is not a column of the "
                    f"table; its columns are {names}"
                )
            values[found] = column_of(source, column)
    else:
        columns = clause.columns if clause.columns is not None else tuple(names)
        if len(columns) != len(clause.expressions):
            raise InvalidOptionError(
                f"{what} names {len(columns)} columns and gives {len(clause.expressions)} values"
            )
        for column, expression in zip(columns, clause.expressions):
            found = by_lower.get(column.lower())
            if found is None:
                raise InvalidOptionError(
                    f"{what}: table {table.name} has no column {column!r}; its columns are {names}"
                )
            values[found] = value_of(expression)
    return values
