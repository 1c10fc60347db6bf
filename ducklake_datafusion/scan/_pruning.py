"""Skip data files whose catalog statistics or partition values prove a filter cannot match.

The rule is one-sided: a file is skipped only when the statistics *prove* that no row can
satisfy the filter. Anything unknown (missing or truncated statistics, NaN present, an
expression shape we do not understand, a literal we cannot compare) keeps the file.
Statistics are bounds over all physical rows, deletes ignored, so they are valid for every
snapshot that sees the file.

Everything is vectorised over the files of the table (one Arrow array per bound), so
pruning 10,000 files costs a few array operations per filter term, not 10,000 Python calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..catalog import ColumnSpec, TableFiles, arrow_type_for
from ._filter import (
    COMPARISONS,
    And,
    Column,
    Compare,
    Filter,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    columns_of,
)
from ._filter_arrow import scalar_of

__all__ = ["FilePruner", "in_values", "stats_columns"]

_MAX_TEXT_BOUND = 256  # the writer truncates long string statistics at 256 characters
_TIMESTAMPS = ("timestamp", "timestamp_us", "timestamp_s", "timestamp_ms", "timestamp_ns")
# DuckLake 1.1's epoch transforms: whole periods since 1970-01-01 (negative before it), of
# the UTC instant for TIMESTAMPTZ, of nanoseconds floored to microseconds.
_EPOCH_UNITS = {"epoch_year": "Y", "epoch_month": "M", "epoch_day": "D", "epoch_hour": "h"}
_EPOCH_TYPES = (*_TIMESTAMPS, "date", "timestamptz", "timestamp with time zone", "timestamptz_ns")


@dataclass(frozen=True)
class _Bounds:
    """Per-file bounds of one column: arrays aligned with the file table (null = unknown)."""

    low: pa.Array
    high: pa.Array
    nulls: np.ndarray  # float, NaN = unknown
    rows: np.ndarray


def stats_columns(filter: Filter | None, columns: Sequence[ColumnSpec]) -> list[int]:
    """Column ids whose statistics can help prune for this filter."""
    if filter is None:
        return []
    names = columns_of(filter)
    return [c.column_id for c in columns if c.name in names and not c.children]


def _decode(text: pa.Array, column: ColumnSpec) -> pa.Array | None:
    """Statistics text -> typed values (None when the type has no usable bounds)."""
    kind = column.type_name.lower()
    text = text.cast(pa.string())
    try:
        if kind in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
            return text.cast(column.arrow_type)
        if kind in ("float32", "float64"):
            return text.cast(pa.float64())
        if kind.startswith("decimal("):
            return text.cast(column.arrow_type)
        if kind == "varchar":
            return text
        if kind == "boolean":
            return text.cast(pa.int8()).cast(pa.bool_())
        if kind == "date":
            finite = pc.if_else(pc.match_substring(text, "infinity"), None, text)
            return finite.cast(pa.date32())
        if kind in _TIMESTAMPS:
            return text.cast(pa.timestamp("us")).cast(column.arrow_type, safe=False)
        if kind == "timestamptz":
            utc = pc.replace_substring_regex(text, r"\+00$", "")
            return utc.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return None


_UNSET = object()


class FilePruner:
    """Decides, for all files of a table at once, which ones a filter can skip."""

    def __init__(self, node: Filter | None, columns: Sequence[ColumnSpec], files: TableFiles):
        self.node = node
        self.by_name = {c.name: c for c in columns}
        self.files = files
        table = files.file_table
        self.file_ids, self.rows = self._derived(
            ("file ids, rows",),
            lambda: (
                table.column("data_file_id").cast(pa.int64()),
                table.column("record_count").to_numpy(zero_copy_only=False).astype(float),
            ),
        )

    def _derived(self, key: tuple, compute):
        """Decoded bounds depend only on the files and the column: kept with the files."""
        memo = self.files.derived
        key = ("pruning", *key)
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def stat_bounds(self, column: ColumnSpec) -> _Bounds | None:
        key = ("stats", column.column_id, column.type_name)
        return self._derived(key, lambda: self._decode_stat_bounds(column))

    def partition_bounds(self, column: ColumnSpec) -> _Bounds | None:
        key = ("partition", column.column_id, column.type_name)
        return self._derived(key, lambda: self._decode_partition_bounds(column))

    def masks(self) -> tuple[np.ndarray, np.ndarray]:
        """(may match by statistics, may match by partition values), one bool per file."""
        n = len(self.rows)
        everything = np.ones(n, dtype=bool)
        if self.node is None or n == 0:
            return everything, everything
        by_stats = everything
        if self.files.stats is not None and self.files.stats.num_rows:
            by_stats = self._might_match(self.node, self.stat_bounds)
        by_partition = everything
        if self.files.partition_values is not None and self.files.partition_values.num_rows:
            by_partition = self._might_match(self.node, self.partition_bounds)
        return by_stats, by_partition

    # -- bounds -------------------------------------------------------------------------

    def _align(self, ids: pa.Array, values: pa.Array, positions=_UNSET) -> pa.Array:
        """``values`` (keyed by ``ids``) reordered to the file table, null where missing.
        ``positions``: :meth:`_positions` of ``ids``, when already known."""
        if positions is _UNSET:
            positions = self._positions(ids)
        return values if positions is None else values.take(positions)

    def _positions(self, ids: pa.Array) -> pa.Array | None:
        """Where each file's row is in ``ids`` (null: none), or None if ``ids`` are the
        file ids themselves, in order. Statistics rows usually come sorted by file id:
        then a binary search, which needs no hash table of the ids."""
        ids = ids.cast(pa.int64())
        if len(ids) == len(self.file_ids) and pc.all(pc.equal(ids, self.file_ids)).as_py():
            return None
        keys = ids.to_numpy(zero_copy_only=False)
        if ids.null_count == 0 and len(keys) and bool(np.all(keys[1:] > keys[:-1])):
            wanted = self.file_ids.to_numpy(zero_copy_only=False)
            where = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            return pa.array(where, pa.int64(), mask=keys[where] != wanted)
        return pc.index_in(self.file_ids, value_set=ids)

    def _decode_stat_bounds(self, column: ColumnSpec) -> _Bounds | None:
        stats = self.files.stats
        rows = stats.filter(pc.equal(stats.column("column_id").cast(pa.int64()), column.column_id))
        if rows.num_rows == 0:
            return None
        ids = rows.column("data_file_id").combine_chunks()
        low = _decode(rows.column("min_value").combine_chunks(), column)
        high = _decode(rows.column("max_value").combine_chunks(), column)
        if low is None or high is None:
            return None
        kind = column.type_name.lower()
        if kind in ("float32", "float64"):
            nan_free = pc.equal(
                rows.column("contains_nan").combine_chunks().cast(pa.bool_()), False
            )
            nan_free = nan_free.fill_null(False)
            low = pc.if_else(nan_free, low, None)
            high = pc.if_else(nan_free, high, None)
        if kind == "varchar":
            raw_high = rows.column("max_value").combine_chunks().cast(pa.string())
            short = pc.less(pc.utf8_length(raw_high), _MAX_TEXT_BOUND).fill_null(True)
            high = pc.if_else(short, high, None)
        positions = self._positions(ids)
        nulls = self._align(
            ids, rows.column("null_count").combine_chunks().cast(pa.float64()), positions
        )
        return _Bounds(
            self._align(ids, low, positions),
            self._align(ids, high, positions),
            nulls.to_numpy(zero_copy_only=False),
            self.rows,
        )

    def _decode_partition_bounds(self, column: ColumnSpec) -> _Bounds | None:
        """Bounds from each partition spec that partitions on ``column``.

        Identity partitions give exact values. The temporal transforms store calendar
        fields (year; month of year; day of month; hour of day), so they bound a date or
        timestamp only together with the year of the same spec: year alone gives the
        year, year+month the month, and so on. TIMESTAMPTZ is never pruned by them: the
        writer computes the fields in its session's time zone, which the catalog does not
        record. DuckLake 1.1's epoch transforms count whole periods since 1970 (of the
        UTC instant), so each bounds the column alone, TIMESTAMPTZ included; several of
        one spec are intersected.
        """
        values = self.files.partition_values
        partition_ids = self.files.file_table.column("partition_id").to_numpy(zero_copy_only=False)
        parts = []
        for spec_id, keys in self.files.partition_columns.items():
            mine = {k.transform: k for k in keys if k.column_id == column.column_id}
            decoded = None
            if "identity" in mine:
                decoded = self._identity_bounds(column, mine["identity"], values)
            if decoded is None:
                decoded = self._epoch_bounds(column, mine, values)
            if decoded is None:
                decoded = self._calendar_bounds(column, mine, values)
            if decoded is not None:
                parts.append((pa.array(partition_ids == spec_id), *decoded))
        if not parts:
            return None
        n = len(self.rows)
        low = pa.nulls(n, column.arrow_type)
        high = pa.nulls(n, column.arrow_type)
        nulls = np.full(n, np.nan)
        for mask, lo, hi, nu in parts:
            low = pc.if_else(mask, lo, low)
            high = pc.if_else(mask, hi, high)
            nulls = np.where(mask.to_numpy(zero_copy_only=False), nu, nulls)
        return _Bounds(low, high, nulls, self.rows)

    def _key_values(self, key, values: pa.Table) -> tuple[pa.Array, np.ndarray]:
        """The key's partition value text per file, and the null count it implies."""
        index = pc.equal(
            values.column("partition_key_index").cast(pa.int64()), key.partition_key_index
        )
        rows = values.filter(index)
        ids = rows.column("data_file_id").combine_chunks()
        text = self._align(ids, rows.column("partition_value").combine_chunks().cast(pa.string()))
        is_null = pc.is_null(text).to_numpy(zero_copy_only=False)
        present = pc.is_in(self.file_ids, value_set=ids.cast(pa.int64())).to_numpy(
            zero_copy_only=False
        )
        return text, np.where(present, np.where(is_null, self.rows, 0.0), np.nan)

    def _identity_bounds(self, column: ColumnSpec, key, values: pa.Table):
        text, nulls = self._key_values(key, values)
        typed = _decode(text, column)
        return None if typed is None else (typed, typed, nulls)

    def _epoch_bounds(self, column: ColumnSpec, keys: dict, values: pa.Table):
        kind = column.type_name.lower()
        epochs = [k for k in _EPOCH_UNITS if k in keys]
        if not epochs or kind not in _EPOCH_TYPES:
            return None
        unit = "D" if kind == "date" else column.arrow_type.unit
        low = high = nulls = None
        for transform in epochs:
            text, field_nulls = self._key_values(keys[transform], values)
            try:
                numbers = text.cast(pa.int64()).to_numpy(zero_copy_only=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
            known = ~np.isnan(numbers.astype(float))
            start, end = _epoch_span(
                np.where(known, np.nan_to_num(numbers.astype(float)), 0).astype(np.int64),
                _EPOCH_UNITS[transform],
                unit,
            )
            start = np.where(known, start, np.datetime64("NaT"))
            end = np.where(known, end, np.datetime64("NaT"))
            if low is None:
                low, high, nulls = start, end, field_nulls
            else:  # NaT (unknown) never narrows: fmax/fmin ignore it
                low, high = np.fmax(low, start), np.fmin(high, end)
        mask = pa.array(np.isnat(low))
        arrow = column.arrow_type
        low = pc.if_else(mask, None, pa.array(low, pa.timestamp(unit) if unit != "D" else None))
        high = pc.if_else(mask, None, pa.array(high, pa.timestamp(unit) if unit != "D" else None))
        return low.cast(arrow), high.cast(arrow), nulls

    def _calendar_bounds(self, column: ColumnSpec, keys: dict, values: pa.Table):
        kind = column.type_name.lower()
        if "year" not in keys or not (kind == "date" or kind in _TIMESTAMPS):
            return None
        fields = ["year"]
        for name in ("month", "day", "hour"):  # each narrows the one before it
            if name not in keys or (name == "hour" and kind == "date"):
                break
            fields.append(name)
        numbers = {}
        for name in fields:
            text, field_nulls = self._key_values(keys[name], values)
            if name == "year":
                nulls = field_nulls
            try:
                numbers[name] = text.cast(pa.int64()).to_numpy(zero_copy_only=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        known = ~np.isnan(np.column_stack([numbers[f] for f in fields]).astype(float)).any(axis=1)
        start, end = _calendar_span(
            {
                f: np.where(known, np.nan_to_num(numbers[f].astype(float)), 0).astype(np.int64)
                for f in fields
            },
            date=kind == "date",
            unit=None if kind == "date" else column.arrow_type.unit,
        )
        if kind != "date" and column.arrow_type.unit == "ns":
            start = start - _NS_WRITER_SLACK
        mask = pa.array(~known)
        low = pc.if_else(mask, None, pa.array(start).cast(column.arrow_type))
        high = pc.if_else(mask, None, pa.array(end).cast(column.arrow_type))
        return low, high, nulls

    # -- the filter tree ----------------------------------------------------------------

    def _might_match(self, node: Filter, bounds_of: Callable) -> np.ndarray:
        n = len(self.rows)
        keep = np.ones(n, dtype=bool)
        if isinstance(node, And):
            for part in node.parts:
                keep &= self._might_match(part, bounds_of)
            return keep
        if isinstance(node, Or):
            keep[:] = False
            for part in node.parts:
                keep |= self._might_match(part, bounds_of)
            return keep
        if isinstance(node, Not) and isinstance(node.part, IsNull):
            inner = node.part
            return self._might_match(IsNull(inner.column, not inner.negated), bounds_of)
        if isinstance(node, IsNull):
            bounds = self._bounds(node.column, bounds_of)
            if bounds is None:
                return keep
            unknown = np.isnan(bounds.nulls)
            if not node.negated:
                return unknown | (bounds.nulls > 0)
            return unknown | (bounds.nulls < bounds.rows)
        if isinstance(node, In):
            bounds = self._bounds(node.column, bounds_of)
            values = in_values(node)
            if bounds is None or not values:
                return keep
            keep[:] = False
            arrow_type = arrow_type_for(node.type)
            for value in values:
                keep |= self._compare("=", bounds, pa.scalar(value, arrow_type))
            return keep
        if isinstance(node, Compare):
            left, right, op = node.left, node.right, node.op
            if isinstance(left, Literal) and isinstance(right, Column):
                left, right, op = right, left, COMPARISONS[op]
            if isinstance(left, Column) and isinstance(right, Literal):
                bounds = self._bounds(left, bounds_of)
                if bounds is not None:
                    try:
                        value = scalar_of(right)
                    except (pa.ArrowException, TypeError, ValueError):
                        return keep
                    return self._compare(op, bounds, value)
        return keep

    def _bounds(self, column: Column, bounds_of: Callable) -> _Bounds | None:
        if not isinstance(column, Column) or column.path or not isinstance(column.ref, str):
            return None
        spec = self.by_name.get(column.ref)
        return None if spec is None else bounds_of(spec)

    @staticmethod
    def _compare(op: str, b: _Bounds, value: pa.Scalar) -> np.ndarray:
        """Might some non-null value in [low, high] satisfy ``x op value``? (per file)"""
        keep = np.ones(len(b.rows), dtype=bool)
        if not value.is_valid:
            return keep
        try:
            value = value.cast(b.low.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return keep
        if pa.types.is_floating(value.type) and np.isnan(value.as_py()):
            return keep

        def test(result) -> np.ndarray:
            return result.fill_null(True).to_numpy(zero_copy_only=False)

        if op == "=":
            keep = test(pc.less_equal(b.low, value)) & test(pc.greater_equal(b.high, value))
        elif op == "!=":
            # every non-NULL value equals `value` (NULLs never satisfy `<>` either)
            single = pc.and_(pc.equal(b.low, value), pc.equal(b.high, value)).fill_null(False)
            keep = ~single.to_numpy(zero_copy_only=False)
        elif op == "<":
            keep = test(pc.less(b.low, value))
        elif op == "<=":
            keep = test(pc.less_equal(b.low, value))
        elif op == ">":
            keep = test(pc.greater(b.high, value))
        elif op == ">=":
            keep = test(pc.greater_equal(b.high, value))
        all_null = (b.nulls >= b.rows) & pc.is_null(b.low).to_numpy(zero_copy_only=False)
        return keep & ~all_null


def in_values(node: In) -> list | None:
    """The non-null values an ``In`` can match, or None when null rows may match too
    (a null in the values, not skipped: pyarrow's default null matching): then no file
    can be left out for its values."""
    if any(v is None for v in node.values) and not node.skip_nulls:
        return None
    return [v for v in node.values if v is not None]


# DuckDB 1.5.5 computes the calendar partition of a TIMESTAMP_NS value from the value
# truncated toward zero to microseconds: 1969-12-31 23:59:59.999999999 goes to year=1970.
# Such a value lies up to 999 ns before its partition's first microsecond.
_NS_WRITER_SLACK = np.timedelta64(999, "ns")


def _epoch_span(periods: np.ndarray, period: str, unit: str):
    """First and last value (in ``unit``: ``D`` for dates) of each epoch period
    (``Y``/``M``/``D``/``h`` since 1970-01-01)."""
    start = periods.astype(f"datetime64[{period}]")
    following = start + np.timedelta64(1, period)
    if unit == "D":  # a date lies in the period when its midnight does
        start_us = start.astype("datetime64[us]")
        first = start_us.astype("datetime64[D]")  # floors
        first = np.where(first.astype("datetime64[us]") < start_us, first + 1, first)
        last = (following.astype("datetime64[us]") - np.timedelta64(1, "us")).astype(
            "datetime64[D]"
        )
        return first, last
    start = start.astype(f"datetime64[{unit}]")
    return start, following.astype(f"datetime64[{unit}]") - np.timedelta64(1, unit)


def _calendar_span(fields: dict, *, date: bool, unit: str | None):
    """First and last value (dates, or timestamps in ``unit``) of calendar periods.

    ``fields`` holds int arrays: ``year`` and optionally ``month`` (1-12), ``day`` (1-31),
    ``hour`` (0-23), each narrowing the previous one.
    """
    year = fields["year"]
    month = fields.get("month", np.ones_like(year))
    months = ((year - 1970) * 12 + (month - 1)).astype("datetime64[M]")
    if "day" in fields:
        start = months.astype("datetime64[D]") + (fields["day"] - 1).astype("timedelta64[D]")
        following = start + np.timedelta64(1, "D")
    elif "month" in fields:
        start = months.astype("datetime64[D]")
        following = (months + np.timedelta64(1, "M")).astype("datetime64[D]")
    else:
        start = months.astype("datetime64[D]")
        following = (months + np.timedelta64(12, "M")).astype("datetime64[D]")
    if date:
        return start, following - np.timedelta64(1, "D")
    start = start.astype(f"datetime64[{unit}]")
    following = following.astype(f"datetime64[{unit}]")
    if "hour" in fields:
        start = start + fields["hour"].astype("timedelta64[h]").astype(f"timedelta64[{unit}]")
        following = start + np.timedelta64(1, "h").astype(f"timedelta64[{unit}]")
    return start, following - np.timedelta64(1, unit)
