"""MERGE: a source's rows joined to the target's, each joined row given the first WHEN
clause that applies, as one DataFusion query; the core writes the result.

The query (:func:`_merge_query`) joins the target (``ChangeTarget``: every row with its
location) to the source in the caller's session, ``INNER``, ``LEFT``, ``RIGHT`` or
``FULL`` as the clauses need, and computes per joined row the index of the first clause
whose kind (``MATCHED``, ``NOT MATCHED [BY TARGET]``, ``NOT MATCHED BY SOURCE``) and
condition hold, and every column's new value under that clause, as ``CASE`` expressions:
so conditions and values are DataFusion's own SQL, evaluated once, lazily, in clause order.

From the result the core takes the rows to delete (an ``UPDATE`` or ``DELETE`` clause's
target rows), the new versions of updated rows (with their row ids: DuckDB's form of an
update, written before the inserted rows, as DuckDB writes them) and the rows inserted.
Unlike DuckDB's (one ``UPDATE`` or ``DELETE`` clause per MERGE on DuckLake), any number of
clauses of every kind may be given; unlike DuckDB's, a target row that more than one
source row would change is an error (the SQL standard's cardinality rule), as is a row
an ``ERROR`` clause takes. A MERGE that inserts, or acts on unmatched target rows,
requires that no rows were appended to the table meanwhile (``NoRowsInserted``): an
appended row could be the match the plan did not see, so the MERGE is planned again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import CommitOptions, NoRowsInserted
from ..errors import InvalidOptionError, MergeError
from ..read import ROW_ID
from ._change_target import LOCATION_COLUMNS, ChangeTarget
from ._merge_arrow import arrow_merge_rows, uses_expressions
from ._merge_clauses import (
    ACTION,
    ACTIONS,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    SOURCE_ROW,
    MergeClause,
    MergeStatement,
    clause_values,
    join_query,
    value_column,
)
from ._row_statements import query_target, repeated_row_id, replanned
from ._sql_text import quoted

__all__ = [
    "MergeBuilder",
    "MergeClause",
    "MergeStatement",
    "merge_rows",
    "stage_merge",
    "upsert_builder",
    "upsert_rows",
]


def merge_rows(table, statement: MergeStatement, *, ctx=None, options=None, source_data=None):
    """Run ``statement`` on ``table`` (a ``DuckLakeTable``) as one new snapshot; a
    ``ChangeResult``. ``source_data``: Arrow data registered in the session as the
    statement's ``source`` (the Python API's)."""
    return replanned(
        table, lambda change: stage_merge(change, statement, ctx, source_data), options
    )


def stage_merge(change, statement: MergeStatement, ctx=None, source_data=None) -> dict[str, int]:
    """Add the MERGE's deletes, updates and inserts to ``change`` (a ``TableChange``);
    its counts."""
    from datafusion import SessionContext

    table = change.table
    _check_clauses(table, statement)
    session = ctx if ctx is not None else SessionContext()
    registered = None
    if source_data is not None:
        import pyarrow.dataset as ds

        registered = f"__ducklake_source_{uuid.uuid4().hex}"
        session.register_dataset(registered, ds.dataset(source_data))
        statement = replace(statement, source=quoted(registered))
    try:
        source_columns = _source_columns(session, statement)
        if any(c.when != MATCHED and c.action != "nothing" for c in statement.clauses):
            change.requirements.append(NoRowsInserted(change.ref))
        target = ChangeTarget(table, change.plan, change.files)

        def run(query):
            return query_target(target, query, session, statement.target_alias)

        if uses_expressions(statement):
            rows = arrow_merge_rows(table, statement, source_columns, run)
        else:
            rows = run(_merge_query(table, statement, source_columns))
        return _apply(table, statement, rows, change)
    finally:
        if registered is not None:
            session.deregister_table(registered)


def _check_clauses(table, statement: MergeStatement) -> None:
    if not statement.clauses:
        raise InvalidOptionError(f"a MERGE into {table.name} needs at least one WHEN clause")
    for clause in statement.clauses:
        if clause.action not in ACTIONS[clause.when]:
            raise InvalidOptionError(
                f"a MERGE into {table.name}: WHEN {clause.when.upper()} cannot "
                f"{clause.action.upper()}; it takes {', '.join(ACTIONS[clause.when])}"
            )


def _source_columns(session, statement: MergeStatement) -> list[str]:
    """The source's column names, as DataFusion sees them."""
    from ..errors import typed

    sql = f"SELECT * FROM {statement.source} AS __ducklake_source LIMIT 0"
    try:
        return list(session.sql(sql).schema().names)
    except Exception as exc:
        ours = typed(exc)
        if ours is not None:
            raise ours from exc
        raise InvalidOptionError(
            f"the source of a MERGE ({statement.source}) cannot be read: {exc}"
        ) from None


def _merge_query(table, statement: MergeStatement, source_columns: list[str]):
    """A function of the target's relation: the MERGE's joined rows, with each one's
    location, clause index and new column values."""
    target = quoted(statement.target_alias or table.entry.table_name)
    source = quoted(statement.source_alias)
    clauses = statement.clauses
    matched = f"{target}.{quoted(ROW_ID)} IS NOT NULL AND {source}.{quoted(SOURCE_ROW)} IS NOT NULL"
    presence = {
        MATCHED: matched,
        NOT_MATCHED: f"{target}.{quoted(ROW_ID)} IS NULL",
        NOT_MATCHED_BY_SOURCE: f"{source}.{quoted(SOURCE_ROW)} IS NULL",
    }
    applies = []
    for clause in clauses:
        condition = presence[clause.when]
        if clause.condition is not None:
            condition += f" AND ({clause.condition})"
        applies.append(condition)
    select = [f"{target}.{quoted(c)}" for c in LOCATION_COLUMNS]
    branches = " ".join(f"WHEN {a} THEN {i}" for i, a in enumerate(applies))
    select.append(f"CASE {branches} END AS {quoted(ACTION)}")

    def column_of(relation: str, column: str) -> str:
        return f"{quoted(relation)}.{quoted(column)}"

    for index, clause in enumerate(clauses):  # each writing clause's values, typed alone
        values = clause_values(
            table, statement, clause, source_columns, column_of, lambda e: f"({e})"
        )
        if values is None:
            continue
        earlier = " ".join(f"WHEN {a} THEN NULL" for a in applies[:index])
        for position, name in enumerate(table.schema.names):
            value = values.get(name, "NULL")
            select.append(
                f"CASE {earlier} WHEN {applies[index]} THEN {value} END AS "
                f"{quoted(value_column(index, position))}"
            )
    return join_query(table, statement, ", ".join(select))


def _apply(table, statement: MergeStatement, rows: pa.Table, change) -> dict[str, int]:
    """Hand the joined rows' deletes, updates and inserts to ``change``; the counts."""
    clauses = statement.clauses
    action = rows.column(ACTION)

    def taking(*actions: str, when: tuple[str, ...] = (MATCHED, NOT_MATCHED_BY_SOURCE)):
        indices = [i for i, c in enumerate(clauses) if c.action in actions and c.when in when]
        if not indices:
            return None
        return pc.fill_null(pc.is_in(action, value_set=pa.array(indices, action.type)), False)

    failing = taking("error", when=(MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE))
    if failing is not None and pc.any(failing).as_py():
        index = pc.min(action.filter(failing)).as_py()
        clause = clauses[index]
        raise MergeError(
            f"MERGE into {table.name}: a row took the WHEN {clause.when.upper()} ... THEN ERROR "
            f"clause{': ' + clause.message if clause.message else ''}; nothing was changed"
        )
    changing = taking("update", "delete", when=(MATCHED,))
    if changing is not None:
        found = repeated_row_id(rows.column(ROW_ID).filter(changing))  # (matched: a rowid)
        if found is not None:
            rowid, count = found
            raise MergeError(
                f"MERGE into {table.name}: the target row with rowid {rowid} is "
                f"matched by {count} source rows, and a MERGE may change a row "
                "once; make the source unique on the ON condition's keys (nothing was changed)"
            )
    counts = {"deleted": 0, "updated": 0, "inserted": 0}
    removing = taking("update", "delete")
    if removing is not None:
        change.delete(rows.select(list(LOCATION_COLUMNS)).filter(removing))
    deleting = taking("delete")
    if deleting is not None:
        counts["deleted"] = int(pc.sum(deleting.cast(pa.int64())).as_py() or 0)
    updated = _written(table, clauses, rows, "update", change)
    if updated is not None and updated.num_rows:
        updated = updated.sort_by(ROW_ID)  # as update_rows writes them
        row_ids = updated.column(ROW_ID)
        counts["updated"] = change.add(updated.drop_columns([ROW_ID]), row_ids)
    inserted = _written(table, clauses, rows, "insert", change)
    if inserted is not None and inserted.num_rows:  # after the updates, as DuckDB numbers them
        counts["inserted"] = change.add(inserted.drop_columns([ROW_ID]))
    return counts


def _written(table, clauses, rows: pa.Table, action: str, change) -> pa.Table | None:
    """The rows the ``action`` clauses write, each clause's values cast to the table's
    types on their own (a ``CASE`` over all of them would take one common type), with
    the target row's ``rowid``."""
    names = list(table.schema.names)
    parts = []
    for index, clause in enumerate(clauses):
        if clause.action != action:
            continue
        taking = pc.fill_null(pc.equal(rows.column(ACTION), index), False)
        # (the clause's columns first, then the filter: rows holds every clause's values)
        taken = rows.select([*(value_column(index, k) for k in range(len(names))), ROW_ID])
        taken = taken.filter(taking)
        values = change.conformed(taken.drop_columns([ROW_ID]).rename_columns(names))
        parts.append(values.append_column(ROW_ID, taken.column(ROW_ID)))
    return pa.concat_tables(parts) if parts else None


@dataclass(frozen=True)
class MergeBuilder:
    """``table.merge(source, on)``: add ``when_*`` clauses (each returns a new builder),
    then :meth:`execute`. Clauses apply in the order given; the first whose kind and
    ``where`` hold takes a row. ``set``/``values``: column -> SQL text over
    ``target_alias``'s and ``source_alias``'s columns; ``where``: SQL text. Or, in every
    clause, pyarrow expressions naming columns as ``pc.field(alias, column)``
    (``_merge_arrow``)."""

    table: object
    source_data: object
    statement: MergeStatement
    ctx: object = None
    options: CommitOptions | None = None
    transaction_table: object = None  # a TransactionTable that stages the MERGE instead

    def staged_in(self, table) -> MergeBuilder:
        """This builder, its ``execute()`` staging the MERGE in a transaction's ``table``."""
        return replace(self, transaction_table=table)

    def _with(self, clause: MergeClause) -> MergeBuilder:
        clauses = (*self.statement.clauses, clause)
        return replace(self, statement=replace(self.statement, clauses=clauses))

    def when_matched_update(self, set: dict, where: str | None = None) -> MergeBuilder:
        """Matched target rows get ``set`` (unset columns keep their values)."""
        return self._with(_setting(MATCHED, set, where))

    def when_matched_update_all(self, where: str | None = None) -> MergeBuilder:
        """Matched target rows take the source row's columns, by name."""
        return self._with(MergeClause(MATCHED, "update", where, by="name"))

    def when_matched_delete(self, where: str | None = None) -> MergeBuilder:
        """Matched target rows are deleted."""
        return self._with(MergeClause(MATCHED, "delete", where))

    def when_not_matched_insert(self, values: dict, where: str | None = None) -> MergeBuilder:
        """Source rows no target row matches are inserted with ``values`` (others null)."""
        columns = tuple(str(c) for c in values)
        expressions = tuple(_expression(v) for v in values.values())
        return self._with(MergeClause(NOT_MATCHED, "insert", where, columns, expressions))

    def when_not_matched_insert_all(self, where: str | None = None) -> MergeBuilder:
        """Source rows no target row matches are inserted, their columns by name."""
        return self._with(MergeClause(NOT_MATCHED, "insert", where, by="name"))

    def when_not_matched_by_source_update(self, set: dict, where: str | None = None):
        """Target rows no source row matches get ``set``."""
        return self._with(_setting(NOT_MATCHED_BY_SOURCE, set, where))

    def when_not_matched_by_source_delete(self, where: str | None = None) -> MergeBuilder:
        """Target rows no source row matches are deleted."""
        return self._with(MergeClause(NOT_MATCHED_BY_SOURCE, "delete", where))

    def execute(self):
        """Commit the MERGE as one new snapshot; a ``ChangeResult`` (``snapshot_id``,
        ``deleted``, ``updated``, ``inserted``; in a transaction, staged, with no
        snapshot id yet)."""
        if self.transaction_table is not None:
            return self.transaction_table._stage_merge(self)
        return merge_rows(
            self.table,
            self.statement,
            ctx=self.ctx,
            options=self.options,
            source_data=self.source_data,
        )


def _setting(when: str, assignments: dict, where: str | None) -> MergeClause:
    if not assignments:
        raise InvalidOptionError("an update needs at least one column to set")
    columns = tuple(str(c) for c in assignments)
    expressions = tuple(_expression(v) for v in assignments.values())
    return MergeClause(when, "update", where, columns, expressions)


def _expression(value):
    """A clause's value as given: a pyarrow expression, else SQL text."""
    return value if isinstance(value, pc.Expression) else str(value)


def merge_builder(table, source, on, *, source_alias, target_alias, ctx, options) -> MergeBuilder:
    """The builder ``table.merge`` returns; ``source`` is Arrow data (anything ``append``
    takes), read once; ``on``: SQL text, or key column names equal on both sides."""
    data = _materialized(source, table.name)
    if isinstance(on, pc.Expression):
        raise InvalidOptionError(
            f"a MERGE into {table.name} joins ON SQL text or key column names (the join is "
            "DataFusion's); its clauses may take pyarrow expressions"
        )
    if isinstance(on, str):
        condition, keys = on, ()
    else:
        condition, keys = None, tuple(str(k) for k in on)
        if not keys:
            raise InvalidOptionError(f"a MERGE into {table.name} needs keys to match rows on")
    statement = MergeStatement("", source_alias, target_alias, condition, keys)
    return MergeBuilder(table, data, statement, ctx, options)


def upsert_rows(table, data, on, *, ctx=None, options=None):
    """Update the rows of ``table`` whose keys ``on`` match a row of ``data`` and whose
    other columns differ (by name), insert the rest (pyiceberg's ``upsert``)."""
    return upsert_builder(table, data, on, ctx=ctx, options=options).execute()


def upsert_builder(table, data, on, *, ctx=None, options=None) -> MergeBuilder:
    """The MERGE an upsert is."""
    keys = [on] if isinstance(on, str) else list(on)
    builder = merge_builder(
        table, data, keys, source_alias="source", target_alias="target", ctx=ctx, options=options
    )
    lowered = {k.lower() for k in keys}
    others = [n for n in builder.source_data.schema.names if n.lower() not in lowered]
    changed = " OR ".join(
        f"(target.{quoted(n)} IS DISTINCT FROM source.{quoted(n)})" for n in others
    )
    if changed:
        builder = builder.when_matched_update_all(where=changed)
    return builder.when_not_matched_insert_all()


def _materialized(data, name: str) -> pa.Table:
    """The source as one Arrow table (a MERGE planned again reads it again)."""
    from ..write import as_arrow

    arrow = as_arrow(data, f"the source of a MERGE into {name}")
    if isinstance(arrow, pa.RecordBatchReader):
        return arrow.read_all()
    if isinstance(arrow, pa.RecordBatch):
        return pa.Table.from_batches([arrow])
    return arrow
