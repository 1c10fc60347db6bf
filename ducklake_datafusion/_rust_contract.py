"""What crosses into the Rust extension (``ducklake_datafusion._rust``), defined once.

A ``_rust.LakeProvider`` is built from one :class:`ProviderSpec`, whose attributes the
extension reads by name (``rust/src/contract.rs``: ``ProviderSpec``). Its Arrow parts have
these shapes, which the extension checks on arrival (by name and type: a mismatch is a
``_rust.ContractError`` naming the table and the column):

* ``files``: :data:`FILE_TABLE`, one row per live data file (:func:`file_table`);
* ``bounds``: columns of :func:`bounds_schema` (any of them), one row per file, or
  ``None`` (no pruning by catalog bounds);
* ``inlined``, ``defaults``: the table's own schema.

``tests/provider/test_rust_contract.py`` checks these against what the extension expects
(``_rust.boundary_schemas``, ``_rust.PROVIDER_SPEC_FIELDS``). A lazy provider's scan hands
its filters to the planner as ``_rust.Predicate`` values (``rust/src/predicates.rs``,
typed in ``_rust.pyi``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = [
    "FILE_TABLE",
    "MAX_PREFIX",
    "MIN_PREFIX",
    "NULLS_PREFIX",
    "NULL_COUNT_TYPE",
    "ProviderSpec",
    "bounds_names",
    "bounds_schema",
    "file_table",
]

FILE_TABLE = pa.schema(
    [
        # the object-store path (a local path without its leading slash, or the key)
        pa.field("path", pa.string()),
        # the catalog's URL, for messages (null: the path)
        pa.field("url", pa.string()),
        pa.field("size", pa.int64()),
        pa.field("footer_size", pa.int64()),  # null: unknown
        pa.field("record_count", pa.int64()),
        # the sorted unique deleted positions, null for none
        pa.field("deleted", pa.list_(pa.int64())),
    ]
)

MIN_PREFIX = "min:"
MAX_PREFIX = "max:"
NULLS_PREFIX = "nulls:"
NULL_COUNT_TYPE = pa.int64()


def bounds_names(column: str) -> tuple[str, str, str]:
    """The bounds table's columns of ``column``: lower and upper bound, null count."""
    return MIN_PREFIX + column, MAX_PREFIX + column, NULLS_PREFIX + column


def bounds_schema(table_schema: pa.Schema) -> pa.Schema:
    """Every column a bounds table of a table of ``table_schema`` may have: bounds of the
    column's own type and an int64 null count, for each column not of a nested type."""
    fields = []
    for field in table_schema:
        if pa.types.is_nested(field.type):
            continue
        low, high, nulls = bounds_names(field.name)
        fields += [pa.field(low, field.type), pa.field(high, field.type)]
        fields.append(pa.field(nulls, NULL_COUNT_TYPE))
    return pa.schema(fields)


def file_table(
    paths: Sequence[str],
    urls: Sequence[str | None],
    sizes: Sequence[int],
    footer_sizes: Sequence[int | None],
    record_counts: Sequence[int],
    deleted: Sequence[Sequence[int] | np.ndarray | None],
) -> pa.RecordBatch:
    """The file table (:data:`FILE_TABLE`), one row per file."""
    deleted_type = FILE_TABLE.field("deleted").type
    return pa.RecordBatch.from_arrays(
        [
            pa.array(paths, pa.string()),
            pa.array(urls, pa.string()),
            pa.array(sizes, pa.int64()),
            pa.array(footer_sizes, pa.int64()),
            pa.array(record_counts, pa.int64()),
            pa.array(
                [None if d is None else np.asarray(d, dtype=np.int64) for d in deleted],
                deleted_type,
            ),
        ],
        schema=FILE_TABLE,
    )


@dataclass(frozen=True)
class ProviderSpec:
    """Everything a ``_rust.LakeProvider`` is built from."""

    table: str
    """The table's name, for messages (``main.t``)."""
    schema: pa.Schema
    """The table's Arrow schema."""
    files: pa.RecordBatch
    """:data:`FILE_TABLE`."""
    bounds: pa.RecordBatch | None
    """Columns of :func:`bounds_schema`, one row per file; ``None``: no pruning by them."""
    inlined: tuple[pa.RecordBatch, ...]
    """Inlined rows (and rows read by the exact reader), in the table's schema."""
    storage: dict[str, str]
    """The store's options (``provider/_rust_stores.py``)."""
    min_partitions: int
    """The least number of partitions a scan is split into."""
    field_ids: dict[str, int] | None = None
    """Column name to field id: files of older layouts are mapped by field id."""
    defaults: pa.RecordBatch | None = None
    """One row of the table's schema: each column's initial default."""
    snapshot: int | None = None
    """When some file holds per-row snapshot ids (merged files): later rows are dropped."""
    pruned: int = 0
    """Files of the snapshot already left out by the query's filters (reported only)."""
    read_exactly: int = 0
    """Kept files read by the exact reader, whose rows are among ``inlined`` (reported)."""
