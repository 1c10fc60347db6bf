"""Widen a table's column statistics to take new files in (``ducklake_table_column_stats``).

The stored bounds are text in the catalog's encoding; comparing them as text would put
``'10'`` below ``'9'``, so each type is compared as its values: numbers as numbers (NaN
above every other float, as DuckDB orders it), text and UUIDs bytewise, blobs by their
hex-decoded bytes, booleans in either spelling DuckDB stores (``0``/``1`` from files,
``false``/``true`` from inlined rows), and dates, times and timestamps by DuckDB's own
cast of the text. A bound that cannot be compared (text this code cannot read, or a file
or table that has values but no bound) makes the widened bound unknown (NULL), which
every reader takes as "do not prune": never a bound narrower than the data.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation

__all__ = ["widen"]

_TEMPORAL = {
    "date": "DATE",
    "time": "TIME",
    "timestamp": "TIMESTAMP",
    "timestamp_us": "TIMESTAMP",
    "timestamp_s": "TIMESTAMP_S",
    "timestamp_ms": "TIMESTAMP_MS",
    "timestamp_ns": "TIMESTAMP_NS",
    "timestamptz": "TIMESTAMPTZ",
}
_LOCK = threading.Lock()
_DUCKDB = None


def widen(type_name: str, held: Sequence | None, files: Sequence) -> tuple:
    """``(contains_null, contains_nan, min_value, max_value)`` for the table after the
    commit, from the row held (``(contains_null, contains_nan, min, max)`` or ``None``)
    and the new files' ``FileColumnStats`` of that column."""
    kind = type_name.lower()
    is_float = kind in ("float32", "float64")
    contains_null = any(f.null_count for f in files) or bool(held and _truthy(held[0]))
    contains_nan = None
    if is_float and not (held is not None and held[1] is None):
        # (a NaN flag the table's row does not know, as after inlined inserts, stays
        # unknown: DuckDB merges a file's known flag into an unknown one as unknown)
        contains_nan = any(bool(f.contains_nan) for f in files) or bool(held and _truthy(held[1]))
    key = _key_function(kind)
    lows = [f.min_value for f in files if f.value_count]
    highs = [f.max_value for f in files if f.value_count]
    if held is not None:
        lows.append(held[2])
        highs.append(held[3])
    return (
        contains_null,
        contains_nan,
        _pick(lows, key, min) if lows else None,
        _pick(highs, key, max) if highs else None,
    )


def _truthy(value) -> bool:
    return value in (True, 1, "1", "true", "t")


def _pick(texts: list, key: Callable | None, choose) -> str | None:
    # (text with a NUL: DuckDB keeps no table-wide bound for it either)
    if key is None or any(t is None or "\0" in t for t in texts):
        return None
    if getattr(key, "picks_itself", False):
        return key(texts, choose)
    try:
        keyed = [(key(t), t) for t in texts]
    except (ValueError, InvalidOperation, TypeError):
        return None
    if any(k is None for k, _ in keyed):
        return None
    return choose(keyed, key=lambda pair: pair[0])[1]


def _key_function(kind: str) -> Callable | None:
    if kind.startswith(("int", "uint", "decimal")):
        return Decimal
    if kind in ("float32", "float64"):
        return _float_key
    if kind == "boolean":
        return {"0": 0, "false": 0, "1": 1, "true": 1}.get
    if kind in ("varchar", "json", "uuid"):
        return lambda text: text.encode()
    if kind == "blob":
        return bytes.fromhex
    if kind in _TEMPORAL:
        return _temporal_picker(_TEMPORAL[kind])
    return None


def _float_key(text: str) -> tuple[int, float]:
    value = float(text)
    return (1, 0.0) if math.isnan(value) else (0, value)


def _temporal_picker(sql_type: str) -> Callable:
    """Pick by DuckDB's cast of the text (``infinity``, trimmed fractions, offsets)."""

    def pick(texts: list[str], choose) -> str | None:
        global _DUCKDB
        import duckdb

        order = "ASC" if choose is min else "DESC"
        with _LOCK:
            if _DUCKDB is None:
                _DUCKDB = duckdb.connect(":memory:", config={"threads": 1})
            rows = _DUCKDB.execute(
                f"SELECT t, TRY_CAST(t AS {sql_type}) IS NULL FROM "
                f"(SELECT unnest(CAST(? AS VARCHAR[])) AS t) ORDER BY TRY_CAST(t AS {sql_type}) "
                f"{order} NULLS FIRST",
                [list(texts)],
            ).fetchall()
        return None if not rows or any(r[1] for r in rows) else rows[0][0]

    pick.picks_itself = True
    return pick
