"""Run one query through our DataFusion catalog and through DuckDB, and compare.

The oracle is always DuckDB's own DuckLake reader on the same lake at the same snapshot;
no expected value in the read tests is typed by hand. Each check reads through both
DataFusion paths (native scans, and the exact reader alone), and each table state it
reads is replayed through Spark too (``sparkreplay``). The DataFusion paths: the Rust
scan where it reads the table exactly (the default), the Python listing scans
(``rust=False``, with and without native deletes), and the exact reader alone.
"""

from __future__ import annotations

import re

import sparkreplay
from datafusion import SessionContext
from lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, register


def ours(lake, sql: str, **catalog_kwargs):
    """Our answer: register the lake as catalog ``lake`` and run ``sql`` in DataFusion."""
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **catalog_kwargs))
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
    # Every DataFusion path: the Rust scan where it applies (the default), the Python
    # listing scans where they apply (by default, files without deletes), with native
    # deletes too, then the exact reader alone (last, so the planner's log of the last
    # scan is the exact path's filtered plan).
    actual = ours(lake, sql, **kwargs)
    assert_same_rows(actual, expected, ordered=ordered)
    assert_same_rows(ours(lake, sql, rust=False, **kwargs), expected, ordered=ordered)
    assert_same_rows(
        ours(lake, sql, rust=False, native_deletes=True, **kwargs), expected, ordered=ordered
    )
    assert_same_rows(ours(lake, sql, native=False, **kwargs), expected, ordered=ordered)
    sparkreplay.replay(lake, sql, snapshot)
    return actual
