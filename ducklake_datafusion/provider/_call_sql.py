"""``CALL ducklake_<maintenance>('lake', ...)`` in a session, as DuckDB users spell it.

``ducklake_datafusion.sql(ctx, text)`` sends a ``CALL`` of one of DuckDB's maintenance
functions here: the first argument names a lake registered in the session, a second (where
DuckDB takes one) a table; named arguments (``max_compacted_files => 1``, ``older_than =>
now() - INTERVAL '1 week'``, ``versions => [2, 3]``) are evaluated by DataFusion in the same
session, so any expression it knows works. The result is the function's rows, with DuckDB's
columns, as a DataFusion DataFrame.
"""

from __future__ import annotations

import datetime as _dt
import re

import pyarrow as pa

from ..errors import InvalidOptionError
from ._sql_text import split_commas, split_name, unquote

__all__ = ["is_maintenance_call", "run_call"]

# function -> (positional arguments it takes at most, its named arguments)
FUNCTIONS = {
    "ducklake_merge_adjacent_files": (
        2,
        {"schema", "max_compacted_files", "min_file_size", "max_file_size"},
    ),
    "ducklake_rewrite_data_files": (2, {"schema", "delete_threshold"}),
    "ducklake_expire_snapshots": (1, {"older_than", "versions", "dry_run"}),
    "ducklake_cleanup_old_files": (1, {"older_than", "cleanup_all", "dry_run"}),
    "ducklake_delete_orphaned_files": (1, {"older_than", "cleanup_all", "dry_run"}),
}
_CALL = re.compile(
    r"\s*CALL\s+([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)
_NAMED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|=>)\s*(.+)$", re.DOTALL)

MERGE_SCHEMA = pa.schema(
    [
        ("schema_name", pa.string()),
        ("table_name", pa.string()),
        ("files_processed", pa.int64()),
        ("files_created", pa.int64()),
    ]
)
PATHS_SCHEMA = pa.schema([("path", pa.string())])


def is_maintenance_call(text: str) -> bool:
    """Whether ``text`` is a ``CALL`` of a maintenance function this package runs."""
    match = _CALL.match(text)
    return match is not None and match.group(1).lower() in FUNCTIONS


def run_call(ctx, text: str, lakes: dict, **commit_options):
    """Run the ``CALL`` (``is_maintenance_call``) against a lake of ``lakes`` (by the
    name it is registered under); its rows as a DataFrame."""
    match = _CALL.match(text)
    function = match.group(1).lower()
    positional, named = _arguments(ctx, function, match.group(2))
    most, allowed = FUNCTIONS[function]
    if not positional or len(positional) > most:
        takes = "the lake's name" + (" and optionally a table's" if most == 2 else "")
        raise InvalidOptionError(f"{function} takes {takes}, got {len(positional)} argument(s)")
    unknown = sorted(set(named) - allowed)
    if unknown:
        raise InvalidOptionError(
            f"{function} has no argument(s) {unknown}; it takes {', '.join(sorted(allowed))}"
        )
    lake_name = positional[0]
    if not isinstance(lake_name, str) or lake_name not in lakes:
        raise InvalidOptionError(
            f"{function}: {lake_name!r} is not a lake registered in this session "
            f"(registered: {', '.join(sorted(lakes)) or 'none'}); register it first"
        )
    lake = lakes[lake_name]
    if function in ("ducklake_merge_adjacent_files", "ducklake_rewrite_data_files"):
        table = positional[1] if len(positional) > 1 else None
        method = getattr(lake, function.removeprefix("ducklake_"))
        results = method(table, **named, **commit_options)
        rows = pa.Table.from_pylist(
            [
                {
                    "schema_name": r.schema_name,
                    "table_name": r.table_name,
                    "files_processed": r.files_processed,
                    "files_created": r.files_created,
                }
                for r in results
            ],
            schema=MERGE_SCHEMA,
        )
    elif commit_options:
        raise InvalidOptionError(
            f"{function} writes no snapshot: commit options ({', '.join(commit_options)}) "
            "apply to ducklake_merge_adjacent_files and ducklake_rewrite_data_files"
        )
    elif function == "ducklake_expire_snapshots":
        from ._lake_info import snapshot_rows

        rows = snapshot_rows(lake.expire_snapshots(**named))
    else:
        paths = getattr(lake, function.removeprefix("ducklake_"))(**named)
        rows = pa.table({"path": pa.array(paths, pa.string())}, schema=PATHS_SCHEMA)
    return ctx.from_arrow(rows)


def _arguments(ctx, function: str, text: str) -> tuple[list, dict]:
    positional, named = [], {}
    for part in split_commas(text) if text.strip() else []:
        match = _NAMED.match(part)
        if match:
            named[match.group(1).lower()] = _value(ctx, function, match.group(2))
        elif named:
            raise InvalidOptionError(f"{function}: a positional argument after a named one")
        else:
            positional.append(_value(ctx, function, part))
    for key in ("older_than",):
        if isinstance(named.get(key), _dt.datetime) and named[key].tzinfo is None:
            named[key] = named[key].replace(tzinfo=_dt.timezone.utc)
    return positional, named


def _value(ctx, function: str, expression: str):
    """An argument's value: a name in quotes, else DataFusion's value of the expression."""
    stripped = expression.strip()
    if re.fullmatch(r"'(?:[^']|'')*'", stripped):
        return stripped[1:-1].replace("''", "'")
    if re.fullmatch(r'"(?:[^"]|"")*"', stripped):
        return ".".join(unquote(p) for p in split_name(stripped))
    try:
        result = ctx.sql(f"SELECT {stripped} AS value").to_arrow_table()
    except Exception as exc:  # noqa: BLE001 - DataFusion raises a plain Exception here
        raise InvalidOptionError(
            f"{function}: the argument {stripped!r} is not an expression DataFusion can "
            f"evaluate ({exc})"
        ) from None
    return result.column(0)[0].as_py()
