"""A readable tree for the ``pyarrow.compute.Expression`` filters DataFusion pushes down.

pyarrow offers no public way to walk an Expression, but it pickles expressions through
Arrow's own serialisation: an Arrow IPC file whose schema metadata lists the tree in
prefix order (``call``/``field_ref``/``nested_field_ref``/``literal``/``options``/``end``)
and whose columns hold the literal values and function options. We decode exactly that.
The key-value pairs are read in order through the Arrow C data interface, because
``Schema.metadata`` is a dict and would merge the repeated keys.

The resulting :class:`Call` / :class:`Field` / :class:`Literal` tree is what the planner
prunes files with, and what the Spark adapter translates Spark filters into.
``tests/test_filters.py`` round-trips every shape DataFusion produces, so a pyarrow
release that changes the format fails loudly there.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

__all__ = ["Field", "Literal", "Call", "Node", "decode_expression", "referenced_columns"]


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


Node = Union[Field, Literal, Call]


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
    """Turn a pyarrow Expression into a :data:`Node` tree."""
    reducer, args = expression.__reduce__()
    reader = ipc.open_file(pa.py_buffer(args[0]))
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
