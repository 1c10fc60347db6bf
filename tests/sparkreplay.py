"""Replay every table state the DataFusion read tests check through Spark as well.

``readcheck.check`` compares our DataFusion answer with DuckDB's for a query; each table
that query names is then also read through Spark, with ``read_table`` on both paths
(native: Spark's Parquet reader plus the mask join, with the Python source for the rest;
exact: every file through the Python source), and compared with DuckDB's rows of the same
snapshot. So every lake the suite builds is read by both engines.

DuckDB's reference is cast to the Spark types the README documents (UUID and JSON as
text, UBIGINT as DECIMAL(20,0), TIMESTAMP_NS truncated to microseconds). States with
types whose Spark form has no DuckDB cast (INTERVAL, which Spark refuses, GEOMETRY,
VARIANT, TIMETZ) are left to their dedicated Spark tests. Only lakes of the
``duckdb-local`` cell are replayed (one catalog kind is enough for the engine; the other
catalogs are covered by the Spark tests' own matrix), each state once per run.

Off when pyspark or Java is missing, or with ``DUCKLAKE_TEST_SPARK_REPLAY=0``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lakes import LakeSpec, assert_same_rows

session: Callable[[], object] | None = None  # set per test by conftest when Spark can run
replayed: set[tuple[str, str, str, int]] = set()

_TABLE = re.compile(r'lake\.((?:"[^"]+")|\w+)\.((?:"[^"]+")|\w+)')
_NOT_COMPARABLE = re.compile(r"INTERVAL|GEOMETRY|VARIANT|TIME WITH TIME ZONE|TIMETZ", re.IGNORECASE)
_CASTS = (
    (re.compile(r"\bUUID\b", re.IGNORECASE), "VARCHAR"),
    (re.compile(r"\bJSON\b", re.IGNORECASE), "VARCHAR"),
    (re.compile(r"\bUBIGINT\b", re.IGNORECASE), "DECIMAL(20,0)"),
    (re.compile(r"\bTIMESTAMP_NS\b", re.IGNORECASE), "TIMESTAMP"),
)
_REPLAYED_SPEC = LakeSpec("duckdb", "local")


def replay(lake, sql: str, snapshot: int | None) -> None:
    """Read each ``lake.schema.table`` of ``sql`` through Spark and compare with DuckDB."""
    if session is None or lake.spec != _REPLAYED_SPEC:
        return
    at = snapshot if snapshot is not None else lake.snapshot_id()
    for schema, table in {(_unquote(s), _unquote(t)) for s, t in _TABLE.findall(sql)}:
        key = (lake.metadata, schema, table, at)
        if key in replayed:
            continue
        replayed.add(key)
        _compare(session(), lake, schema, table, at)


def _compare(spark, lake, schema: str, table: str, snapshot: int) -> None:
    from ducklake_datafusion.spark import read_table

    name = f"lake.{_quote(schema)}.{_quote(table)} AT (VERSION => {snapshot})"
    described = lake.reference(f"DESCRIBE SELECT * FROM {name}")
    columns = list(zip(*(described.column(i).to_pylist() for i in range(2)), strict=True))
    if any(_NOT_COMPARABLE.search(kind) for _, kind in columns):
        return
    expected = lake.reference(f"SELECT {', '.join(_cast(c, k) for c, k in columns)} FROM {name}")
    args = lake.reader_args()
    for native in (True, False):
        frame = read_table(
            spark,
            args["metadata"],
            f"{_quote(schema)}.{_quote(table)}",
            snapshot=snapshot,
            storage_options=args["storage_options"],
            native=native,
        )
        path = "native" if native else "exact"
        try:
            assert_same_rows(frame.toArrow(), expected)
        except AssertionError as failure:
            raise AssertionError(
                f"Spark ({path} path) differs from DuckDB on {schema}.{table}@{snapshot}:\n"
                f"{failure}"
            ) from None


def _cast(column: str, kind: str) -> str:
    target = kind
    for pattern, replacement in _CASTS:
        target = pattern.sub(replacement, target)
    quoted = _quote(column)
    return quoted if target == kind else f"CAST({quoted} AS {target}) AS {quoted}"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name
