"""A MERGE whose conditions and values are ``pyarrow.compute`` expressions.

A pyarrow expression names one table's columns, and a MERGE's conditions and values span
two relations, so here each joined row is two struct columns named by the aliases: the
target's row as ``target_alias`` and the source's as ``source_alias``, and an expression
names a column as ``pc.field("target", "v")`` or ``pc.field("source", "v")`` (pyarrow's
nested field reference). The join itself is DataFusion's, as for SQL text (``_merge``):
the same ``ON`` (SQL text or key columns), in the caller's session. The clauses are then
evaluated by pyarrow over the joined rows, in order, the first that applies taking a row,
and the result has the columns ``_merge``'s SQL query gives, so the counts, the
cardinality rule and what is written are the same code for both.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidOptionError
from ..read import ROW_ID
from ._change_target import LOCATION_COLUMNS
from ._merge_clauses import (
    ACTION,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    SOURCE_ROW,
    clause_values,
    join_query,
    value_column,
)
from ._sql_text import quoted

__all__ = ["arrow_merge_rows", "uses_expressions"]

_HAS_TARGET = "__ducklake_has_target"
_HAS_SOURCE = "__ducklake_has_source"


def uses_expressions(statement) -> bool:
    """Whether the clauses of ``statement`` give pyarrow expressions; they are either all
    SQL text or all pyarrow expressions (one evaluator runs them all)."""
    parts = [
        part
        for clause in statement.clauses
        for part in (clause.condition, *clause.expressions)
        if part is not None
    ]
    arrow = [isinstance(part, pc.Expression) for part in parts]
    if any(arrow) and not all(arrow):
        raise InvalidOptionError(
            "a MERGE's conditions and values are either all SQL text or all pyarrow "
            "expressions, not both"
        )
    return any(arrow)


def arrow_merge_rows(table, statement, source_columns, run_query) -> pa.Table:
    """The MERGE's joined rows with each one's location, clause index and new column
    values, as ``_merge._apply`` takes them. ``run_query(sql_of_relation)``: the rows of
    a query over the target (``query_target`` in the caller's session)."""
    target_alias = statement.target_alias or table.entry.table_name
    target, source = quoted(target_alias), quoted(statement.source_alias)
    select = [f"{target}.{quoted(c)}" for c in LOCATION_COLUMNS]
    select.append(f"{target}.{quoted(ROW_ID)} IS NOT NULL AS {quoted(_HAS_TARGET)}")
    select.append(f"{source}.{quoted(SOURCE_ROW)} IS NOT NULL AS {quoted(_HAS_SOURCE)}")
    for alias, relation, names in (
        (target_alias, target, table.schema.names),
        (statement.source_alias, source, source_columns),
    ):
        fields = ", ".join(f"'{_text(n)}', {relation}.{quoted(n)}" for n in names)
        select.append(f"named_struct({fields}) AS {quoted(alias)}")
    joined = run_query(join_query(table, statement, ", ".join(select)))

    count = joined.num_rows
    has_target, has_source = joined.column(_HAS_TARGET), joined.column(_HAS_SOURCE)
    kinds = {
        MATCHED: pc.and_(has_target, has_source),
        NOT_MATCHED: pc.invert(has_target),
        NOT_MATCHED_BY_SOURCE: pc.invert(has_source),
    }
    action = pa.nulls(count, pa.int64())
    taken = pa.repeat(pa.scalar(False), count)
    columns = {name: joined.column(name) for name in LOCATION_COLUMNS}
    for index, clause in enumerate(statement.clauses):
        applies = kinds[clause.when]
        if clause.condition is not None:
            held = _evaluate(table, joined, clause.condition, "condition")
            applies = pc.and_(applies, pc.fill_null(held, False))
        applies = pc.and_(applies, pc.invert(taken))
        action = pc.if_else(applies, pa.scalar(index, pa.int64()), action)
        taken = pc.or_(taken, applies)
        values = clause_values(
            table, statement, clause, source_columns, pc.field, lambda expression: expression
        )
        if values is None:
            continue
        for position, name in enumerate(table.schema.names):
            value = values.get(name)
            if value is None:  # an INSERT's unset column
                columns[value_column(index, position)] = pa.nulls(count)
                continue
            computed = _evaluate(table, joined, value, f"value of {name}")
            unset = pa.nulls(count, computed.type)
            columns[value_column(index, position)] = pc.if_else(applies, computed, unset)
    columns[ACTION] = action
    return pa.table(columns)


def _text(name: str) -> str:
    """``name`` inside a SQL string literal."""
    return name.replace("'", "''")


def _evaluate(table, joined: pa.Table, expression, what: str) -> pa.Array:
    """``expression`` over every joined row, as one array."""
    import pyarrow.dataset as ds

    try:
        result = ds.dataset(joined).to_table(columns={"value": expression})
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise InvalidOptionError(
            f"a MERGE into {table.name}: the {what} ({expression}) cannot be evaluated over "
            f"the joined rows ({exc}); name a column as pc.field(alias, column)"
        ) from None
    return result.column("value").combine_chunks()
