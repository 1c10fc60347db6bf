"""What ``append`` takes: every Arrow-speaking frame a Python user has, read back by DuckDB."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from datafusion import SessionContext
from support.writes import duckdb_reads

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.errors import InvalidOptionError

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})


def _inputs():
    yield "arrow table", lambda: ROWS
    yield "record batch", lambda: ROWS.to_batches()[0]
    yield "batch reader", lambda: pa.RecordBatchReader.from_batches(ROWS.schema, ROWS.to_batches())
    yield "pandas", lambda: ROWS.to_pandas()
    yield "polars", lambda: pl.from_arrow(ROWS)
    yield "duckdb relation", lambda: duckdb.arrow(ROWS)
    yield "datafusion frame", lambda: SessionContext().from_arrow(ROWS)


@pytest.mark.parametrize(("kind", "make"), list(_inputs()), ids=[k for k, _ in _inputs()])
def test_every_frame_appends(make_lake, kind, make):
    lake = make_lake()
    catalog = DuckLakeCatalog(**lake.reader_args())
    catalog.create_table("main.t", ROWS.schema)
    catalog.table("main", "t").append(make())
    got = duckdb_reads(lake, "SELECT * FROM lake.main.t ORDER BY id")
    assert got.to_pylist() == ROWS.to_pylist(), kind


def test_columns_by_name_missing_ones_null(make_lake):
    lake = make_lake()
    catalog = DuckLakeCatalog(**lake.reader_args())
    catalog.create_table("main.t", ROWS.schema)
    catalog.table("main", "t").append(pd.DataFrame({"NAME": ["x"]}))  # case-insensitive
    got = duckdb_reads(lake, "SELECT * FROM lake.main.t")
    assert got.to_pylist() == [{"id": None, "name": "x"}]
    with pytest.raises(InvalidOptionError, match="cannot write a list"):
        catalog.table("main", "t").append([1, 2])
