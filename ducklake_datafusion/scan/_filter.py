"""The scan's own filter language: a small typed tree every engine adapter builds directly.

A filter reaches the planner from five engines (DataFusion's Rust scan, DataFusion's
pyarrow-dataset path, Spark's catalog through the JVM, Spark's Python data source, Polars).
Each adapter speaks its engine's terms and builds this tree; the planner prunes files by
walking it (``_pruning``, ``_catalog_cut``), and executors turn it into pyarrow's
expression only where pyarrow reads (``to_expression`` in ``_filter_arrow``). No library's
private serialisation is ever decoded: the tree is ours, so its meaning is ours too.

Nodes are frozen, slotted and picklable: a plan carries its filter to Spark executors.
Literals are typed as DuckLake types (``int64``, ``varchar``, ``decimal(10,2)``,
``timestamp_ns`` ...), so a filter means the same in every engine whatever Arrow type the
engine spelled the value in. Columns are named (the table's top-level column names); a
column given by its DuckLake id is bound to its name by :func:`bind` before planning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "COMPARISONS",
    "FILTER_TYPES",
    "And",
    "Column",
    "Compare",
    "Filter",
    "In",
    "IsNull",
    "Literal",
    "Not",
    "Or",
    "StringMatch",
    "all_of",
    "bind",
    "columns_of",
]

# Comparison operators, each with the operator that means the same with sides swapped.
COMPARISONS = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
STRING_MATCHES = ("starts_with", "ends_with", "contains")


@dataclass(frozen=True, slots=True)
class Column:
    """A column of the table: its name, or its DuckLake column id (see :func:`bind`).

    ``path`` names a field nested inside the column (struct fields), outermost first.
    """

    ref: str | int
    path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant: a Python value (``None`` for NULL) and its DuckLake type name."""

    value: object
    type: str


@dataclass(frozen=True, slots=True)
class Compare:
    """``left op right`` (``op`` one of :data:`COMPARISONS`); NULL when either side is."""

    op: str
    left: Column | Literal
    right: Column | Literal

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True, slots=True)
class In:
    """``column IN values`` (all of ``type``). A NULL row matches only when ``nulls_match``
    and ``values`` holds ``None`` (pyarrow's default); with ``skip_nulls`` a NULL in
    ``values`` is ignored (SQL's ``IN``, which never matches a NULL row)."""

    column: Column
    values: tuple
    type: str
    skip_nulls: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    """``column IS NULL`` (``IS NOT NULL`` when ``negated``); never NULL itself."""

    column: Column
    negated: bool = False


@dataclass(frozen=True, slots=True)
class StringMatch:
    """``column`` starts with, ends with or contains ``pattern`` (case-sensitive)."""

    kind: str
    column: Column
    pattern: str

    def __post_init__(self) -> None:
        if self.kind not in STRING_MATCHES:
            raise ValueError(f"unknown string match {self.kind!r}")


@dataclass(frozen=True, slots=True)
class And:
    """Every part holds (SQL's three-valued AND)."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Some part holds (SQL's three-valued OR)."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """The part does not hold (NULL stays NULL)."""

    part: Filter


Filter = Compare | In | IsNull | StringMatch | And | Or | Not
FILTER_TYPES = (Compare, In, IsNull, StringMatch, And, Or, Not)  # for isinstance


def all_of(parts: Iterable[Filter | None]) -> Filter | None:
    """The AND of the parts that are not ``None`` (``None`` when none is left)."""
    kept = tuple(p for p in parts if p is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else And(kept)


def _children(node: Filter) -> tuple:
    if isinstance(node, (And, Or)):
        return node.parts
    if isinstance(node, Not):
        return (node.part,)
    if isinstance(node, Compare):
        return (node.left, node.right)
    if isinstance(node, (In, IsNull, StringMatch)):
        return (node.column,)
    return ()


def columns_of(node: Filter | Column | Literal | None) -> frozenset[str]:
    """The top-level column names a (bound) filter reads."""
    if node is None:
        return frozenset()
    if isinstance(node, Column):
        return frozenset([node.ref]) if isinstance(node.ref, str) else frozenset()
    found: set[str] = set()
    for child in _children(node):
        found |= columns_of(child)
    return frozenset(found)


def bind(node: Filter, names_by_id: Mapping[int, str]) -> Filter:
    """``node`` with every column given by id named instead (``KeyError``: unknown id)."""
    if isinstance(node, Column):
        return Column(names_by_id[node.ref], node.path) if isinstance(node.ref, int) else node
    if isinstance(node, Literal):
        return node
    if isinstance(node, (And, Or)):
        return type(node)(tuple(bind(p, names_by_id) for p in node.parts))
    if isinstance(node, Not):
        return Not(bind(node.part, names_by_id))
    if isinstance(node, Compare):
        return Compare(node.op, bind(node.left, names_by_id), bind(node.right, names_by_id))
    if isinstance(node, In):
        return In(bind(node.column, names_by_id), node.values, node.type, node.skip_nulls)
    if isinstance(node, IsNull):
        return IsNull(bind(node.column, names_by_id), node.negated)
    return StringMatch(node.kind, bind(node.column, names_by_id), node.pattern)
