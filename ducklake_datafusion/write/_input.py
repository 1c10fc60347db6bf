"""The data a user hands to a write, as a stream of Arrow record batches.

Accepted: ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader``, anything that
exports an Arrow C stream (``__arrow_c_stream__``: Polars DataFrames, DataFusion
DataFrames, DuckDB relations, ...) and pandas DataFrames (without their index). A stream
is consumed batch by batch, never collected, so a write can be larger than memory.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from ..errors import InvalidOptionError

__all__ = ["as_arrow", "batches_of"]


def as_arrow(data, description: str):
    """``data`` as a pyarrow Table, RecordBatch or RecordBatchReader (a stream is opened,
    not read)."""
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data
    module = type(data).__module__.split(".", 1)[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.record_batch(data)
    raise InvalidOptionError(
        f"{description}: cannot write a {type(data).__name__}; pass a pyarrow Table, "
        "RecordBatch or RecordBatchReader, a Polars or pandas DataFrame, or any object with "
        "__arrow_c_stream__"
    )


def batches_of(data, description: str) -> Iterator[pa.RecordBatch]:
    """The record batches of ``data``, one at a time."""
    arrow = as_arrow(data, description)
    if isinstance(arrow, pa.RecordBatch):
        yield arrow
    elif isinstance(arrow, pa.Table):
        yield from arrow.to_batches()
    else:
        yield from arrow
