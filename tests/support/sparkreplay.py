"""Replay every table state the DataFusion read tests check through Spark as well.

``readcheck.check`` compares our DataFusion answer with DuckDB's for a query; each table
that query names is then also read through Spark with ``read_table``, and compared with
DuckDB's rows of the same snapshot: through the catalog's scan (the default when the jar is
on the classpath: the planner process, Spark's Parquet reader with deletes inside it) at
every table state, so every lake the suite builds is read by both engines. Two more paths
read each shape of a table (its columns and their types) once, and every state DataFusion
refuses: the exact path (every file through the Python source: its rows come from the
exact reader that ``readcheck`` checks on every state through DataFusion, so Spark's part,
the data source and its conversion to Spark's types, depends on the shape alone), and, on
the lake's copy migrated to DuckLake 1.1, ``read_table``'s own native plan
(``catalog_scan=False``: Spark's Parquet reader with the deleted-rows format, as the
catalog's scan; the plan's parts come from the planner code the catalog's scan runs, and
tests/spark/test_spark_native.py reads every state of its histories that way). Each
Spark read costs ~0.4 s: all three at every state were a tenth of the suite's time.

DuckDB's reference is cast to the Spark types the README documents (UUID and JSON as
text, UBIGINT as DECIMAL(20,0), TIMESTAMP_NS floored to microseconds). States with
types whose Spark form has no DuckDB cast (INTERVAL, read as a struct of its parts, GEOMETRY,
VARIANT, TIMETZ) are left to their dedicated Spark tests. Only lakes of the
``duckdb-local`` cell are replayed (one catalog kind is enough for the engine; the other
catalogs are covered by the Spark tests' own matrix), each state once per run.

Off when pyspark or Java is missing, or with ``DUCKLAKE_TEST_SPARK_REPLAY=0``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from .lakes import LakeSpec, assert_same_rows

session: Callable[[], object] | None = None  # set per test by conftest when Spark can run
replayed: set[tuple[str, str, str, int]] = set()
# (path, catalog, schema, table, columns and types) read through Spark's exact path and
# read_table's own native plan: once per shape
shapes: set[tuple] = set()

_TABLE = re.compile(r'lake\.((?:"[^"]+")|\w+)\.((?:"[^"]+")|\w+)')
_NOT_COMPARABLE = re.compile(r"INTERVAL|GEOMETRY|VARIANT|TIME WITH TIME ZONE|TIMETZ", re.IGNORECASE)
_CASTS = (
    (re.compile(r"\bUUID\b", re.IGNORECASE), "VARCHAR"),
    (re.compile(r"\bJSON\b", re.IGNORECASE), "VARCHAR"),
    (re.compile(r"\bUBIGINT\b", re.IGNORECASE), "DECIMAL(20,0)"),
    (re.compile(r"\bTIMESTAMP_NS\b", re.IGNORECASE), "TIMESTAMP"),
)
_REPLAYED_SPEC = LakeSpec("duckdb", "local")
_ERROR_NAME = re.compile(r"\b([A-Z]\w*Error): ")


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
        previous = logging.root.manager.disable
        logging.disable(logging.CRITICAL)  # the test's own log assertions see no replay
        try:
            _compare(session(), lake, schema, table, at)
        finally:
            logging.disable(previous)


def _compare(spark, lake, schema: str, table: str, snapshot: int) -> None:
    from ducklake_datafusion.spark import read_table

    name = f"lake.{_quote(schema)}.{_quote(table)} AT (VERSION => {snapshot})"
    described = lake.reference(f"DESCRIBE SELECT * FROM {name}")
    columns = list(zip(*(described.column(i).to_pylist() for i in range(2)), strict=True))
    if any(_NOT_COMPARABLE.search(kind) for _, kind in columns):
        return
    expected = lake.reference(f"SELECT {', '.join(_cast(c, k) for c, k in columns)} FROM {name}")
    refused = _refused_by_datafusion(lake, schema, table, snapshot)
    # the catalog's scan and the exact path on the lake as written; read_table's own native
    # plan on its copy migrated to 1.1 (one planner process per lake, not two: ~0.15 s a state)
    shape = (lake.metadata, schema, table, tuple(columns))
    for path, native, catalog_scan, form in (
        ("catalog", True, True, None),
        ("exact", False, False, None),
        ("native", True, False, "1.1"),
    ):
        if path != "catalog":
            if refused is None and (path, *shape) in shapes:
                continue
            shapes.add((path, *shape))
        what = (
            f"Spark ({path} path, DuckLake {form or 'as written'}) on {schema}.{table}@{snapshot}"
        )
        try:
            got = read_table(
                spark,
                table=f"{_quote(schema)}.{_quote(table)}",
                snapshot=snapshot,
                native=native,
                catalog_scan=catalog_scan,
                **lake.reader_args(form),
            ).toArrow()
        except Exception as error:  # noqa: BLE001 - Spark wraps ours: compare the kind
            if refused is None or _error_kind(error) != refused:
                raise AssertionError(f"{what} failed where DataFusion did not: {error}") from None
            continue
        if refused is not None:
            raise AssertionError(f"{what} read what DataFusion refused with {refused}")
        try:
            assert_same_rows(got, expected)
        except AssertionError as failure:
            raise AssertionError(f"{what} differs from DuckDB:\n{failure}") from None


def _refused_by_datafusion(lake, schema: str, table: str, snapshot: int) -> str | None:
    """The kind of typed error DataFusion raises for the whole table (None: it reads it)."""
    from .readcheck import ours

    try:
        ours(lake, f"SELECT * FROM lake.{_quote(schema)}.{_quote(table)}", snapshot=snapshot)
    except Exception as error:  # DataFusion wraps errors raised mid-scan (re-raised if not ours)
        kind = _error_kind(error)
        if kind is None:
            raise
        return kind
    return None


def _error_kind(error: Exception) -> str | None:
    """Our exception class behind ``error``, also when an engine wrapped it in text."""
    from ducklake_datafusion import errors

    if isinstance(error, errors.DuckLakeError):
        return type(error).__name__
    for name in _ERROR_NAME.findall(str(error)):
        if isinstance(getattr(errors, name, None), type):
            return name
    return None


def _cast(column: str, kind: str) -> str:
    quoted = _quote(column)
    if kind.upper() == "TIMESTAMP_NS":  # floored, as Spark reads it (a CAST truncates)
        nanos = f"epoch_ns({quoted})"
        return f"make_timestamp({nanos} // 1000 - ({nanos} % 1000 < 0)::BIGINT) AS {quoted}"
    target = kind
    for pattern, replacement in _CASTS:
        target = pattern.sub(replacement, target)
    return quoted if target == kind else f"CAST({quoted} AS {target}) AS {quoted}"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name
