"""Skip data files whose catalog statistics or partition values prove a filter cannot match.

The rule is one-sided: a file is skipped only when the statistics *prove* that no row can
satisfy the filter. Anything unknown (missing or truncated statistics, NaN present, an
expression shape we do not understand, a literal we cannot compare) keeps the file.
Statistics are bounds over all physical rows, deletes ignored, so they are valid for every
snapshot that sees the file.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

import pyarrow.compute as pc

from ..catalog._models import ColumnStatsEntry, DataFileEntry, TableFiles
from ..types import ColumnSpec
from ._filters import Call, Field, Literal, Node, decode_expression

__all__ = ["FilePruner", "stats_columns"]

_FLIP = {
    "less": "greater",
    "less_equal": "greater_equal",
    "greater": "less",
    "greater_equal": "less_equal",
    "equal": "equal",
    "not_equal": "not_equal",
}
_MAX_TEXT_BOUND = 256  # the writer truncates long string statistics at 256 characters
_TEMPORAL = {"year", "month", "day", "hour"}


class _Bounds:
    """Decoded statistics of one column in one file."""

    __slots__ = ("exact", "high", "low", "nulls", "rows")

    def __init__(self, low, high, nulls, rows, exact=False):
        self.low, self.high, self.nulls, self.rows, self.exact = low, high, nulls, rows, exact


def _parse(text: str | None, type_name: str):
    if text is None:
        return None
    kind = type_name.lower()
    try:
        if kind.startswith(("int", "uint")) and kind not in ("int128", "uint128"):
            return int(text)
        if kind in ("float32", "float64"):
            return float(text)
        if kind.startswith("decimal("):
            return Decimal(text)
        if kind in ("varchar",):
            return text
        if kind == "boolean":
            return text in ("1", "true")
        if kind == "date":
            return _dt.date.fromisoformat(text)
        if kind in ("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamp_us"):
            return _dt.datetime.fromisoformat(text)
        if kind == "timestamptz":
            return _dt.datetime.fromisoformat(text.replace("+00", "+00:00"))
    except (ValueError, InvalidOperation):
        return None
    return None


def stats_columns(filter: pc.Expression | None, columns: Sequence[ColumnSpec]) -> list[int]:
    """Column ids whose statistics can help prune for this filter."""
    if filter is None:
        return []
    from ._filters import referenced_columns

    names = referenced_columns(decode_expression(filter))
    return [c.column_id for c in columns if c.name in names and not c.children]


class FilePruner:
    """Decides per file whether it can be skipped for one filter."""

    def __init__(self, node: Node | None, columns: Sequence[ColumnSpec], files: TableFiles):
        self.node = node
        self.by_name = {c.name: c for c in columns}
        self.files = files

    @classmethod
    def create(cls, filter, columns, files) -> FilePruner:
        node = None
        if filter is not None:
            try:
                node = decode_expression(filter)
            except Exception:  # noqa: BLE001 - no pruning is always correct
                node = None
        return cls(node, columns, files)

    def skip_reason(self, entry: DataFileEntry) -> str | None:
        """``"stats"`` or ``"partition"`` when the file cannot match, else None."""
        if self.node is None:
            return None
        stats = self.files.stats.get(entry.data_file_id, {})
        if stats and not self._might_match(self.node, lambda c: self._stat_bounds(c, stats, entry)):
            return "stats"
        partitioned = entry.partition_id is not None and self.files.partition_values
        if partitioned and not self._might_match(
            self.node, lambda c: self._partition_bounds(c, entry)
        ):
            return "partition"
        return None

    def _stat_bounds(self, column: ColumnSpec, stats: dict, entry: DataFileEntry) -> _Bounds | None:
        s: ColumnStatsEntry | None = stats.get(column.column_id)
        if s is None:
            return None
        kind = column.type_name.lower()
        if kind in ("float32", "float64") and s.contains_nan is not False:
            return None
        low, high = _parse(s.min_value, kind), _parse(s.max_value, kind)
        if kind == "varchar" and s.max_value is not None and len(s.max_value) >= _MAX_TEXT_BOUND:
            high = None
        if kind == "date" and (
            s.min_value in ("infinity", "-infinity") or s.max_value in ("infinity", "-infinity")
        ):
            return None
        return _Bounds(low, high, s.null_count, entry.record_count)

    def _partition_bounds(self, column: ColumnSpec, entry: DataFileEntry) -> _Bounds | None:
        keys = self.files.partition_columns.get(entry.partition_id, ())
        values = self.files.partition_values.get(entry.data_file_id, {})
        for key in keys:
            if key.column_id == column.column_id and key.transform == "identity":
                text = values.get(key.partition_key_index)
                value = _parse(text, column.type_name)
                if text is not None and value is None:
                    return None
                nulls = entry.record_count if text is None else 0
                return _Bounds(value, value, nulls, entry.record_count, exact=True)
        return self._temporal_bounds(column, entry, keys, values)

    def _temporal_bounds(self, column, entry, keys, values) -> _Bounds | None:
        """year() partitions bound a date/timestamp column to one calendar year."""
        kind = column.type_name.lower()
        if kind not in ("date", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns"):
            return None
        for key in keys:
            if key.column_id == column.column_id and key.transform == "year":
                text = values.get(key.partition_key_index)
                if text is None:
                    return None
                year = int(text)
                if kind == "date":
                    return _Bounds(
                        _dt.date(year, 1, 1), _dt.date(year, 12, 31), None, entry.record_count
                    )
                return _Bounds(
                    _dt.datetime(year, 1, 1),
                    _dt.datetime(year, 12, 31, 23, 59, 59, 999999),
                    None,
                    entry.record_count,
                )
        return None

    def _might_match(self, node: Node, bounds_of) -> bool:
        if not isinstance(node, Call):
            return True
        name = node.function
        if name in ("and", "and_kleene"):
            return all(self._might_match(a, bounds_of) for a in node.args)
        if name in ("or", "or_kleene"):
            return any(self._might_match(a, bounds_of) for a in node.args)
        if name in ("is_null", "is_valid") and len(node.args) == 1:
            bounds = self._bounds(node.args[0], bounds_of)
            if bounds is None or bounds.nulls is None:
                return True
            return bounds.nulls > 0 if name == "is_null" else bounds.nulls < bounds.rows
        if name == "invert" and len(node.args) == 1:
            inner = node.args[0]
            if isinstance(inner, Call) and inner.function == "is_null":
                return self._might_match(Call("is_valid", inner.args), bounds_of)
            return True
        if name == "is_in" and len(node.args) == 1 and node.options:
            bounds = self._bounds(node.args[0], bounds_of)
            values = node.options.get("value_set") or []
            if bounds is None:
                return True
            return any(self._compare("equal", bounds, v) for v in values if v is not None)
        if name in _FLIP and len(node.args) == 2:
            left, right = node.args
            if isinstance(left, Literal) and isinstance(right, Field):
                left, right, name = right, left, _FLIP[name]
            if isinstance(left, Field) and isinstance(right, Literal):
                bounds = self._bounds(left, bounds_of)
                if bounds is None:
                    return True
                return self._compare(name, bounds, right.value.as_py())
        return True

    def _bounds(self, node: Node, bounds_of) -> _Bounds | None:
        if not isinstance(node, Field) or len(node.path) != 1:
            return None
        column = self.by_name.get(node.path[0])
        return None if column is None else bounds_of(column)

    @staticmethod
    def _compare(op: str, b: _Bounds, value) -> bool:
        """Might some non-null value in [low, high] satisfy ``x op value``?"""
        if value is None:
            return True
        if b.low is None and b.high is None:
            # all values NULL proves no match; otherwise unknown
            return not (b.nulls is not None and b.nulls >= b.rows)
        try:
            if op == "equal":
                return (b.low is None or b.low <= value) and (b.high is None or value <= b.high)
            if op == "not_equal":
                return not (b.low is not None and b.low == b.high == value)
            if op == "less":
                return b.low is None or b.low < value
            if op == "less_equal":
                return b.low is None or b.low <= value
            if op == "greater":
                return b.high is None or b.high > value
            if op == "greater_equal":
                return b.high is None or b.high >= value
        except TypeError:
            return True
        return True
