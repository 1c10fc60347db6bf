"""Run one query through our DataFusion catalog and through DuckDB, and compare.

The oracle is always DuckDB's own DuckLake reader on the same lake at the same snapshot;
no expected value in the read tests is typed by hand. Each check reads through both
DataFusion paths (native scans, and the exact reader alone) on the lake's catalog, through
the default path on a copy migrated to DuckLake 1.1 (``lake_formats``), and each table
state it reads is replayed through Spark too (``sparkreplay``). The DataFusion paths: the Rust
scan where it reads the table exactly (the default), and the exact reader alone.
"""

from __future__ import annotations

import re

from datafusion import SessionContext

from ducklake_datafusion import DuckLakeCatalog, register

from . import sparkreplay
from .lake_formats import format_under_test
from .lakes import assert_same_rows


def ours(lake, sql: str, *, format: str | None = None, **catalog_kwargs):
    """Our answer: register the lake as catalog ``lake`` and run ``sql`` in DataFusion
    (``format="1.1"``: on the catalog migrated to DuckLake 1.1)."""
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(format), **catalog_kwargs))
    return ctx.sql(sql).to_arrow_table()


def with_version(sql: str, snapshot: int) -> str:
    """Add DuckDB's ``AT (VERSION => n)`` after every ``lake.schema.table`` reference."""
    return re.sub(
        r'(lake\.(?:"[^"]+"|\w+)\.(?:"[^"]+"|\w+))', rf"\1 AT (VERSION => {snapshot})", sql
    )


def check(
    lake,
    sql: str,
    *,
    snapshot: int | None = None,
    reference_sql: str | None = None,
    ordered: bool = False,
):
    """Assert our rows equal DuckDB's for ``sql`` (optionally at a snapshot)."""
    expected_sql = reference_sql or sql
    if snapshot is not None and reference_sql is None:
        expected_sql = with_version(sql, snapshot)
    expected = lake.reference(expected_sql)
    kwargs = {"snapshot": snapshot} if snapshot is not None else {}
    # Both DataFusion paths: the Rust scan where it applies (the default), then the exact
    # reader alone (last, so the planner's log of the last scan is the exact path's
    # filtered plan).
    actual = ours(lake, sql, **kwargs)
    assert_same_rows(actual, expected, ordered=ordered)
    assert_same_rows(ours(lake, sql, native=False, **kwargs), expected, ordered=ordered)
    # The same lake migrated to DuckLake 1.1, as DuckDB 2.0 migrates it, reads the same.
    # (MySQL catalogs: no migrated copy is made, ``lakes.Lake.reader_args``.) Once, by the
    # default path: the catalog's form changes only the plan the planner builds (both
    # readers take the same ScanPlan, and each was checked on it above), so the exact
    # reader on the copy would repeat the check above (measured: a fifth of the check).
    if format_under_test() == "1.0" and lake.spec.catalog != "mysql":
        migrated = ours(lake, sql, format="1.1", **kwargs)
        assert_same_rows(migrated, expected, ordered=ordered)
    sparkreplay.replay(lake, sql, snapshot)
    return actual


def error_reading_fifo(lake, sql: str, fifo: str, **catalog_kwargs) -> str:
    """``"ErrorClass: message"`` of ``ours(lake, sql)`` where a file was replaced by the FIFO
    ``fifo``; fails the test if the read blocks on it (and unblocks it first)."""
    import threading

    import pytest

    outcome = {}

    def run():
        try:
            ours(lake, sql, **catalog_kwargs)
        except Exception as exc:  # noqa: BLE001 - the caller inspects it
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # unblock the reader so the test process can exit
        with open(fifo, "wb"):
            pass
        pytest.fail("the reader blocked on a FIFO")
    error = outcome.get("error")
    return f"{type(error).__name__}: {error}"
