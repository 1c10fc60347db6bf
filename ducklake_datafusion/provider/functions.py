"""DuckDB's ducklake table functions in DataFusion SQL, and the same as Python calls.

:func:`ducklake_datafusion.register` registers these table functions in the session:

=============================================================  ================================
``ducklake_snapshots('lake')``                                 every snapshot, what it changed
``ducklake_table_info('lake')``                                tables with live file counts
``ducklake_list_files('lake', 'schema', 'table' [, snap])``    data + delete files of a table
``ducklake_list_files('lake', 'table')``                       same, schema ``main`` (DuckDB)
``ducklake_table_changes('lake', 'schema', 'table', a, b)``    the change feed for ``a..b``
=============================================================  ================================

``'lake'`` is the name the catalog was registered under in *that* session, looked up at
call time, so one session can hold several lakes. Snapshot arguments are ids, TIMESTAMP
literals or strings (``'12'``, ``'v12'``, ``'2024-05-01T12:00:00'``); times without zone
are UTC.

How datafusion 55 runs Python table functions (checked by ``tests/test_changes.py``): the
callable receives one ``Expr`` per argument, constant-folded to literals, plus the
session when registered ``with_session=True``; it runs once per query while the query is
planned and returns a ``datafusion.catalog.Table``. It must not build DataFrames (that
would start a runtime inside the planner's runtime), so results are computed with
pyarrow here and handed over as an in-memory ``pyarrow.dataset``. Exceptions raised here
reach the user as a DataFusion ``ValueError`` ("Execution error: PyErr { type: <class
'...SnapshotNotFoundError'>, value: ... }") whose text names our error class and message
(unlike errors of ``SchemaProvider.table``, which keep their Python type).
"""

from __future__ import annotations

import datetime as _dt
import functools

import pyarrow as pa
import pyarrow.dataset as ds

from ..errors import InvalidOptionError, remembered_for_datafusion
from ..read import table_changes
from ..scan import SnapshotRef, parse_snapshot_ref
from ._catalog_provider import DuckLakeCatalog
from ._lake_info import list_files_table, snapshots_table, table_info_table

__all__ = [
    "FUNCTION_NAMES",
    "list_files",
    "register",
    "register_table_functions",
    "snapshots",
    "table_changes",
    "table_info",
]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

FUNCTION_NAMES = (
    "ducklake_snapshots",
    "ducklake_table_info",
    "ducklake_list_files",
    "ducklake_table_changes",
)


# -- Python API -----------------------------------------------------------------------------


def snapshots(lake: DuckLakeCatalog) -> pa.Table:
    """``ducklake_snapshots``: every existing snapshot with its changes and commit info."""
    return snapshots_table(lake)


def table_info(lake: DuckLakeCatalog) -> pa.Table:
    """``ducklake_table_info``: tables at the lake's snapshot with live file counts/sizes."""
    return table_info_table(lake)


def list_files(
    lake: DuckLakeCatalog, schema: str, table: str, snapshot: int | str | _dt.datetime | None = None
) -> pa.Table:
    """``ducklake_list_files``: the table's data files with their delete file.

    ``snapshot`` (id, time or text of either) defaults to the lake's own snapshot.
    """
    return list_files_table(lake, schema, table, None if snapshot is None else _ref(snapshot))


# -- argument decoding ----------------------------------------------------------------------


def _ref(value: object) -> SnapshotRef:
    if isinstance(value, bool):
        raise InvalidOptionError(f"a snapshot must be an id or a timestamp, got {value!r}")
    if isinstance(value, int):
        return SnapshotRef(snapshot_id=value)
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        value = _dt.datetime.combine(value, _dt.time())
    if isinstance(value, _dt.datetime):
        return SnapshotRef(time=value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc))
    if isinstance(value, str):
        text = value.strip()
        ref = parse_snapshot_ref(f"v{text}" if text.isdigit() else text)
        if ref is not None:
            return ref
    raise InvalidOptionError(f"a snapshot must be an id, a TIMESTAMP or ISO text, got {value!r}")


def _value(function: str, position: int, expr) -> object:
    """The Python value of a constant argument (timestamps as aware UTC datetimes)."""
    try:
        scalar = expr.python_value()
    except Exception as exc:  # anything but a literal
        raise InvalidOptionError(
            f"{function}: argument {position} must be a constant, got {expr}"
        ) from exc
    if isinstance(scalar, pa.TimestampScalar):
        if not scalar.is_valid:
            return None
        # The value is a UTC instant whether or not the literal had a zone; snapshot
        # times have microseconds, so finer units are floored (now() is nanoseconds).
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
        micros = scalar.value * 1_000_000 // per_second[scalar.type.unit]
        return _EPOCH + _dt.timedelta(microseconds=micros)
    return scalar.as_py() if isinstance(scalar, pa.Scalar) else scalar


def _args(function: str, exprs, counts: tuple[int, ...]) -> list:
    if len(exprs) not in counts:
        wanted = " or ".join(str(c) for c in counts)
        raise InvalidOptionError(f"{function} takes {wanted} arguments, got {len(exprs)}")
    return [_value(function, i + 1, e) for i, e in enumerate(exprs)]


def _text(function: str, what: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidOptionError(f"{function}: {what} must be a string, got {value!r}")
    return value


def _lake(function: str, session, name: object) -> DuckLakeCatalog:
    name = _text(function, "the catalog name", name)
    try:
        found = session.catalog(name).catalog
    except Exception as exc:  # DataFusion: plain error for unknown names
        raise InvalidOptionError(
            f"{function}: no catalog named {name!r} in this session; register the lake with "
            f"ducklake_datafusion.register(ctx, {name!r}, DuckLakeCatalog(...))"
        ) from exc
    if not isinstance(found, DuckLakeCatalog):
        raise InvalidOptionError(f"{function}: catalog {name!r} is not a DuckLake catalog")
    return found


def _table(result: pa.Table):
    from datafusion.catalog import Table

    return Table(ds.dataset(result))


# -- the table functions --------------------------------------------------------------------


def _snapshots_udtf(*exprs, session):
    (name,) = _args("ducklake_snapshots", exprs, (1,))
    return _table(snapshots(_lake("ducklake_snapshots", session, name)))


def _table_info_udtf(*exprs, session):
    (name,) = _args("ducklake_table_info", exprs, (1,))
    return _table(table_info(_lake("ducklake_table_info", session, name)))


def _list_files_udtf(*exprs, session):
    fn = "ducklake_list_files"
    args = _args(fn, exprs, (2, 3, 4))
    lake = _lake(fn, session, args[0])
    if len(args) == 2:
        schema, table, snapshot = "main", args[1], None
    else:
        schema, table = args[1], args[2]
        snapshot = args[3] if len(args) == 4 else None
    return _table(
        list_files(lake, _text(fn, "the schema", schema), _text(fn, "the table", table), snapshot)
    )


def _table_changes_udtf(*exprs, session):
    fn = "ducklake_table_changes"
    name, schema, table, start, end = _args(fn, exprs, (5,))
    lake = _lake(fn, session, name)
    result = table_changes(
        lake, _text(fn, "the schema", schema), _text(fn, "the table", table), start, end
    )
    return _table(result)


_UDTFS = {
    "ducklake_snapshots": _snapshots_udtf,
    "ducklake_table_info": _table_info_udtf,
    "ducklake_list_files": _list_files_udtf,
    "ducklake_table_changes": _table_changes_udtf,
}


def register(ctx, name: str, lake: DuckLakeCatalog) -> DuckLakeCatalog:
    """``ducklake_datafusion.register``: ``lake`` in ``ctx`` under ``name``, with the table
    functions (which find the lake by this name). Returns the catalog."""
    from ._dml_sql import remember_lake

    ctx.register_catalog_provider(name, lake)
    register_table_functions(ctx)
    remember_lake(ctx, name, lake)  # for DELETE and UPDATE through ducklake_datafusion.sql
    return lake


def register_table_functions(ctx) -> None:
    """Register the ducklake table functions in a ``SessionContext`` (idempotent)."""
    from datafusion import udtf

    for name, function in _UDTFS.items():
        ctx.register_udtf(udtf(_remembering(function), name, with_session=True))


def _remembering(function):
    """``function`` with its errors remembered for ``errors.typed``: DataFusion hands
    them to the caller as a ``ValueError`` quoting the error's repr."""

    @functools.wraps(function)
    def run(*exprs, session):
        with remembered_for_datafusion():
            return function(*exprs, session=session)

    return run
