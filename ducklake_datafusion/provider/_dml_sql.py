"""``DELETE``, ``UPDATE`` and ``MERGE`` statements on lake tables, from SQL text, in a session.

datafusion-ffi 55 carries a provider's ``insert_into`` but not ``delete_from`` or ``update``
(apache/datafusion#22328), so ``ctx.sql("DELETE ...")`` cannot reach our provider (and
DataFusion 55 has no ``MERGE``).
:func:`sql` is the one way that works today: a statement that changes rows of a table of a
lake registered in the session (``ducklake_datafusion.register``) is split into its table,
alias, ``SET`` assignments and ``WHERE`` condition, and run by the row-change core with the
conditions evaluated by DataFusion in that same session (its tables, functions and
subqueries work there); every other statement goes to ``ctx.sql`` unchanged.

The split is lexical, not a SQL parser: it finds the statement's keywords outside quotes,
parentheses and brackets, and hands every expression to DataFusion whole. A condition is
therefore always evaluated as DataFusion evaluates it; nothing of it is dropped
(apache/datafusion#24654: a DELETE whose WHERE held an ``IN`` subquery reached the provider
with no filter and deleted every row).
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import pyarrow as pa

from ..errors import InvalidOptionError, TableNotFoundError
from ._sql_text import keyword_at, name_and_alias, split_commas, split_name, top_level

__all__ = [
    "Statement",
    "is_row_change",
    "parse_statement",
    "remember_lake",
    "sql",
]

# the lakes registered in each session, by the name they were registered under
_LAKES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_KEYWORDS = {"where", "set", "as", "returning", "using", "from"}


def remember_lake(ctx, name: str, lake) -> None:
    """Note that ``lake`` is registered in ``ctx`` as ``name`` (``register`` calls it)."""
    try:
        _LAKES.setdefault(ctx, {})[name] = lake
    except TypeError:  # a session that cannot be weakly referenced: statements need names
        pass


@dataclass(frozen=True)
class Statement:
    """A row-changing statement split into the parts the core needs."""

    kind: str  # "delete" or "update"
    table: tuple[str, ...]  # the table's name as written, unquoted parts
    alias: str | None
    assignments: tuple[tuple[str, str], ...]  # UPDATE's (column, SQL expression)
    where: str | None
    joined: str | None = None  # UPDATE's FROM or DELETE's USING: more relations, as written


def parse_statement(text: str) -> Statement | None:
    """The row-changing statement ``text`` is, or ``None`` for any other statement."""
    body = text.strip().rstrip(";").strip()
    head = re.match(r"(DELETE\s+FROM|UPDATE)\s", body, re.IGNORECASE)
    if head is None:
        return None
    kind = "delete" if head.group(1).lower().startswith("delete") else "update"
    table, alias, rest = name_and_alias(body[head.end() :], text, _KEYWORDS)
    where = None
    at = keyword_at(rest, "where")
    if at is not None:
        where = rest[at + len("where") :].strip()
        rest = rest[:at]
    if kind == "delete":
        joined = _after_keyword(rest, "using", text)
        if joined is None and rest.strip():
            raise InvalidOptionError(
                f"DELETE takes a table, USING relations and a WHERE condition; cannot read "
                f"{rest.strip()!r} in {text!r}"
            )
        return Statement("delete", table, alias, (), where, joined)
    set_at = keyword_at(rest, "set")
    if set_at is None or rest[:set_at].strip():
        raise InvalidOptionError(f"UPDATE needs SET column = value in {text!r}")
    rest = rest[set_at + len("set") :]
    from_at = keyword_at(rest, "from")
    joined = None
    if from_at is not None:
        joined = _after_keyword(rest[from_at:], "from", text)
        rest = rest[:from_at]
    assignments = []
    for piece in split_commas(rest):
        equals = [i for i, char in top_level(piece) if char == "="]
        if not equals:
            raise InvalidOptionError(f"cannot read the assignment {piece.strip()!r} in {text!r}")
        column = split_name(piece[: equals[0]])
        if alias is not None and len(column) == 2 and column[0] == alias:
            column = column[1:]
        if len(column) != 1:
            raise InvalidOptionError(f"cannot read the column of {piece.strip()!r} in {text!r}")
        assignments.append((column[0], piece[equals[0] + 1 :].strip()))
    return Statement("update", table, alias, tuple(assignments), where, joined)


def _after_keyword(rest: str, keyword: str, text: str) -> str | None:
    """The relations after ``rest``'s leading ``keyword`` (``USING``, ``FROM``), or
    ``None`` when ``rest`` does not start with it."""
    at = keyword_at(rest, keyword)
    if at is None or rest[:at].strip():
        return None
    joined = rest[at + len(keyword) :].strip()
    if not joined:
        raise InvalidOptionError(f"{keyword.upper()} names no relation in {text!r}")
    return joined


def _resolve(ctx, name: tuple[str, ...], text: str):
    """The ``DuckLakeTable`` a statement names (``lake.schema.t``; ``schema.t`` or ``t``
    when the session has one lake), or ``None`` when it names no table of a lake."""
    lakes = _LAKES.get(ctx, {})
    if len(name) == 3:
        lake = lakes.get(name[0])
        if lake is None:
            return None
        schema, table = name[1], name[2]
    elif len(lakes) == 1:
        (lake,) = lakes.values()
        schema, table = (name[0], name[1]) if len(name) == 2 else ("main", name[0])
    else:
        return None
    try:
        return lake.table(schema, table)
    except TableNotFoundError as exc:
        raise TableNotFoundError(f"{exc} (in {text!r})") from None


def is_row_change(text: str) -> bool:
    """Whether ``text`` starts as a ``DELETE``, ``UPDATE`` or ``MERGE`` does."""
    return re.match(r"\s*(DELETE|UPDATE|MERGE)\s", text, re.IGNORECASE) is not None


def sql(ctx, text: str, **commit_options):
    """Run ``text`` in ``ctx``: a ``DELETE``, ``UPDATE`` or ``MERGE`` of a lake table
    through the row-change core (its result as a one-row Arrow table: the rows changed, as
    DuckDB reports a count, and the snapshot; a MERGE's rows deleted, updated and inserted
    too), a ``CALL`` of a DuckDB maintenance function on a registered lake (``_call_sql``),
    an ``ALTER TABLE``, ``DROP TABLE``, ``CREATE SCHEMA`` or ``DROP SCHEMA`` of a
    registered lake (``_ddl_sql``: one row, the snapshot), anything else as
    ``ctx.sql(text)`` does.

    ``commit_options``: ``author``, ``commit_message``, ``commit_extra_info``.
    """
    from ._call_sql import is_maintenance_call, run_call
    from ._merge_sql import parse_merge

    if is_maintenance_call(text):
        return run_call(ctx, text, _LAKES.get(ctx, {}), **commit_options)
    merge = parse_merge(text)
    statement = parse_statement(text) if merge is None else None
    if merge is None and statement is None:
        from ._ddl_sql import run_ddl

        changed = run_ddl(ctx, text, _LAKES.get(ctx, {}), **commit_options)
        return _datafusion_sql(ctx, text) if changed is None else changed
    table = _resolve(ctx, merge[0] if merge else statement.table, text)
    if table is None:
        return _datafusion_sql(ctx, text)  # not a lake table: DataFusion says what it makes of it
    from ..catalog import CommitOptions
    from ._merge import merge_rows
    from ._row_statements import delete_rows, update_rows

    options = CommitOptions(**commit_options)
    columns = {}
    if merge is not None:
        result = merge_rows(table, merge[1], ctx=ctx, options=options)
        count = result.deleted + result.updated + result.inserted
        columns = {"deleted": result.deleted, "updated": result.updated}
        columns["inserted"] = result.inserted
    elif statement.kind == "delete":
        result = delete_rows(
            table,
            statement.where,
            ctx=ctx,
            options=options,
            alias=statement.alias,
            joined=statement.joined,
        )
        count = result.deleted
    else:
        result = update_rows(
            table,
            dict(statement.assignments),
            statement.where,
            ctx=ctx,
            options=options,
            alias=statement.alias,
            joined=statement.joined,
        )
        count = result.updated
    values = {"count": count, "snapshot_id": result.snapshot_id, **columns}
    return ctx.from_arrow(pa.table({k: pa.array([v], pa.int64()) for k, v in values.items()}))


def _datafusion_sql(ctx, text: str):
    """``ctx.sql(text)`` as DataFusion runs it (also in a ``DuckLakeSessionContext``)."""
    import datafusion

    return datafusion.SessionContext.sql(ctx, text)
