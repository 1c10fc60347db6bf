"""A ``pyarrow.compute.Expression`` -> the scan's ``Filter``: the one place one is read back.

DataFusion hands a ``pyarrow.dataset`` its filters as pyarrow expressions (and users of
``DuckLakeTable.to_arrow(filter=...)`` may too). pyarrow has no public way to walk an
expression, so it is read from its printed form (``str(expression)``), which spells every
shape DataFusion pushes: comparisons, ``and``/``or``, ``invert``, ``is_null``/``is_valid``,
``is_in`` with its typed value set, the string matches. Printed literals lose their Arrow
type, so each is typed as its column is (what DataFusion's coercion does), or else as the
literal reads on its own (what ``pc.field("k") > 5`` makes). The result is accepted only if
it prints back *equal* (``Expression.equals``, which compares literal types too): a name or
literal the text spells ambiguously, or a shape outside the language, gives ``None``, never
a filter that means something else. No private serialisation is read.
"""

from __future__ import annotations

import functools
import re

import pyarrow as pa
import pyarrow.compute as pc

from ..scan import (
    And,
    Column,
    Compare,
    Filter,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    StringMatch,
    literal_of,
    to_expression,
)

__all__ = ["filter_of"]

_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_MATCHES = {"starts_with": "starts_with", "ends_with": "ends_with", "match_substring": "contains"}
_TIMESTAMP = re.compile(r"-?\d{4,}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.(\d+))?(Z)?")
_DATE = re.compile(r"-?\d{4,}-\d{2}-\d{2}")
_BARE = re.compile(r"null\[[^\]]*\]|[^\s(),{}\[\]]+")
_NUMBER = re.compile(r"-?(\d+\.?\d*([eE][-+]?\d+)?|inf|nan)")
_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}
_ERRORS = (ValueError, KeyError, IndexError, TypeError, pa.ArrowException)


def filter_of(expression: pc.Expression, schema: pa.Schema) -> Filter | None:
    """The :class:`~ducklake_datafusion.scan.Filter` that means exactly ``expression``
    over a table of ``schema``, or ``None`` when none can be proven to."""
    try:
        raw = _parse(str(expression))
    except _ERRORS:
        return None
    for by_column in (True, False):
        try:
            node = _build(raw, schema, by_column)
            if to_expression(node).equals(expression):
                return node
        except _ERRORS:
            continue
    return None


# -- the printed form -> a raw tree ---------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _parse(text: str):
    parser = _Parser(text)
    raw = parser.expression()
    if parser.at != len(text):
        raise ValueError(f"unread text at {parser.at}")
    return raw


class _Parser:
    """Raw nodes: ``("field", path)``, ``("text", str)``, ``("bare", text)``,
    ``("binary", op, left, right)``, ``("call", name, args, options)``."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def take(self, expected: str) -> None:
        if not self.text.startswith(expected, self.at):
            raise ValueError(f"expected {expected!r} at {self.at}")
        self.at += len(expected)

    def expression(self):
        text, at = self.text, self.at
        if text.startswith("(", at):
            self.at += 1
            left = self.expression()
            self.take(" ")
            op = text[self.at : text.index(" ", self.at)]
            self.at += len(op) + 1
            right = self.expression()
            self.take(")")
            return ("binary", op, left, right)
        if text.startswith('"', at):
            return ("text", self.quoted())
        if text.startswith("FieldRef.Nested(", at):
            self.at += len("FieldRef.Nested(")
            names = []
            while not text.startswith(")", self.at):
                self.take("FieldRef.Name(")
                end = text.index(")", self.at)
                names.append(text[self.at : end])
                self.at = end + 1
                if text.startswith(" ", self.at):
                    self.at += 1
            self.at += 1
            return ("field", tuple(names))
        match = _TIMESTAMP.match(text, at) or _BARE.match(text, at)
        if match is None:
            raise ValueError(f"nothing readable at {at}")
        self.at = match.end()
        word = match.group(0)
        if text.startswith("(", self.at):
            return self.call(word)
        if match.re is _TIMESTAMP or _DATE.fullmatch(word) or word in ("true", "false"):
            return ("bare", word)
        if _NUMBER.fullmatch(word) or word.startswith("null["):
            return ("bare", word)
        return ("field", (word,))

    def call(self, name: str):
        self.take("(")
        args, options = [], {}
        while True:
            if self.text.startswith("{", self.at):
                options = self.options()
            else:
                args.append(self.expression())
            if self.text.startswith(")", self.at):
                self.at += 1
                return ("call", name, tuple(args), tuple(options.items()))
            self.take(", ")

    def options(self) -> dict:
        self.take("{")
        found = {}
        while not self.text.startswith("}", self.at):
            key_end = self.text.index("=", self.at)
            key = self.text[self.at : key_end]
            self.at = key_end + 1
            if self.text.startswith('"', self.at):
                found[key] = self.quoted()
            elif key == "value_set":
                found[key] = self.value_set()
            else:
                end = min(
                    i
                    for i in (self.text.find(",", self.at), self.text.find("}", self.at))
                    if i >= 0
                )
                found[key] = self.text[self.at : end]
                self.at = end
            if self.text.startswith(", ", self.at):
                self.at += 2
        self.at += 1
        return found

    def value_set(self):
        colon = self.text.index(":[", self.at)
        type_text = self.text[self.at : colon]
        self.at = colon + 2
        values = []
        while True:
            while self.text[self.at] in " \n":
                self.at += 1
            if self.text.startswith("]", self.at):
                self.at += 1
                return (type_text, tuple(values))
            if self.text.startswith('"', self.at):
                values.append(("text", self.quoted()))
            else:
                end = min(
                    i
                    for i in (self.text.find(",", self.at), self.text.find("\n", self.at))
                    if i >= 0
                )
                values.append(("bare", self.text[self.at : end]))
                self.at = end
            if self.text.startswith(",", self.at):
                self.at += 1

    def quoted(self) -> str:
        self.take('"')
        out = []
        while True:
            char = self.text[self.at]
            self.at += 1
            if char == '"':
                return "".join(out)
            if char == "\\":
                char = self.text[self.at]
                self.at += 1
            out.append(char)


# -- the raw tree -> a Filter ---------------------------------------------------------------


def _build(raw, schema: pa.Schema, by_column: bool) -> Filter:
    kind = raw[0]
    if kind == "binary":
        _, op, left, right = raw
        if op in ("and", "or"):
            parts = (_build(left, schema, by_column), _build(right, schema, by_column))
            return And(parts) if op == "and" else Or(parts)
        left_term = _term(left, right, schema, by_column)
        return Compare(_OPS[op], left_term, _term(right, left, schema, by_column))
    if kind != "call":
        raise ValueError(f"{kind} is not a condition")
    _, name, args, options = raw
    options = dict(options)
    if name == "invert" and len(args) == 1 and not options:
        return Not(_build(args[0], schema, by_column))
    column = _column(args[0]) if len(args) == 1 else None
    if column is None:
        raise ValueError(f"{name} of more than one column")
    if name == "is_null" and options == {"nan_is_null": "false"}:
        return IsNull(column)
    if name == "is_valid" and not options:
        return IsNull(column, negated=True)
    if name in _MATCHES and options.get("ignore_case") == "false":
        return StringMatch(_MATCHES[name], column, options["pattern"])
    if name == "is_in" and options.get("null_matching_behavior") in ("MATCH", "SKIP"):
        type_text, values = options["value_set"]
        arrow_type = _arrow_type(type_text)
        scalars = [_scalar(v, arrow_type) for v in values]
        name = literal_of(pa.scalar(None, arrow_type)).type
        typed = tuple(literal_of(s).value for s in scalars)
        return In(column, typed, name, options["null_matching_behavior"] == "SKIP")
    raise ValueError(f"no filter for {name}")


def _column(raw) -> Column | None:
    return Column(raw[1][0], raw[1][1:]) if raw[0] == "field" else None


def _term(raw, other, schema: pa.Schema, by_column: bool) -> Column | Literal:
    if raw[0] == "field":
        return _column(raw)
    if raw[0] not in ("text", "bare"):
        raise ValueError("a comparison of an expression")
    arrow_type = None
    if by_column and other[0] == "field":
        arrow_type = schema.field(other[1][0]).type
        for name in other[1][1:]:
            arrow_type = arrow_type.field(name).type
    return literal_of(_scalar(raw, arrow_type))


def _scalar(raw, arrow_type: pa.DataType | None) -> pa.Scalar:
    kind, text = raw
    if kind == "text":
        if arrow_type is not None and (
            pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
        ):
            return pa.scalar(bytes.fromhex(text), arrow_type)
        return pa.scalar(text, arrow_type if arrow_type is not None else pa.string())
    if text == "null" or text.startswith("null["):
        inner = text[5:-1] if text.startswith("null[") else None
        return pa.scalar(None, _arrow_type(inner) if inner else arrow_type)
    if arrow_type is None:
        arrow_type = _natural_type(text)
    if pa.types.is_boolean(arrow_type):
        return pa.scalar({"true": True, "false": False}[text])
    return pa.scalar(text).cast(arrow_type)


def _natural_type(text: str) -> pa.DataType:
    """The type a literal printed as ``text`` has when made from a plain Python value."""
    if text in ("true", "false"):
        return pa.bool_()
    stamp = _TIMESTAMP.fullmatch(text)
    if stamp:
        digits = len(stamp.group(2) or "")
        return pa.timestamp(_UNITS[digits], tz="UTC" if stamp.group(3) else None)
    if _DATE.fullmatch(text):
        return pa.date32()
    if re.fullmatch(r"-?\d+", text):
        return pa.int64()
    return pa.float64()


_NAMED_TYPES = {
    **{name: getattr(pa, name)() for name in ("int8", "int16", "int32", "int64")},
    **{name: getattr(pa, name)() for name in ("uint8", "uint16", "uint32", "uint64")},
    "float": pa.float32(), "double": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
    "large_string": pa.large_string(), "binary": pa.binary(), "date32[day]": pa.date32(),
    "time64[us]": pa.time64("us"),
}  # fmt: skip


def _arrow_type(text: str) -> pa.DataType:
    if text in _NAMED_TYPES:
        return _NAMED_TYPES[text]
    stamp = re.fullmatch(r"timestamp\[(s|ms|us|ns)(?:, tz=([^\]]+))?\]", text)
    if stamp:
        return pa.timestamp(stamp.group(1), tz=stamp.group(2))
    decimal = re.fullmatch(r"decimal128\((\d+), (\d+)\)", text)
    if decimal:
        return pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
    raise ValueError(f"no Arrow type read from {text!r}")
