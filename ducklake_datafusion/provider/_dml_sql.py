"""``DELETE`` and ``UPDATE`` statements on lake tables, from SQL text, in a DataFusion session.

datafusion-ffi 55 carries a provider's ``insert_into`` but not ``delete_from`` or ``update``
(apache/datafusion#22328), so ``ctx.sql("DELETE ...")`` cannot reach our provider.
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

__all__ = ["Statement", "parse_statement", "remember_lake", "sql"]

# the lakes registered in each session, by the name they were registered under
_LAKES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_NAME = re.compile(rf"\s*({_IDENT}(?:\s*\.\s*{_IDENT}){{0,2}})")
_KEYWORDS = {"where", "set", "as", "returning"}


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


def _unquote(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] == '"':
        return part[1:-1].replace('""', '"')
    return part.lower()


def _split_name(text: str) -> tuple[str, ...]:
    parts = re.findall(_IDENT, text)
    return tuple(_unquote(p) for p in parts)


def _top_level(text: str):
    """``(index, char)`` of every character outside quotes, parentheses and brackets."""
    depth, quote = 0, None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            yield index, char


def _keyword_at(text: str, word: str) -> int | None:
    """Where the top-level keyword ``word`` (lower case) first starts, else None."""
    size = len(word)

    def in_word(index: int) -> bool:
        return 0 <= index < len(text) and (text[index].isalnum() or text[index] in "_$")

    for index, _ in _top_level(text):
        if text[index : index + size].lower() == word and not (
            in_word(index - 1) or in_word(index + size)
        ):
            return index
    return None


def _split_commas(text: str) -> list[str]:
    cuts = [i for i, char in _top_level(text) if char == ","]
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut + 1
    pieces.append(text[start:])
    return pieces


def _name_and_alias(text: str, statement: str) -> tuple[tuple[str, ...], str | None, str]:
    match = _NAME.match(text)
    if match is None:
        raise InvalidOptionError(f"cannot find the table of {statement!r}")
    table = _split_name(match.group(1))
    rest = text[match.end() :]
    alias = None
    alias_match = re.match(rf"\s+(?:AS\s+)?({_IDENT})", rest, re.IGNORECASE)
    if alias_match and _unquote(alias_match.group(1)) not in _KEYWORDS:
        alias = _unquote(alias_match.group(1))
        rest = rest[alias_match.end() :]
    return table, alias, rest


def parse_statement(text: str) -> Statement | None:
    """The row-changing statement ``text`` is, or ``None`` for any other statement."""
    body = text.strip().rstrip(";").strip()
    head = re.match(r"(DELETE\s+FROM|UPDATE)\s", body, re.IGNORECASE)
    if head is None:
        return None
    kind = "delete" if head.group(1).lower().startswith("delete") else "update"
    table, alias, rest = _name_and_alias(body[head.end() :], text)
    where = None
    at = _keyword_at(rest, "where")
    if at is not None:
        where = rest[at + len("where") :].strip()
        rest = rest[:at]
    if kind == "delete":
        if rest.strip():
            raise InvalidOptionError(
                f"DELETE takes a table and a WHERE condition; cannot read {rest.strip()!r} "
                f"in {text!r}"
            )
        return Statement("delete", table, alias, (), where)
    set_at = _keyword_at(rest, "set")
    if set_at is None or rest[:set_at].strip():
        raise InvalidOptionError(f"UPDATE needs SET column = value in {text!r}")
    assignments = []
    for piece in _split_commas(rest[set_at + len("set") :]):
        equals = [i for i, char in _top_level(piece) if char == "="]
        if not equals:
            raise InvalidOptionError(f"cannot read the assignment {piece.strip()!r} in {text!r}")
        column = _split_name(piece[: equals[0]])
        if alias is not None and len(column) == 2 and column[0] == alias:
            column = column[1:]
        if len(column) != 1:
            raise InvalidOptionError(f"cannot read the column of {piece.strip()!r} in {text!r}")
        assignments.append((column[0], piece[equals[0] + 1 :].strip()))
    return Statement("update", table, alias, tuple(assignments), where)


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


def sql(ctx, text: str, **commit_options):
    """Run ``text`` in ``ctx``: a ``DELETE`` or ``UPDATE`` of a lake table through the
    row-change core (its result as a one-row Arrow table: the snapshot and the rows
    changed, as DuckDB reports a count), anything else as ``ctx.sql(text)`` does.

    ``commit_options``: ``author``, ``commit_message``, ``commit_extra_info``.
    """
    statement = parse_statement(text)
    if statement is None:
        return ctx.sql(text)
    table = _resolve(ctx, statement.table, text)
    if table is None:
        return ctx.sql(text)  # not a lake table: DataFusion says what it makes of it
    from ..catalog import CommitOptions
    from ._row_statements import delete_rows, update_rows

    options = CommitOptions(**commit_options)
    if statement.kind == "delete":
        result = delete_rows(
            table, statement.where, ctx=ctx, options=options, alias=statement.alias
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
        )
        count = result.updated
    return ctx.from_arrow(
        pa.table(
            {
                "count": pa.array([count], pa.int64()),
                "snapshot_id": pa.array([result.snapshot_id], pa.int64()),
            }
        )
    )
