"""Lexical helpers for the row-changing statements: keywords and names outside nesting.

``DELETE``, ``UPDATE`` and ``MERGE`` are split into their parts (``_dml_sql``,
``_merge_sql``) by finding their keywords at the top level of the statement: outside
quotes, parentheses, brackets and ``CASE ... END`` (whose ``WHEN`` and ``THEN`` are not
``MERGE``'s). Every expression between them is handed to DataFusion whole, never read
here, so a condition is always evaluated as DataFusion evaluates it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..errors import InvalidOptionError

__all__ = [
    "IDENT",
    "alias_of",
    "keyword_at",
    "name_and_alias",
    "quoted",
    "split_commas",
    "split_name",
    "top_level",
    "unquote",
    "words",
]

IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_NAME = re.compile(rf"\s*({IDENT}(?:\s*\.\s*{IDENT}){{0,2}})")
_WORD = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_][A-Za-z0-9_$]*")


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def unquote(part: str) -> str:
    """An identifier as SQL means it: a quoted one as written, another in lower case."""
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] == '"':
        return part[1:-1].replace('""', '"')
    return part.lower()


def split_name(text: str) -> tuple[str, ...]:
    """The parts of a dotted name, unquoted."""
    return tuple(unquote(p) for p in re.findall(IDENT, text))


def top_level(text: str) -> Iterator[tuple[int, str]]:
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


def words(text: str) -> Iterator[tuple[int, str]]:
    """``(index, lower-case word)`` of every top-level word outside ``CASE ... END``."""
    mask = [" "] * len(text)
    for index, char in top_level(text):
        mask[index] = char
    cases = 0
    for match in _WORD.finditer("".join(mask)):
        word = match.group(0).lower()
        if word == "case":
            cases += 1
        elif word == "end" and cases:
            cases -= 1
        elif cases == 0:
            yield match.start(), word


def keyword_at(text: str, word: str, start: int = 0) -> int | None:
    """Where the top-level keyword ``word`` (lower case) first starts at or after
    ``start``, else None."""
    for index, found in words(text):
        if found == word and index >= start:
            return index
    return None


def split_commas(text: str) -> list[str]:
    """``text`` split at its top-level commas."""
    cuts = [i for i, char in top_level(text) if char == ","]
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut + 1
    pieces.append(text[start:])
    return pieces


def name_and_alias(
    text: str, statement: str, keywords: set[str]
) -> tuple[tuple[str, ...], str | None, str]:
    """The dotted name ``text`` starts with, the alias after it (not one of
    ``keywords``), and the rest of ``text``."""
    match = _NAME.match(text)
    if match is None:
        raise InvalidOptionError(f"cannot find the table of {statement!r}")
    name = split_name(match.group(1))
    rest, alias = alias_of(text[match.end() :], keywords)
    return name, alias, rest


def alias_of(text: str, keywords: set[str]) -> tuple[str, str | None]:
    """The alias ``[AS] name`` that ``text`` starts with (not one of ``keywords``) and
    the rest of ``text``."""
    match = re.match(rf"\s+(?:AS\s+)?({IDENT})", text, re.IGNORECASE)
    if match and unquote(match.group(1)) not in keywords:
        return text[match.end() :], unquote(match.group(1))
    return text, None
