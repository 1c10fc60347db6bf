"""Rebuilding nested Arrow arrays child by child."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["zero_based"]


def zero_based(array: pa.Array) -> tuple[pa.Array, int, int]:
    """The offsets of a list or map array rebased to start at 0, and the slice of its
    child they cover (``from_arrays`` refuses sliced offsets together with a mask)."""
    offsets = array.offsets
    start = offsets[0].as_py()
    length = offsets[len(offsets) - 1].as_py() - start
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), start, length
