"""Partitioned tables: which partition each row goes to, as DuckDB's writer decides it.

A table's partition spec (``ducklake_partition_info`` / ``ducklake_partition_column``) is
a list of keys, each a column and a transform. Every data file holds the rows of one
partition, lives in a Hive-style directory of that partition (``s=x/year=2024/``, the key
named by the column for ``identity`` and by the transform otherwise, the value
percent-encoded, NULL as ``__HIVE_DEFAULT_PARTITION__``), and has its values recorded in
``ducklake_file_partition_value`` as text (NULL for NULL), which readers prune with.

Transforms written: ``identity`` (DuckDB's text of the value), ``year`` / ``month`` /
``day`` / ``hour`` (DuckDB 1.0's calendar parts: month 1-12, day of month, hour 0-23) and
DuckLake 1.1's ``epoch_year`` / ``epoch_month`` / ``epoch_day`` / ``epoch_hour`` (whole
units since 1970-01-01). A ``timestamptz`` key is computed in UTC (DuckDB uses its session's
time zone; the files' values and the recorded keys always agree). ``bucket(N)``: the bucket
DuckDB's hash puts the value in (``_buckets``), for every type it hashes as this package can.
A key's directory is named as DuckDB names it: the column (identity) or the transform, then
``transform_column`` where two keys would share a name.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import metadata
from ..errors import InvalidOptionError, UnsupportedFeatureError
from ._buckets import bucket_count, bucket_values, check_bucketable
from ._stats import cast_to_text

__all__ = [
    "NULL_DIRECTORY",
    "PartitionKey",
    "PartitionSpec",
    "partition_keys",
    "read_partition_spec",
    "split",
]

NULL_DIRECTORY = "__HIVE_DEFAULT_PARTITION__"
CALENDAR = ("year", "month", "day", "hour")
EPOCH = ("epoch_year", "epoch_month", "epoch_day", "epoch_hour")


@dataclass(frozen=True, slots=True)
class PartitionKey:
    """One key of a spec: the top-level column it reads and its transform."""

    column_id: int
    column_name: str
    transform: str
    type_name: str  # the column's DuckLake type (a bucket's hash depends on it)


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """The partitioning files are written under (``partition_id`` goes to each file)."""

    partition_id: int
    keys: tuple[PartitionKey, ...]


def read_partition_spec(session, table_id: int, snapshot: int, columns, description: str):
    """The table's partition spec live at ``snapshot``, or ``None`` (unpartitioned, or
    partitioning reset)."""
    rows = metadata.live_partition_columns(session, table_id, snapshot)
    if not rows:
        return None
    by_id = {c.column_id: c for c in columns}
    keys = []
    for _partition, _index, column_id, transform in rows:
        transform = str(transform).strip().lower().replace(" ", "")
        column = by_id.get(int(column_id))
        if column is None:
            raise UnsupportedFeatureError(
                f"{description}: the table is partitioned by a nested column (id "
                f"{column_id}), which this package does not write yet; write with DuckDB"
            )
        known = transform in ("identity", *CALENDAR, *EPOCH) or bucket_count(transform)
        if not known:
            raise UnsupportedFeatureError(
                f"{description}: the table is partitioned by {transform} of column "
                f"{column.name!r}, which this package does not write yet (nothing was "
                "written); write to it with DuckDB"
            )
        if bucket_count(transform):
            check_bucketable(column.type_name, f"{description}: column {column.name!r}")
        keys.append(PartitionKey(column.column_id, column.name, transform, column.type_name))
    return PartitionSpec(int(rows[0][0]), tuple(keys))


@dataclass(frozen=True, slots=True)
class Partition:
    """The rows of one batch that belong to one partition."""

    values: tuple[str | None, ...]  # ducklake_file_partition_value, key by key
    directory: str  # relative to the table's directory, ending with "/"
    rows: pa.Table


def split(table: pa.Table, spec: PartitionSpec) -> Iterator[Partition]:
    """The rows of ``table`` (in the files' schema), partition by partition."""
    keys = [_key_values(table.column(key.column_name), key) for key in spec.keys]
    names = _directory_names(spec.keys)
    encoded = [pc.dictionary_encode(k, null_encoding="encode") for k in keys]
    code = np.zeros(table.num_rows, dtype=np.int64)
    for array in encoded:
        code = code * len(array.dictionary) + array.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(ordered)]
    # partitions in the order their first rows come (as DuckDB numbers their files)
    runs = sorted(zip(starts, ends), key=lambda run: order[run[0]])
    for start, end in runs:
        first = order[start]
        values = tuple(_text(key.dictionary[key.indices[first].as_py()]) for key in encoded)
        directory = "".join(f"{name}={_directory_value(v)}/" for name, v in zip(names, values))
        rows = table.take(pa.array(order[start:end]))
        yield Partition(values, directory, rows)


def _key_values(column: pa.ChunkedArray, key: PartitionKey) -> pa.Array:
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    transform = key.transform
    if transform == "identity":
        return _one_zero_one_nan(column) if pa.types.is_floating(column.type) else column
    buckets = bucket_count(transform)
    if buckets:
        return bucket_values(column, key.type_name, buckets)
    if isinstance(column.type, pa.TimestampType) and column.type.tz is not None:
        column = column.cast(pa.timestamp(column.type.unit, tz="UTC"))
    if transform in CALENDAR:
        return getattr(pc, transform)(column)
    part = transform.removeprefix("epoch_")
    years = pc.subtract(pc.year(column), 1970)
    if part == "year":
        return years
    if part == "month":
        return pc.add(pc.multiply(years, 12), pc.subtract(pc.month(column), 1))
    if pa.types.is_date(column.type):
        days = column.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
        return days if part == "day" else pc.multiply(days, 24)
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[column.type.unit]
    unit = per_second * (86_400 if part == "day" else 3_600)
    return _floor_divide(column.cast(pa.int64()), unit)


def _one_zero_one_nan(column: pa.Array) -> pa.Array:
    """Floats as DuckDB partitions them: -0.0 with 0.0 (``0.0``), every NaN as one (``nan``)."""
    positive_zeros = pc.add(column, pa.scalar(0.0, column.type))  # -0.0 + 0.0 is 0.0
    nan = pa.scalar(float("nan"), column.type)
    return pc.if_else(pc.is_nan(column), nan, positive_zeros)


def _floor_divide(values: pa.Array, unit: int) -> pa.Array:
    """Whole ``unit``s, rounded down (before 1970 too), NULL kept."""
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    numbers = values.fill_null(0).to_numpy(zero_copy_only=False)
    return pa.array(np.floor_divide(numbers, unit), pa.int64(), mask=~valid)


def _text(scalar: pa.Scalar) -> str | None:
    """A key's value as ``ducklake_file_partition_value`` holds it (DuckDB's text)."""
    if not scalar.is_valid:
        return None
    if pa.types.is_integer(scalar.type):
        return str(scalar.as_py())
    if pa.types.is_string(scalar.type) or pa.types.is_large_string(scalar.type):
        return scalar.as_py()
    return cast_to_text(scalar)


def _directory_names(keys: Sequence[PartitionKey]) -> list[str]:
    """Each key's directory name as DuckDB picks it: the column for ``identity``, else the
    transform (``bucket`` for ``bucket(N)``); a name already taken (case-insensitively)
    becomes ``transform_column``, then ``transform_column_2``, ..."""
    taken: set[str] = set()
    names = []
    for key in keys:
        if key.transform == "identity":
            prefix = key.column_name
        else:
            prefix = "bucket" if bucket_count(key.transform) else key.transform
        name = prefix
        if name.lower() in taken:
            name = base = f"{prefix}_{key.column_name}"
            counter = 2
            while name.lower() in taken:
                name = f"{base}_{counter}"
                counter += 1
        taken.add(name.lower())
        names.append(urllib.parse.quote(name, safe=""))
    return names


def _directory_value(value: str | None) -> str:
    return NULL_DIRECTORY if value is None else urllib.parse.quote(value, safe="")


_KEY = re.compile(r"^\s*(?:(\w+)\s*\(\s*(.+?)\s*\)|(.+?))\s*$")
_TEMPORAL_KINDS = (
    "date",
    "timestamp",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
    "timestamptz",
)


def partition_keys(texts: Sequence[str], columns, table: str) -> tuple[PartitionKey, ...]:
    """``["region", "year(day)", "bucket(8, id)"]`` as keys of a new table's columns
    (DuckDB's ``PARTITIONED BY`` spelling; 1.0's calendar transforms, as DuckDB 1.5 writes
    them)."""
    if isinstance(texts, str):
        texts = [texts]
    by_name = {c.name.lower(): c for c in columns}
    keys = []
    for text in texts:
        match = _KEY.match(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidOptionError(f"table {table}: bad partition key {text!r}")
        transform = (match.group(1) or "identity").lower()
        name = match.group(2) or match.group(3)
        if transform == "bucket":
            transform, name = _bucket_key(text, name, table)
        elif transform not in ("identity", *CALENDAR):
            raise UnsupportedFeatureError(
                f"table {table}: partition key {text!r}: this package writes identity, year, "
                "month, day, hour and bucket keys; partition by the others in DuckDB"
            )
        column = by_name.get(name.strip('"').lower())
        if column is None:
            raise InvalidOptionError(
                f"table {table}: partition key {text!r} names no column (columns: "
                f"{', '.join(c.name for c in columns)})"
            )
        if column.children:
            raise UnsupportedFeatureError(
                f"table {table}: partition key {text!r}: nested columns cannot be keys"
            )
        if bucket_count(transform):
            check_bucketable(column.type_name, f"table {table}: partition key {text!r}")
        elif transform != "identity" and column.type_name not in _TEMPORAL_KINDS:
            raise InvalidOptionError(
                f"table {table}: partition key {text!r}: {transform}() needs a date or "
                f"timestamp column, and {column.name!r} is {column.type_name}"
            )
        if transform == "hour" and column.type_name == "date":
            raise InvalidOptionError(f"table {table}: partition key {text!r}: a date has no hour")
        keys.append(PartitionKey(column.column_id, column.name, transform, column.type_name))
    return tuple(keys)


def _bucket_key(text: str, arguments: str, table: str) -> tuple[str, str]:
    """``bucket(N, column)``: the transform as the catalog spells it and the column."""
    count, _, name = arguments.partition(",")
    count = count.strip()
    if not name.strip() or not count.isdigit() or not 0 < int(count) <= 2**31 - 1:
        raise InvalidOptionError(
            f"table {table}: partition key {text!r}: write bucket(N, column) with N a "
            "positive number of buckets"
        )
    return f"bucket({int(count)})", name.strip()
