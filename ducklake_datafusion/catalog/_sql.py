"""The SQL and value decoding that every catalog query module shares.

The query modules (names, the file list, its refresh and cut, the change history, column
comments) all need the snapshot-visibility rule, the text of the file queries with the
Arrow schemas those are fetched as, and the decoding of values that catalog databases
spell differently (booleans and times as text in SQLite). They live here, in a module that
imports no other query module, so that the query modules can share them without
importing one another.

The SQL is plain and dialect neutral (DuckDB, SQLite, PostgreSQL) with ``?`` placeholders;
all values are bound parameters. MySQL's backend re-spells the few things MySQL reads
otherwise (``_mysql.mysql_sql``).
"""

from __future__ import annotations

import datetime as _dt
import re

import pyarrow as pa

__all__ = [
    "DATA_FILES_SCHEMA",
    "DATA_FILES_SQL",
    "DELETE_COLUMNS",
    "DELETE_FILES_SCHEMA",
    "DELETE_FILES_SQL",
    "FILE_COLUMNS",
    "PARTITION_VALUES_SCHEMA",
    "STATS_SCHEMA",
    "as_bool",
    "as_timestamp",
    "live",
    "opt_int",
]


def live(alias: str = "") -> str:
    """The snapshot-visibility rule, written once: begin inclusive, end exclusive.

    Binds the snapshot id twice.
    """
    p = f"{alias}." if alias else ""
    return f"{p}begin_snapshot <= ? AND ({p}end_snapshot IS NULL OR ? < {p}end_snapshot)"


def as_bool(value: object) -> bool:
    """Catalog booleans: bools or numbers, or text (``t``, ``true``, ``1``) from SQLite."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "t", "true")
    return bool(value)


def as_timestamp(value: object) -> _dt.datetime:
    """Snapshot times: datetimes from DuckDB/PostgreSQL, variable-length text from SQLite
    and (without a fraction) MySQL."""
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    text = str(value).strip().replace(" ", "T", 1)
    match = re.match(r"^(.*?)([+-]\d{2})(:?\d{2})?$", text)
    if match and "T" in match.group(1):
        text = match.group(1) + match.group(2) + ":" + (match.group(3) or "00").lstrip(":")
    # Python 3.10's fromisoformat wants exactly 3 or 6 fraction digits.
    text = re.sub(r"\.(\d{1,6})\d*", lambda m: "." + m.group(1).ljust(6, "0"), text, count=1)
    parsed = _dt.datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)


def opt_int(value: object) -> int | None:
    """A nullable integer column's value."""
    return None if value is None else int(value)


FILE_COLUMNS = (
    "data_file_id", "path", "path_is_relative", "file_format", "record_count",
    "file_size_bytes", "footer_size", "row_id_start", "begin_snapshot", "partial_max",
    "mapping_id", "partition_id", "encrypted", "encryption_key", "delete_file_id",
    "delete_path", "delete_path_is_relative", "delete_format", "delete_count", "delete_size",
    "delete_footer_size", "delete_begin_snapshot", "delete_encrypted", "delete_encryption_key",
)  # fmt: skip

# Live data files with their live delete file, columnar for the planner: read with two plain
# queries and joined in Arrow (SQLite builds a temporary index for the SQL join every time).
DATA_FILES_SQL = (
    "SELECT data_file_id, path, path_is_relative, file_format, record_count, file_size_bytes, "
    "footer_size, row_id_start, begin_snapshot, partial_max, mapping_id, partition_id, "
    "CASE WHEN encryption_key IS NULL THEN 0 ELSE 1 END AS encrypted, encryption_key "
    f"FROM ducklake_data_file WHERE table_id = ? AND {live()}"
)
DELETE_FILES_SQL = (
    "SELECT data_file_id, delete_file_id, path, path_is_relative, format, delete_count, "
    "file_size_bytes, footer_size, begin_snapshot, "
    "CASE WHEN encryption_key IS NULL THEN 0 ELSE 1 END AS encrypted, encryption_key "
    f"FROM ducklake_delete_file WHERE table_id = ? AND {live()}"
)
DELETE_COLUMNS = FILE_COLUMNS[14:]

_I64, _TEXT, _BOOL = pa.int64(), pa.string(), pa.bool_()
DATA_FILES_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("path", _TEXT), ("path_is_relative", _BOOL),
        ("file_format", _TEXT), ("record_count", _I64), ("file_size_bytes", _I64),
        ("footer_size", _I64), ("row_id_start", _I64), ("begin_snapshot", _I64),
        ("partial_max", _I64), ("mapping_id", _I64), ("partition_id", _I64),
        ("encrypted", _I64), ("encryption_key", _TEXT),
    ]
)  # fmt: skip
DELETE_FILES_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("delete_file_id", _I64), ("path", _TEXT),
        ("path_is_relative", _BOOL), ("format", _TEXT), ("delete_count", _I64),
        ("file_size_bytes", _I64), ("footer_size", _I64), ("begin_snapshot", _I64),
        ("encrypted", _I64), ("encryption_key", _TEXT),
    ]
)  # fmt: skip
STATS_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("column_id", _I64), ("value_count", _I64),
        ("null_count", _I64), ("min_value", _TEXT), ("max_value", _TEXT),
        ("contains_nan", _BOOL),
    ]
)  # fmt: skip
PARTITION_VALUES_SCHEMA = pa.schema(
    [("data_file_id", _I64), ("partition_key_index", _I64), ("partition_value", _TEXT)]
)
