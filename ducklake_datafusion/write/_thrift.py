"""Thrift's compact protocol, generically: bytes -> a tree of fields -> the same bytes.

A Parquet footer is one Thrift struct (``FileMetaData``) in the compact protocol. The writer
changes a few fields of footers pyarrow wrote (``_footer_stats`` says which and why), and
nothing else may change: so the footer is decoded into a tree that keeps every field's
wire type and value exactly, edited, and encoded back. Decoding and encoding an untouched
tree gives back the very bytes decoded (the tests check it on every footer kind written).

No schema is needed: a struct is a list of ``Field`` (id, wire type, value) in wire order; a
list or set a ``Sequence`` (element type, values); a map a ``Mapping`` (key and value types,
pairs). Integers are Python ints (zigzag and varints undone), binaries ``bytes``, booleans
``bool``, doubles ``float``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Field", "Mapping", "Sequence", "decode_struct", "encode_struct"]

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)


@dataclass(slots=True)
class Field:
    """One field of a struct: its id, its compact wire type, its value."""

    id: int
    type: int
    value: object


@dataclass(slots=True)
class Sequence:
    """A list or set: the elements' wire type and the elements."""

    element_type: int
    values: list


@dataclass(slots=True)
class Mapping:
    """A map: key and value wire types and the pairs (types ``STOP`` when empty)."""

    key_type: int
    value_type: int
    pairs: list


class ThriftError(ValueError):
    """Bytes that are not a compact-protocol struct (a truncated or foreign footer)."""


def decode_struct(data: bytes) -> list[Field]:
    """The struct encoded at the start of ``data`` (which must hold it exactly)."""
    reader = _Reader(data)
    fields = reader.struct()
    if reader.offset != len(data):
        raise ThriftError(f"{len(data) - reader.offset} bytes after the struct")
    return fields


def encode_struct(fields: list[Field]) -> bytes:
    out = bytearray()
    _write_struct(out, fields)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def byte(self) -> int:
        if self.offset >= len(self.data):
            raise ThriftError("the struct ends early")
        value = self.data[self.offset]
        self.offset += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError("a varint longer than 10 bytes")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def take(self, size: int) -> bytes:
        if size < 0 or self.offset + size > len(self.data):
            raise ThriftError("a value runs past the struct's end")
        value = self.data[self.offset : self.offset + size]
        self.offset += size
        return value

    def struct(self) -> list[Field]:
        fields: list[Field] = []
        last = 0
        while True:
            header = self.byte()
            kind = header & 0x0F
            if kind == STOP:
                return fields
            delta = header >> 4
            last = last + delta if delta else self.zigzag()
            if kind in (TRUE, FALSE):
                fields.append(Field(last, kind, kind == TRUE))
            else:
                fields.append(Field(last, kind, self.value(kind)))

    def value(self, kind: int):
        if kind in (TRUE, FALSE):  # a bool inside a list, set or map: one byte
            return self.byte() == TRUE
        if kind == BYTE:
            return self.byte()
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            return struct.unpack("<d", self.take(8))[0]
        if kind == BINARY:
            return self.take(self.varint())
        if kind in (LIST, SET):
            header = self.byte()
            size = header >> 4
            if size == 15:
                size = self.varint()
            element = header & 0x0F
            return Sequence(element, [self.value(element) for _ in range(size)])
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return Mapping(STOP, STOP, [])
            types = self.byte()
            key, value = types >> 4, types & 0x0F
            return Mapping(key, value, [(self.value(key), self.value(value)) for _ in range(size)])
        if kind == STRUCT:
            return self.struct()
        raise ThriftError(f"unknown compact type {kind}")


def _write_varint(out: bytearray, value: int) -> None:
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _write_zigzag(out: bytearray, value: int) -> None:
    _write_varint(out, (value << 1) ^ (value >> 63))


def _write_struct(out: bytearray, fields: list[Field]) -> None:
    last = 0
    for field in fields:
        kind = field.type
        if kind in (TRUE, FALSE):
            kind = TRUE if field.value else FALSE
        delta = field.id - last
        if 0 < delta <= 15:
            out.append((delta << 4) | kind)
        else:
            out.append(kind)
            _write_zigzag(out, field.id)
        last = field.id
        if kind not in (TRUE, FALSE):
            _write_value(out, kind, field.value)
    out.append(STOP)


def _write_value(out: bytearray, kind: int, value) -> None:
    if kind in (TRUE, FALSE):
        out.append(TRUE if value else FALSE)
    elif kind == BYTE:
        out.append(value & 0xFF)
    elif kind in (I16, I32, I64):
        _write_zigzag(out, value)
    elif kind == DOUBLE:
        out += struct.pack("<d", value)
    elif kind == BINARY:
        _write_varint(out, len(value))
        out += value
    elif kind in (LIST, SET):
        size = len(value.values)
        if size < 15:
            out.append((size << 4) | value.element_type)
        else:
            out.append(0xF0 | value.element_type)
            _write_varint(out, size)
        for element in value.values:
            _write_value(out, value.element_type, element)
    elif kind == MAP:
        _write_varint(out, len(value.pairs))
        if value.pairs:
            out.append((value.key_type << 4) | value.value_type)
            for key, item in value.pairs:
                _write_value(out, value.key_type, key)
                _write_value(out, value.value_type, item)
    elif kind == STRUCT:
        _write_struct(out, value)
    else:
        raise ThriftError(f"unknown compact type {kind}")
