"""``MERGE INTO`` statements, from SQL text, split into a ``_merge_clauses.MergeStatement``.

The forms are DuckDB's: ``MERGE INTO t [[AS] a] USING source [[AS] s] ON condition`` (or
``USING (columns)``), then ``WHEN MATCHED``, ``WHEN NOT MATCHED [BY TARGET]`` and ``WHEN
NOT MATCHED BY SOURCE`` clauses, each ``[AND condition] THEN`` one of ``UPDATE [SET
column = value, ... | SET * | BY NAME | BY POSITION]``, ``DELETE``, ``INSERT [[(columns)]
VALUES (values) | * | BY NAME | BY POSITION | DEFAULT VALUES]``, ``DO NOTHING`` and
``ERROR ['message']``. ``UPDATE`` and ``INSERT`` alone and ``*`` take the source's columns
by position, as DuckDB does. The split is lexical (``_sql_text``): every condition and
value goes to DataFusion whole.
"""

from __future__ import annotations

import re

from ..errors import InvalidOptionError
from ._merge_clauses import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    MergeClause,
    MergeStatement,
)
from ._sql_text import (
    IDENT,
    alias_of,
    keyword_at,
    name_and_alias,
    split_commas,
    split_name,
    top_level,
    words,
)

__all__ = ["parse_merge"]

_KINDS = re.compile(
    r"\s*(?:(NOT\s+MATCHED(?:\s+BY\s+(SOURCE|TARGET))?)|(MATCHED))\b", re.IGNORECASE
)


def parse_merge(text: str) -> tuple[tuple[str, ...], MergeStatement] | None:
    """The target's name and the MERGE ``text`` is, or ``None`` for another statement."""
    body = text.strip().rstrip(";").strip()
    head = re.match(r"MERGE\s+INTO\s", body, re.IGNORECASE)
    if head is None:
        return None
    name, target_alias, rest = name_and_alias(body[head.end() :], text, {"using"})
    if keyword_at(rest, "using") is None or not re.match(r"\s*USING\b", rest, re.IGNORECASE):
        raise InvalidOptionError(f"MERGE INTO needs USING source after its table in {text!r}")
    rest = re.sub(r"^\s*USING\b", "", rest, flags=re.IGNORECASE)
    found = [(i, w) for i, w in words(rest) if w in ("on", "using", "when")]
    if not found or found[0][1] == "when":
        raise InvalidOptionError(f"MERGE INTO needs ON condition or USING (columns) in {text!r}")
    at, word = found[0]
    source, source_alias = _source(rest[:at], text)
    after = rest[at + len(word) :]
    when = keyword_at(after, "when")
    if when is None:
        raise InvalidOptionError(f"MERGE INTO needs at least one WHEN clause in {text!r}")
    on, using = None, ()
    if word == "on":
        on = after[:when].strip()
    else:
        columns = after[:when].strip()
        if not (columns.startswith("(") and columns.endswith(")")):
            raise InvalidOptionError(f"cannot read USING {columns!r} in {text!r}")
        using = split_name(columns[1:-1])
    starts = [i for i, w in words(after) if w == "when"]
    pieces = [after[a + len("when") : b] for a, b in zip(starts, [*starts[1:], len(after)])]
    clauses = tuple(_clause(piece, text) for piece in pieces)
    return name, MergeStatement(source, source_alias, target_alias, on, using, clauses)


def _source(text: str, statement: str) -> tuple[str, str]:
    """The source relation and its alias (by default the last part of its name)."""
    text = text.strip()
    if text.startswith("("):
        closing = _closing(text, 0)
        relation, rest = text[: closing + 1], text[closing + 1 :]
        default = None
    else:
        match = re.match(rf"{IDENT}(?:\s*\.\s*{IDENT}){{0,2}}", text)
        if match is None:
            raise InvalidOptionError(f"cannot read the source of {statement!r}")
        end = match.end()
        if text[end:].lstrip().startswith("("):  # a table function's arguments
            start = end + len(text[end:]) - len(text[end:].lstrip())
            end = _closing(text, start) + 1
        relation, rest = text[:end], text[end:]
        default = split_name(match.group(0))[-1]
    rest, alias = alias_of(" " + rest.strip(), set())
    if rest.strip():
        raise InvalidOptionError(f"cannot read {rest.strip()!r} after the source in {statement!r}")
    alias = alias or default
    if alias is None:
        raise InvalidOptionError(f"the source query of a MERGE needs an alias in {statement!r}")
    return relation, alias


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one at ``start``."""
    depth, quote = 0, None
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
    raise InvalidOptionError(f"unbalanced parentheses in {text!r}")


def _clause(text: str, statement: str) -> MergeClause:
    kind = _KINDS.match(text)
    if kind is None:
        raise InvalidOptionError(
            f"a WHEN clause must be MATCHED, NOT MATCHED [BY TARGET] or NOT MATCHED BY SOURCE "
            f"in {statement!r}"
        )
    if kind.group(3):
        when = MATCHED
    else:
        when = NOT_MATCHED_BY_SOURCE if (kind.group(2) or "").lower() == "source" else NOT_MATCHED
    rest = text[kind.end() :]
    then = keyword_at(rest, "then")
    if then is None:
        raise InvalidOptionError(f"a WHEN clause needs THEN in {statement!r}")
    condition = rest[:then].strip()
    if condition:
        match = re.match(r"AND\b", condition, re.IGNORECASE)
        if match is None:
            raise InvalidOptionError(f"cannot read {condition!r} before THEN in {statement!r}")
        condition = condition[match.end() :].strip()
    action = rest[then + len("then") :].strip()
    return _action(when, condition or None, action, statement)


def _action(when: str, condition: str | None, text: str, statement: str) -> MergeClause:
    lowered = " ".join(text.lower().split())
    if lowered == "delete":
        return MergeClause(when, "delete", condition)
    if lowered == "do nothing":
        return MergeClause(when, "nothing", condition)
    if lowered == "error" or lowered.startswith("error "):
        message = text.strip()[len("error") :].strip() or None
        if message and len(message) >= 2 and message[0] == message[-1] == "'":
            message = message[1:-1].replace("''", "'")
        return MergeClause(when, "error", condition, message=message)
    verb = lowered.split(" ", 1)[0]
    if verb not in ("update", "insert"):
        raise InvalidOptionError(f"cannot read the action {text.strip()!r} in {statement!r}")
    rest = text.strip()[len(verb) :].strip()
    spelled = " ".join(rest.lower().split())
    every = "set *" if verb == "update" else "*"
    if spelled in ("", every, "by name", "by position"):
        return MergeClause(when, verb, condition, by="name" if spelled == "by name" else "position")
    if verb == "update":
        match = re.match(r"SET\b", rest, re.IGNORECASE)
        if match is None:
            raise InvalidOptionError(f"cannot read UPDATE {rest!r} in {statement!r}")
        columns, expressions = [], []
        for piece in split_commas(rest[match.end() :]):
            equals = [i for i, char in top_level(piece) if char == "="]
            if not equals:
                raise InvalidOptionError(f"cannot read the assignment {piece.strip()!r}")
            column = split_name(piece[: equals[0]])
            columns.append(column[-1])
            expressions.append(piece[equals[0] + 1 :].strip())
        return MergeClause(when, "update", condition, tuple(columns), tuple(expressions))
    if spelled == "default values":
        return MergeClause(when, "insert", condition, (), ())
    columns = None
    if rest.startswith("("):
        closing = _closing(rest, 0)
        columns = split_name(rest[1:closing])
        rest = rest[closing + 1 :].strip()
    match = re.match(r"VALUES\s*\(", rest, re.IGNORECASE)
    if match is None or not rest.endswith(")"):
        raise InvalidOptionError(f"cannot read INSERT {rest!r} in {statement!r}")
    values = [v.strip() for v in split_commas(rest[match.end() : -1])]
    return MergeClause(when, "insert", condition, columns, tuple(values))
