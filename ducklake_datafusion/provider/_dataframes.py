"""DuckLake tables as pandas and Polars data frames, eager or lazy.

``pandas`` and ``polars`` are optional (``pip install 'ducklake-datafusion[polars]'`` /
``[pandas]``) and imported only when used; a missing one raises
:class:`~ducklake_datafusion.errors.MissingDependencyError` naming the extra.

:func:`scan_polars` returns a ``polars.LazyFrame`` through Polars' public IO-plugin hook
(``polars.io.plugins.register_io_source``). Polars hands the scan the columns it needs and
its predicate as a Polars expression. The predicate is translated, where that is exact or
safely wider, into the scan's ``Filter`` for our planner, which prunes files
by catalog statistics and partitions and filters while reading; the Polars predicate is
then applied to every batch as well, so the answer is Polars' own whatever was pushed
down. Comparisons on floating-point columns are never pushed (Polars orders NaN above
every number and treats NaN = NaN as true).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator, Sequence

import pyarrow as pa

from ..errors import MissingDependencyError
from ..read import execute_tasks, read_request
from ..scan import And, Column, Compare, Filter, IsNull, Not, Or, literal_of, to_expression

__all__ = [
    "polars_predicate_filter",
    "polars_predicate_to_arrow",
    "scan_polars",
    "to_pandas",
    "to_polars",
]


def _polars():
    try:
        import polars
    except ImportError as exc:
        raise MissingDependencyError(
            "Polars output needs polars: pip install 'ducklake-datafusion[polars]'"
        ) from exc
    return polars


def to_pandas(table, columns: Sequence[str] | None = None, filter=None):
    """The table (or a projection / filtered part of it) as a ``pandas.DataFrame``."""
    try:
        import pandas  # noqa: F401 - only to give the clear error below
    except ImportError as exc:
        raise MissingDependencyError(
            "pandas output needs pandas: pip install 'ducklake-datafusion[pandas]'"
        ) from exc
    return table.to_arrow(columns=columns, filter=filter).to_pandas()


def to_polars(table, columns: Sequence[str] | None = None, filter=None):
    """The table (or a projection / filtered part of it) as a ``polars.DataFrame``."""
    return _polars().from_arrow(table.to_arrow(columns=columns, filter=filter))


def scan_polars(table):
    """A ``polars.LazyFrame`` over the table at its snapshot; see the module notes."""
    pl = _polars()
    from polars.io.plugins import register_io_source

    schema = pl.from_arrow(table.schema.empty_table()).schema
    floats = {c.name for c in table.columns if c.type_name.lower() in ("float32", "float64")}

    def source(with_columns, predicate, n_rows, batch_size) -> Iterator:
        names = list(with_columns) if with_columns is not None else list(table.schema.names)
        wanted = list(names)
        found = None
        if predicate is not None:
            for name in predicate.meta.root_names():
                if name not in wanted:
                    wanted.append(name)
            found = polars_predicate_filter(predicate, table.schema, floats)
        plan = table.scan_plan(filter=found, columns=wanted)
        request = read_request(plan, wanted, found)
        remaining = n_rows
        for batch in execute_tasks(plan, plan.tasks, request):
            frame = pl.from_arrow(pa.Table.from_batches([batch]))
            if not isinstance(frame, pl.DataFrame):  # a zero-column batch
                frame = pl.DataFrame(height=batch.num_rows)
            if predicate is not None:
                frame = frame.filter(predicate)
            frame = frame.select(names)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            if frame.height:
                yield frame
            if remaining is not None and remaining <= 0:
                return

    # is_pure and the explain names arrived after Polars 1.30 (the oldest admitted)
    accepted = inspect.signature(register_io_source).parameters
    optional = {
        "is_pure": True,
        "explain_name": "ducklake",
        "explain_detail": f"{table.name}@{table.snapshot_id}",
    }
    extra = {k: v for k, v in optional.items() if k in accepted}
    return register_io_source(source, schema=schema, **extra)


# -- Polars predicate -> the scan's Filter ---------------------------------------------------

_COMPARE = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIPPED = {"Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq", "Eq": "Eq", "NotEq": "NotEq"}


def polars_predicate_to_arrow(predicate, schema: pa.Schema, skip: set[str] = frozenset()):
    """:func:`polars_predicate_filter` as a ``pyarrow.compute.Expression`` (or None)."""
    found = polars_predicate_filter(predicate, schema, skip)
    return None if found is None else to_expression(found)


def polars_predicate_filter(predicate, schema: pa.Schema, skip: set[str] = frozenset()):
    """A scan ``Filter`` that keeps every row ``predicate`` keeps (maybe more), or None.

    Translated from the predicate's JSON form: comparisons of a column with a literal,
    ``is_between``, ``is_null``/``is_not_null``, ``&``, ``|`` and ``~``. A part that cannot
    be translated drops out of an ``&`` (the result is then wider, never narrower) and
    makes ``|`` and ``~`` untranslatable. The result is checked against ``schema``.
    """
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - a Polars version without this form: no pushdown
        return None
    found, _exact = _translate(tree, schema, skip)
    if found is None:
        return None
    try:  # types that do not compare (a string literal against a date) are not pushed
        schema.empty_table().filter(to_expression(found))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return found


def _translate(node, schema: pa.Schema, skip) -> tuple[Filter | None, bool]:
    """``(expression or None, exact)``: exact when it keeps exactly the same rows."""
    if "BinaryExpr" in node:
        left, op, right = (node["BinaryExpr"][k] for k in ("left", "op", "right"))
        if op in ("And", "Or"):
            a, a_exact = _translate(left, schema, skip)
            b, b_exact = _translate(right, schema, skip)
            if op == "And":
                if a is None or b is None:
                    return (a if b is None else b), False
                return And((a, b)), a_exact and b_exact
            if a is None or b is None:
                return None, False
            return Or((a, b)), a_exact and b_exact
        if op in _COMPARE:
            column, literal = _column(left, schema, skip), _literal(right)
            if column is None or literal is _NONE:
                column, literal, op = _column(right, schema, skip), _literal(left), _FLIPPED[op]
            if column is None or literal is _NONE or literal is None:
                return None, False
            return Compare(_COMPARE[op], Column(column), literal), True
        return None, False
    if "Function" in node:
        function = node["Function"].get("function", {})
        inputs = node["Function"].get("input", [])
        boolean = function.get("Boolean") if isinstance(function, dict) else None
        if boolean in ("IsNull", "IsNotNull") and len(inputs) == 1:
            column = _column(inputs[0], schema, skip)
            if column is None:
                return None, False
            return IsNull(Column(column), negated=boolean == "IsNotNull"), True
        if boolean == "Not" and len(inputs) == 1:
            inner, exact = _translate(inputs[0], schema, skip)
            if inner is None or not exact:
                return None, False
            return Not(inner), True
        if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
            column = _column(inputs[0], schema, skip)
            low, high = _literal(inputs[1]), _literal(inputs[2])
            if column is None or any(x is _NONE or x is None for x in (low, high)):
                return None, False
            closed = boolean["IsBetween"].get("closed", "Both")
            lower = ">=" if closed in ("Both", "Left") else ">"
            upper = "<=" if closed in ("Both", "Right") else "<"
            bounds = (Compare(lower, Column(column), low), Compare(upper, Column(column), high))
            return And(bounds), True
    return None, False


_NONE = object()  # "not a literal"


def _column(node, schema: pa.Schema, skip) -> str | None:
    name = node.get("Column") if isinstance(node, dict) else None
    if not isinstance(name, str) or schema.get_field_index(name) < 0 or name in skip:
        return None
    return name


_SCALARS = {
    "Int": pa.int64(), "Float": pa.float64(), "String": pa.string(), "Boolean": pa.bool_(),
    "Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(), "Int64": pa.int64(),
    "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(), "UInt64": pa.uint64(),
    "Float32": pa.float32(), "Float64": pa.float64(), "Date": pa.date32(),
}  # fmt: skip


def _literal(node):
    """A literal as a scan ``Literal`` (``None`` for NULL), or ``_NONE`` if not a literal.

    Polars spells literals ``{"Dyn": {"Int": 5}}`` before optimisation and ``{"Scalar":
    {"Int64": 5}}`` after (Polars 1.30: ``{"Scalar": {"dtype": "Int64", "value": {"Int64":
    5}}}``); dates are days since the epoch. Other kinds are not pushed.
    """
    literal = node.get("Literal") if isinstance(node, dict) else None
    if not isinstance(literal, dict):
        return _NONE
    for kind in ("Dyn", "Scalar"):
        value = literal.get(kind)
        if isinstance(value, dict) and set(value) == {"dtype", "value"}:
            value = value["value"]  # the older spelling of a typed scalar
        if isinstance(value, dict) and len(value) == 1:
            ((type_name, inner),) = value.items()
            if type_name == "Null":
                return None
            arrow_type = _SCALARS.get(type_name)
            if arrow_type is not None and not isinstance(inner, (dict, list)):
                try:
                    return literal_of(pa.scalar(inner, arrow_type))
                except (pa.ArrowInvalid, TypeError, OverflowError, ValueError):
                    return _NONE
    return _NONE
