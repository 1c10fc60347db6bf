"""Spark's filter forms (the JVM catalog's JSON, ``where=`` text) become the scan's
``Filter`` in one step, by the same rules; and ``read_table``'s options cross to the data
source as text that reads back as the same value. No Spark session needed."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from types import SimpleNamespace

import pyarrow as pa
import pytest

from ducklake_datafusion import scan
from ducklake_datafusion.spark._core import AlreadyRead, SourceOptions
from ducklake_datafusion.spark.parquet._where import pruning_filter
from ducklake_datafusion.spark.planner._filters_json import json_filter

COLUMNS = [
    SimpleNamespace(name="k", type_name="int64", arrow_type=pa.int64()),
    SimpleNamespace(name="s", type_name="varchar", arrow_type=pa.string()),
    SimpleNamespace(name="d", type_name="date", arrow_type=pa.date32()),
    SimpleNamespace(name="x", type_name="decimal(9,2)", arrow_type=pa.decimal128(9, 2)),
]
TABLE = SimpleNamespace(name="t", columns=COLUMNS)
K, S, D, X = (scan.Column(c.name) for c in COLUMNS)


def _lit(value, type_name):
    return scan.Literal(value, type_name)


WHERE = {
    "k BETWEEN 1 AND 9": scan.And(
        (scan.Compare(">=", K, _lit(1, "int64")), scan.Compare("<=", K, _lit(9, "int64")))
    ),
    "NOT (k >= 1000)": scan.Compare("<", K, _lit(1000, "int64")),
    "5 < k": scan.Compare(">", K, _lit(5, "int64")),
    "x < 10.5": scan.Compare("<", X, _lit(Decimal("10.50"), "decimal(9,2)")),
    "d > '2024-03-01'": scan.Compare(">", D, _lit(dt.date(2024, 3, 1), "date")),
    "s LIKE 'ab%'": scan.StringMatch("starts_with", S, "ab"),
    "k <=> NULL": scan.IsNull(K),
    "k > 1 AND upper(s) = 'x'": scan.Compare(">", K, _lit(1, "int64")),
    # not read exactly: nothing pruned
    "upper(s) = 'P1'": None,
    "NOT (k > 1 AND upper(s) = 'x')": None,
    "k > 1 OR upper(s) = 'x'": None,
    "k = 1.5": None,
    "d > '2024-3-1'": None,
    "t.k = 1": None,
    "k": None,
    "k >": None,
    "k = 'a' 'b'": None,
}


@pytest.mark.parametrize("where", list(WHERE))
def test_where_text_becomes_the_scan_filter(where):
    assert pruning_filter(TABLE, where) == WHERE[where]


def test_json_filters_move_not_down_to_the_leaves():
    leaf = {"op": "EqualTo", "attr": "k", "value": {"long": 5}}
    timestamp = {"op": "EqualTo", "attr": "k", "value": {"timestamp": 5}}
    both = {"op": "Not", "child": {"op": "And", "left": leaf, "right": leaf}}
    expected = scan.Not(scan.Compare("=", K, _lit(5, "int64")))
    assert json_filter([both], COLUMNS) == scan.Or((expected, expected))
    assert (
        json_filter(
            [{"op": "Not", "child": {"op": "And", "left": leaf, "right": timestamp}}], COLUMNS
        )
        is None
    )
    assert json_filter([{"op": "And", "left": leaf, "right": timestamp}], COLUMNS) == scan.Compare(
        "=", K, _lit(5, "int64")
    )


@pytest.mark.parametrize(
    "options",
    [
        {
            "metadata": "lake.ducklake",
            "path": '"my ""s"""."a.b"',
            "snapshot": 3,
            "pushdown": True,
            "min_partitions": 4,
            "scan_guard": True,
            "partition_bytes": "64m",
            "region": "eu",
            "allow_http": "true",
        },
        {
            "metadata": "sqlite:x",
            "path": "t",
            "data_path": "/d",
            "metadata_schema": "m",
            "snapshot_time": dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc),
        },
        {"metadata": "x", "path": "t@v7"},
    ],
)
def test_typed_options_cross_as_text_that_reads_back_the_same(options):
    parsed = SourceOptions.parse(options)
    assert SourceOptions.parse(parsed.as_options()) == parsed
    told = dataclasses.replace(parsed, already_read=AlreadyRead(frozenset({1, 2}), True))
    assert SourceOptions.parse(told.as_options()) == told
