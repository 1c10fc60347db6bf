"""``read_table(..., where=...)``: a Spark SQL condition that also prunes the lake's files.

A Spark DataFrame is built before the query that filters it, so a filter applied to the
DataFrame ``read_table`` returns can only prune row groups (Spark's Parquet reader opens
every file it is given). A condition passed as ``where`` is known in time: the files whose
catalog statistics show they cannot match are left out before Spark lists any, and the
condition is then applied to the rows by Spark as usual (which also refuses a condition
that is not one on the table's columns: ``read_table``'s ``InvalidOptionError``).

The condition is read here, as text, into the scan's ``Filter`` directly: the leaves Spark
would push to a Parquet scan (a column compared with a literal, ``BETWEEN``, ``IN``, ``IS
[NOT] NULL``, ``LIKE`` with a prefix, suffix or infix) joined by ``AND``, ``OR`` and
``NOT``, each translated by the rules of every other form of a Spark filter
(``_core``'s ``condition_filter``). Only what means exactly what Spark means is taken: a
literal must keep its value as the column's type (Spark casts it so before pushing), a
string compared with a date column must be an ISO date, and anything else (functions,
arithmetic, timestamps, quoted strings with escapes) is left out of the conjunction it
stands in, or makes the whole condition prune nothing. Pruning is a subset test on catalog
statistics, so a file it keeps may hold no matching row; the rows are always filtered by
Spark.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal

import pyarrow as pa

from ...scan import Filter
from .._core import FilterColumn, condition_filter
from ._exact_types import spark_reads_exactly

__all__ = ["pruning_filter"]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:BD|[LSYDF])?(?![\w.]))
    | (?P<string>'[^'\\]*')
    | (?P<quoted>`(?:[^`]|``)+`)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><=>|<=|>=|<>|!=|==|=|<|>|\(|\)|,|\|\||[-+*/%.!&|^~])
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_COMPARE = {
    "=": "EqualTo",
    "==": "EqualTo",
    "<=>": "EqualNullSafe",
    "<": "LessThan",
    "<=": "LessThanOrEqual",
    ">": "GreaterThan",
    ">=": "GreaterThanOrEqual",
}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_OPAQUE = ("opaque",)


class _Unreadable(Exception):
    """The condition is not in the part of Spark SQL read here: it prunes nothing."""


def pruning_filter(table, where: str) -> Filter | None:
    """The scan ``Filter`` that ``where`` implies on ``table``'s files, or ``None``.

    ``None`` (nothing pruned here) for a table Spark's reader does not return exactly
    (``_exact_types``: the data source prunes its files with the filters Spark pushes to
    it), and for a condition not read here.
    """
    if not all(spark_reads_exactly(c.type_name) for c in table.columns):
        return None
    columns = {c.name: FilterColumn(c.name, c.arrow_type, True) for c in table.columns}
    try:
        tree = _Parser(where).condition()
    except _Unreadable:
        return None
    return condition_filter(tree, lambda node: _shape(node, columns), columns)


def _shape(node, columns) -> tuple[str, tuple] | None:
    """A parsed node as ``condition_filter`` reads it; comparisons get their literal typed
    as Spark casts it to the column's type."""
    kind = node[0]
    if kind in ("And", "Or", "Not"):
        return kind, node[1:]
    if kind == "compare":
        _, op, left, right = node
        if left[0] == "literal" and right[0] == "column":
            left, right, op = right, left, _FLIPPED.get(op, op)
        if left[0] != "column" or right[0] != "literal":
            return None
        value = _typed(right[1], left[1], columns)
        return None if value is _NO_VALUE else ("leaf", (_COMPARE[op], left[1], value))
    if kind == "in":
        _, column, items = node
        values = tuple(_typed(v[1], column, columns) for v in items)
        if any(v is _NO_VALUE for v in values):
            return None
        return "leaf", ("In", column, values)
    if kind == "leaf":
        return "leaf", node[1]
    return None


_NO_VALUE = object()


def _typed(value, column_name: str, columns):
    """A literal's value as Spark compares it with the column (a string compared with a
    date is cast to a date); ``_NO_VALUE`` for one that cannot be told exactly."""
    if value is _NO_VALUE:
        return value
    column = columns.get(column_name) or next(
        (c for k, c in columns.items() if k.lower() == column_name.lower()), None
    )
    if isinstance(value, str) and column is not None and pa.types.is_date32(column.arrow_type):
        if not _ISO_DATE.match(value):
            return _NO_VALUE
        try:
            return _dt.date.fromisoformat(value)
        except ValueError:
            return _NO_VALUE
    return value


class _Parser:
    """A recursive descent over Spark SQL's boolean expressions, by Spark's precedence
    (``OR`` < ``AND`` < ``NOT`` < predicates < arithmetic). Nodes are tuples: ``("And",
    l, r)``, ``("Or", l, r)``, ``("Not", c)``, ``("compare", op, l, r)``, ``("in",
    column, literals)``, ``("leaf", (name, column, value))``, ``("column", name)``,
    ``("literal", value)`` and ``_OPAQUE`` for an expression read but not translated."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = text.rstrip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise _Unreadable(text[position:])
            self.tokens.append((match.lastgroup, match.group(match.lastgroup)))
            position = match.end()
        self.at = 0

    # -- tokens --------------------------------------------------------------------------

    def _peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def _keyword(self, *words: str) -> bool:
        kind, text = self._peek()
        if kind == "word" and text.upper() in words:
            self.at += 1
            return True
        return False

    def _op(self, *ops: str) -> str | None:
        kind, text = self._peek()
        if kind == "op" and text in ops:
            self.at += 1
            return text
        return None

    def _expect_op(self, op: str) -> None:
        if self._op(op) is None:
            raise _Unreadable(op)

    # -- boolean expressions -------------------------------------------------------------

    def condition(self):
        node = self._or()
        if self._peek()[0] != "end":
            raise _Unreadable(self._peek()[1])
        return node

    def _or(self):
        node = self._and()
        while self._keyword("OR"):
            node = ("Or", node, self._and())
        return node

    def _and(self):
        node = self._not()
        while self._keyword("AND"):
            node = ("And", node, self._not())
        return node

    def _not(self):
        if self._keyword("NOT") or self._op("!"):
            return ("Not", self._not())
        return self._predicate()

    def _predicate(self):
        left = self._value()
        op = self._op(*_COMPARE, "<>", "!=")
        if op is not None:
            right = self._value()
            if op in ("<>", "!="):
                return ("Not", ("compare", "=", left, right))
            return ("compare", op, left, right)
        if self._keyword("IS"):
            negated = self._keyword("NOT")
            if not self._keyword("NULL"):
                raise _Unreadable("IS")  # IS TRUE, IS DISTINCT FROM ...
            if left[0] != "column":
                return _OPAQUE
            leaf = ("leaf", ("IsNotNull" if negated else "IsNull", left[1], None))
            return leaf
        negated = self._keyword("NOT")
        if self._keyword("BETWEEN"):
            low = self._value()
            if not self._keyword("AND"):
                raise _Unreadable("BETWEEN")
            high = self._value()
            node = ("And", ("compare", ">=", left, low), ("compare", "<=", left, high))
        elif self._keyword("IN"):
            node = self._in(left)
        elif self._keyword("LIKE"):
            node = self._like(left, self._value())
        elif negated:
            raise _Unreadable("NOT")
        else:
            return left
        return ("Not", node) if negated else node

    def _in(self, left):
        self._expect_op("(")
        items = [self._value()]
        while self._op(","):
            items.append(self._value())
        self._expect_op(")")
        if left[0] != "column" or any(i[0] != "literal" for i in items):
            return _OPAQUE
        return ("in", left[1], items)

    @staticmethod
    def _like(left, pattern):
        if left[0] != "column" or pattern[0] != "literal" or not isinstance(pattern[1], str):
            return _OPAQUE
        text: str = pattern[1]
        inner = text.strip("%")
        if not inner or any(ch in inner for ch in "%_\\"):
            return _OPAQUE
        starts, ends = text.startswith("%"), text.endswith("%")
        if text.count("%") != int(starts) + int(ends):
            return _OPAQUE
        if starts and ends:
            name = "StringContains"
        elif ends:
            name = "StringStartsWith"
        elif starts:
            name = "StringEndsWith"
        else:
            return ("compare", "=", left, pattern)
        return ("leaf", (name, left[1], inner))

    # -- values --------------------------------------------------------------------------

    def _value(self):
        node = self._term()
        while self._op("+", "-", "||", "&", "|", "^"):
            self._term()
            node = _OPAQUE
        return node

    def _term(self):
        node = self._unary()
        while self._op("*", "/", "%"):
            self._unary()
            node = _OPAQUE
        return node

    def _unary(self):
        if self._op("-"):
            node = self._unary()
            if node[0] == "literal" and isinstance(node[1], (int, float, Decimal)):
                return ("literal", -node[1])
            return _OPAQUE
        if self._op("+", "~"):
            self._unary()
            return _OPAQUE
        return self._primary()

    def _primary(self):
        kind, text = self._peek()
        if kind == "number":
            self.at += 1
            return ("literal", _number(text))
        if kind == "string":
            self.at += 1
            if self._peek()[0] == "string":  # Spark joins adjacent strings
                raise _Unreadable(text)
            return ("literal", text[1:-1])
        if kind == "op" and text == "(":
            self.at += 1
            node = self._or()
            self._expect_op(")")
            return node
        if kind == "quoted":
            self.at += 1
            return self._qualified(("column", text[1:-1].replace("``", "`")))
        if kind != "word":
            raise _Unreadable(text)
        word = text.upper()
        if word in ("AND", "OR", "NOT", "IS", "IN", "BETWEEN", "LIKE"):
            raise _Unreadable(text)
        self.at += 1
        typed = ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "INTERVAL", "X")
        if word in typed and self._peek()[0] == "string":
            literal = self._peek()[1][1:-1]
            self.at += 1
            if word == "DATE" and _ISO_DATE.match(literal):
                try:
                    return ("literal", _dt.date.fromisoformat(literal))
                except ValueError:
                    pass
            return ("literal", _NO_VALUE)  # read, but not a value told exactly here
        if word == "NULL":
            return ("literal", None)
        if word in ("TRUE", "FALSE"):
            return ("literal", word == "TRUE")
        if word in ("CASE", "EXISTS", "INTERVAL"):
            raise _Unreadable(text)
        if self._op("("):
            self._arguments(word)
            return _OPAQUE
        return self._qualified(("column", text))

    def _qualified(self, column):
        if self._op("."):  # a qualified name or a struct field: left to Spark
            kind, _ = self._peek()
            if kind not in ("word", "quoted"):
                raise _Unreadable(".")
            self.at += 1
            self._qualified(column)
            return _OPAQUE
        return column

    def _arguments(self, function: str) -> None:
        """A function call's arguments (``CAST(x AS type)`` too), read past."""
        if self._op(")"):
            return
        if self._op("*"):
            self._expect_op(")")
            return
        self._keyword("DISTINCT")
        while True:
            self._or()
            if function in ("CAST", "TRY_CAST") and self._keyword("AS"):
                self._type_name()
            if self._op(")"):
                return
            self._expect_op(",")

    def _type_name(self) -> None:
        kind, _ = self._peek()
        if kind != "word":
            raise _Unreadable("AS")
        self.at += 1
        if self._op("("):
            while self._op(")") is None:
                if self._peek()[0] not in ("number", "op") or self._peek()[1] == "(":
                    raise _Unreadable("type")
                self.at += 1


def _number(text: str):
    """A numeric literal's value as Spark types it: integers exact, decimals as
    ``Decimal``, doubles (an exponent, or ``D`` / ``F``) as ``float``."""
    upper = text.upper()
    if upper.endswith("BD"):
        return Decimal(text[:-2])
    if upper[-1] in "LSY":
        return int(text[:-1])
    if upper[-1] in "DF":
        return float(text[:-1])
    if "E" in upper:
        return float(text)
    if "." in text:
        return Decimal(text)
    return int(text)
