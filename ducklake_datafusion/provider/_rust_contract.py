"""What crosses into the Rust extension (``ducklake_datafusion._rust``), defined once.

A ``_rust.LakeProvider`` is built from one :class:`ProviderSpec`, whose attributes the
extension reads by name (``rust/src/contract.rs``: ``ProviderSpec``). The plan crosses as
the plan export (``read.export_plan``: ``read.PLAN_SCHEMA``, versioned), the very bytes the
Spark jar reads, which the extension reads and checks as the jar does
(``rust/src/plan.rs``); the spec adds only what is not in the plan, checked on arrival too
(by name and type: a mismatch is a ``_rust.ContractError`` naming the table and the
column):

* ``paths``: each exported file's object-store path, in the export's order (as the jar
  gets each file's Hadoop URL beside the export);
* ``bounds``: columns of :func:`bounds_schema` (any of them), one row per file, or
  ``None`` (no pruning by catalog bounds);
* ``rows``: rows read by the exact reader, in the table's own schema (with each row's
  location after it when ``row_id_starts`` is given).

``tests/provider/test_rust_contract.py`` checks these against what the extension expects
(``_rust.boundary_schemas``, ``_rust.PROVIDER_SPEC_FIELDS``). A lazy provider's scan hands
its filters to the planner as ``_rust.Predicate`` values (``rust/src/predicates.rs``,
typed in ``_rust.pyi``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

__all__ = [
    "MAX_PREFIX",
    "MIN_PREFIX",
    "NULLS_PREFIX",
    "NULL_COUNT_TYPE",
    "ProviderSpec",
    "bounds_names",
    "bounds_schema",
]

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


@dataclass(frozen=True)
class ProviderSpec:
    """Everything a ``_rust.LakeProvider`` is built from: the plan export and what is not
    in it."""

    plan: bytes
    """The plan export (``read.export_plan``) of the files the scan reads."""
    paths: tuple[str, ...]
    """Each exported file's object-store path, in the export's order."""
    bounds: pa.RecordBatch | None
    """Columns of :func:`bounds_schema`, one row per file; ``None``: no pruning by them."""
    rows: tuple[pa.RecordBatch, ...]
    """Rows read by the exact reader, in the table's schema (the export's inlined rows
    are in the export)."""
    storage: dict[str, str]
    """The store's options (``provider/_rust_stores.py``)."""
    min_partitions: int
    """The least number of partitions a scan is split into."""
    pruned: int = 0
    """Files of the snapshot already left out by the query's filters (reported only)."""
    read_exactly: int = 0
    """Kept files read by the exact reader, whose rows are among ``rows`` (reported)."""
    row_id_starts: tuple[int, ...] | None = None
    """Each exported file's ``row_id_start``, when the scan gives every row's location
    (``rust/src/locations.rs``): then ``rows`` have the location columns after the
    table's, and the export holds no inlined rows."""
