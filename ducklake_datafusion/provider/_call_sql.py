"""``CALL ducklake_<maintenance>('lake', ...)`` and ``CHECKPOINT lake`` in a session, as
DuckDB users spell them.

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

__all__ = ["is_maintenance_call", "result_table", "run_call"]

# function -> (positional arguments it takes at most, its named arguments)
FUNCTIONS = {
    "ducklake_merge_adjacent_files": (
        2,
        {"schema", "max_compacted_files", "min_file_size", "max_file_size"},
    ),
    "ducklake_rewrite_data_files": (2, {"schema", "delete_threshold"}),
    "ducklake_flush_inlined_data": (1, {"schema_name", "table_name"}),
    "ducklake_expire_snapshots": (1, {"older_than", "versions", "dry_run"}),
    "ducklake_cleanup_old_files": (1, {"older_than", "cleanup_all", "dry_run"}),
    "ducklake_delete_orphaned_files": (1, {"older_than", "cleanup_all", "dry_run"}),
}
# the functions that take a table and write a snapshot (commit options apply)
TABLE_FUNCTIONS = frozenset(
    ("ducklake_merge_adjacent_files", "ducklake_rewrite_data_files", "ducklake_flush_inlined_data")
)
_CALL = re.compile(
    r"\s*CALL\s+([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)
_CHECKPOINT = re.compile(
    r'\s*(?:FORCE\s+)?CHECKPOINT\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)\s*;?\s*$', re.IGNORECASE
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
FLUSH_SCHEMA = pa.schema(
    [("schema_name", pa.string()), ("table_name", pa.string()), ("rows_flushed", pa.int64())]
)
CHECKPOINT_SCHEMA = pa.schema([("operation", pa.string()), ("count", pa.int64())])


def is_maintenance_call(text: str) -> bool:
    """Whether ``text`` is a ``CALL`` of a maintenance function this package runs."""
    if _CHECKPOINT.match(text):
        return True
    match = _CALL.match(text)
    return match is not None and match.group(1).lower() in FUNCTIONS


def run_call(ctx, text: str, lakes: dict, **commit_options):
    """Run the ``CALL`` (``is_maintenance_call``) against a lake of ``lakes`` (by the
    name it is registered under); its rows as a DataFrame."""
    checkpoint = _CHECKPOINT.match(text)
    if checkpoint:
        name = unquote(checkpoint.group(1))
        lake = _registered(lakes, name, "CHECKPOINT")
        return ctx.from_arrow(result_table("checkpoint", lake.checkpoint(**commit_options)))
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
    lake = _registered(lakes, positional[0], function)
    operation = function.removeprefix("ducklake_")
    if function == "ducklake_flush_inlined_data":  # DuckDB names its table arguments so
        result = lake.flush_inlined_data(
            named.get("table_name"), schema=named.get("schema_name"), **commit_options
        )
    elif function in TABLE_FUNCTIONS:
        table = positional[1] if len(positional) > 1 else None
        result = getattr(lake, operation)(table, **named, **commit_options)
    elif commit_options:
        raise InvalidOptionError(
            f"{function} writes no snapshot: commit options ({', '.join(commit_options)}) "
            f"apply to {', '.join(sorted(TABLE_FUNCTIONS))}"
        )
    else:
        result = getattr(lake, operation)(**named)
    rows = result_table(operation, result)
    return ctx.from_arrow(rows)


def _registered(lakes: dict, name, what: str):
    if not isinstance(name, str) or name not in lakes:
        raise InvalidOptionError(
            f"{what}: {name!r} is not a lake registered in this session "
            f"(registered: {', '.join(sorted(lakes)) or 'none'}); register it first"
        )
    return lakes[name]


def result_table(operation: str, result) -> pa.Table:
    """What a maintenance method (``merge_adjacent_files``, ...) returned, as the rows of
    DuckDB's function of the same name (its columns): for SQL's ``CALL`` and the CLI."""
    if operation in ("merge_adjacent_files", "rewrite_data_files"):
        return pa.Table.from_pylist(
            [
                {
                    "schema_name": r.schema_name,
                    "table_name": r.table_name,
                    "files_processed": r.files_processed,
                    "files_created": r.files_created,
                }
                for r in result
            ],
            schema=MERGE_SCHEMA,
        )
    if operation == "flush_inlined_data":
        return pa.Table.from_pylist(
            [
                {
                    "schema_name": r.schema_name,
                    "table_name": r.table_name,
                    "rows_flushed": r.rows_flushed,
                }
                for r in result
            ],
            schema=FLUSH_SCHEMA,
        )
    if operation == "checkpoint":
        steps = result.counts()
        return pa.table(
            {"operation": [s for s, _ in steps], "count": [c for _, c in steps]},
            schema=CHECKPOINT_SCHEMA,
        )
    if operation == "expire_snapshots":
        from ._lake_info import snapshot_rows

        return snapshot_rows(result)
    return pa.table({"path": pa.array(result, pa.string())}, schema=PATHS_SCHEMA)


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
