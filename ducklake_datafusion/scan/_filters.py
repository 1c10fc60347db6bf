"""A readable tree for the ``pyarrow.compute.Expression`` filters DataFusion pushes down.

pyarrow offers no public way to walk an Expression, but it pickles expressions through
Arrow's own serialisation: an Arrow IPC file whose schema metadata lists the tree in
prefix order (``call``/``field_ref``/``nested_field_ref``/``literal``/``options``/``end``)
and whose columns hold the literal values and function options. We decode exactly that.
The key-value pairs are read in order through the Arrow C data interface, because
``Schema.metadata`` is a dict and would merge the repeated keys.

The resulting :class:`Call` / :class:`Field` / :class:`Literal` tree is what the planner
prunes files with, and what the Spark adapter translates Spark filters into.
``tests/provider/test_contract.py`` round-trips every shape DataFusion produces, so a pyarrow
release that changes the format fails loudly there.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc

__all__ = [
    "Call",
    "Field",
    "Literal",
    "Node",
    "NotRebuildable",
    "decode_expression",
    "nan_ordered",
    "referenced_columns",
    "to_expression",
]


@dataclass(frozen=True, slots=True)
class Field:
    """A column reference; ``path`` has more than one name for a nested field."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Literal:
    value: pa.Scalar


@dataclass(frozen=True, slots=True)
class Call:
    """A function call such as ``greater``, ``and_kleene``, ``is_in``, ``is_null``."""

    function: str
    args: tuple[Node, ...]
    options: dict | None = None


Node = Field | Literal | Call


class _ArrowSchema(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _ordered_metadata(schema: pa.Schema) -> list[tuple[str, str]]:
    """Schema metadata as an ordered list of pairs (duplicates kept)."""
    capsule = schema.__arrow_c_schema__()
    struct = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema"))
    if not struct.metadata:
        return []
    base = struct.metadata

    def int32(offset: int) -> int:
        return int.from_bytes(ctypes.string_at(base + offset, 4), "little", signed=True)

    count, offset, pairs = int32(0), 4, []
    for _ in range(count):
        key_len = int32(offset)
        key = ctypes.string_at(base + offset + 4, key_len).decode()
        offset += 4 + key_len
        value_len = int32(offset)
        value = ctypes.string_at(base + offset + 4, value_len).decode()
        offset += 4 + value_len
        pairs.append((key, value))
    del capsule
    return pairs


def decode_expression(expression: pc.Expression) -> Node:
    """Turn a pyarrow Expression into a :data:`Node` tree.

    One query decodes its filter several times (file statistics, pruning, every
    fragment's read request); the tree is memoised by the expression's serialised bytes,
    so the same filter is parsed once. Trees are never modified after decoding.
    """
    _, args = expression.__reduce__()
    return _decode_serialised(args[0].to_pybytes())


@functools.lru_cache(maxsize=256)
def _decode_serialised(payload: bytes) -> Node:
    reader = ipc.open_file(pa.py_buffer(payload))
    tokens = _ordered_metadata(reader.schema)
    batch = reader.read_all()
    position = 0

    def value(index: str):
        column = batch.column(int(index))
        return column[0]

    def parse() -> Node:
        nonlocal position
        key, text = tokens[position]
        position += 1
        if key == "literal":
            return Literal(value(text))
        if key == "field_ref":
            return Field((text,))
        if key == "nested_field_ref":
            names = []
            for _ in range(int(text)):
                names.append(tokens[position][1])
                position += 1
            return Field(tuple(names))
        if key == "call":
            args, options = [], None
            while tokens[position][0] not in ("end", "options"):
                args.append(parse())
            if tokens[position][0] == "options":
                options = value(tokens[position][1]).as_py()
                position += 1
            position += 1  # "end"
            return Call(text, tuple(args), options)
        raise ValueError(f"unexpected token {key!r} in serialised expression")

    return parse()


def referenced_columns(node: Node) -> set[str]:
    """Top-level column names a filter reads."""
    if isinstance(node, Field):
        return {node.path[0]}
    if isinstance(node, Call):
        found: set[str] = set()
        for arg in node.args:
            found |= referenced_columns(arg)
        return found
    return set()


class NotRebuildable(ValueError):
    """A decoded expression uses options this module cannot turn back into pyarrow."""


def to_expression(node: Node) -> pc.Expression:
    """Rebuild a pyarrow Expression from a :data:`Node` tree."""
    if isinstance(node, Field):
        return pc.field(*node.path)
    if isinstance(node, Literal):
        return pc.scalar(node.value)
    args = [to_expression(a) for a in node.args]
    return pc.Expression._call(node.function, args, _options(node))


def _options(node: Call):
    options = node.options
    if not options:
        return None
    kind = options.get("_type_name")
    if kind == b"SetLookupOptions":
        behaviour = options.get("null_matching_behavior", 0)
        if behaviour not in (0, 1):
            raise NotRebuildable(f"is_in with null matching behaviour {behaviour}")
        return pc.SetLookupOptions(pa.array(options["value_set"]), skip_nulls=behaviour == 1)
    if kind == b"NullOptions":
        return pc.NullOptions(nan_is_null=bool(options.get("nan_is_null")))
    raise NotRebuildable(f"options {kind!r} of {node.function}")


_ORDERED = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _is_nan(node: Node) -> Node:
    return Call("is_nan", (node,))


def _not(node: Node) -> Node:
    return Call("invert", (node,))


def _and(a: Node, b: Node) -> Node:
    return Call("and_kleene", (a, b))


def _or(a: Node, b: Node) -> Node:
    return Call("or_kleene", (a, b))


def _nan_compare(function: str, a: Node, b: Node) -> Node:
    """Comparisons with NaN ordered above every number and equal to itself (DuckDB,
    DataFusion); pyarrow's kernels instead make every comparison with NaN false."""
    if function in ("less", "less_equal"):
        return _nan_compare("greater" if function == "less" else "greater_equal", b, a)
    equal = _or(Call("equal", (a, b)), _and(_is_nan(a), _is_nan(b)))
    if function == "equal":
        return equal
    if function == "not_equal":
        return _not(equal)
    greater = _or(Call("greater", (a, b)), _and(_is_nan(a), _not(_is_nan(b))))
    return greater if function == "greater" else _or(greater, equal)


def nan_ordered(node: Node, float_columns: set[str]) -> Node:
    """Rewrite comparisons that involve floating-point columns to NaN-aware ones."""
    if not isinstance(node, Call):
        return node
    args = tuple(nan_ordered(a, float_columns) for a in node.args)
    if node.function in _ORDERED and len(args) == 2 and referenced_columns(node) & float_columns:
        return _nan_compare(node.function, *args)
    return Call(node.function, args, node.options)
