"""Spark's writes to a partitioned table decide partitions in two languages: the jar's
``PartitionKeys`` splits an executor's rows into files, and the planner records each file's
partition values from its first row (``write/_partitions.py``, which also partitions the
package's own writes). A disagreement would record a file under the wrong partition, which
readers then prune wrongly.

One table of cases, ``jvm/src/test/resources/partition_keys.json`` (a column type, a
transform, values and the text the catalog records for each), is checked from both sides:
here the texts against DuckDB's own for the same rows (the keys DuckDB 1.5 writes; DuckLake
1.1's ``epoch_*`` keys against whole units since 1970 counted by ``datetime``) and the
planner's text of each row as an executor sends it; ``PartitionKeysTest.java`` (run by
``mvn package``) that the jar's keys split rows exactly where the texts differ.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from pathlib import Path

import pyarrow as pa
import pytest

from ducklake_datafusion.catalog._types import ColumnSpec, arrow_type_for
from ducklake_datafusion.spark.planner._write import partition_values
from ducklake_datafusion.write._partitions import PartitionKey, PartitionSpec, split

CASES_FILE = Path(__file__).resolve().parents[2] / "jvm/src/test/resources/partition_keys.json"
CASES = json.loads(CASES_FILE.read_text())["cases"]
EPOCH = dt.datetime(1970, 1, 1)
# (the catalog's names of the cases' DuckDB types, where they differ)
DUCKLAKE_TYPES = {
    "BIGINT": "int64",
    "INTEGER": "int32",
    "DOUBLE": "float64",
    "FLOAT": "float32",
}


def _case_id(case: dict) -> str:
    return f"{case['transform']}-{case['type']}"


def _value(kind: str, value):
    """A case's value as Python (and DuckDB's parameters) take it."""
    if value is None:
        return None
    if kind in ("TIMESTAMP", "TIMESTAMPTZ"):
        stamp = dt.datetime.fromisoformat(value)
        return stamp.replace(tzinfo=dt.timezone.utc) if kind == "TIMESTAMPTZ" else stamp
    if kind == "DATE":
        return dt.date.fromisoformat(value)
    if kind in ("DOUBLE", "FLOAT"):
        return float(value)
    if kind.startswith("DECIMAL"):
        return decimal.Decimal(value)
    if kind == "BLOB":
        return base64.b64decode(value)
    return value


def _raw(kind: str, value):
    """The value as an executor sends it (``PartitionKeys.raw``): days, microseconds."""
    if value is None:
        return None
    if kind in ("TIMESTAMP", "TIMESTAMPTZ"):
        delta = dt.datetime.fromisoformat(value) - EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if kind == "DATE":
        return (dt.date.fromisoformat(value) - EPOCH.date()).days
    return value


def _key(case: dict) -> tuple[str, PartitionSpec]:
    """The case's column type as the catalog names it, and a spec of its one key."""
    type_name = DUCKLAKE_TYPES.get(case["type"], case["type"].lower())
    return type_name, PartitionSpec(1, (PartitionKey(1, "c", case["transform"], type_name),))


def _epoch_text(transform: str, kind: str, value) -> str | None:
    """Whole years, months, days or hours since 1970 (rounded down), by ``datetime``."""
    if value is None:
        return None
    stamp = dt.datetime.fromisoformat(value)
    unit = transform.removeprefix("epoch_")
    if unit == "year":
        return str(stamp.year - 1970)
    if unit == "month":
        return str((stamp.year - 1970) * 12 + stamp.month - 1)
    seconds = (stamp - EPOCH) // dt.timedelta(seconds=1)
    return str(math.floor(seconds / (86_400 if unit == "day" else 3_600)))


def _duckdb_texts(lake, number: int, case: dict) -> list[str | None]:
    """The partition value DuckDB records for each of the case's rows (one INSERT)."""
    kind, transform = case["type"], case["transform"]
    table = f"lake.main.k{number}"
    lake.sql(f"CREATE TABLE {table} (c {kind}, i INTEGER)")
    key = "c" if transform == "identity" else f"{transform}(c)"
    lake.sql(f"ALTER TABLE {table} SET PARTITIONED BY ({key})")
    values = [_value(kind, v) for v in case["values"]]
    rows = ", ".join(f"(?::{kind}, {i})" for i in range(len(values)))
    lake.sql(f"INSERT INTO {table} VALUES {rows}", values)
    files = lake.sql(
        "SELECT f.path, v.partition_value FROM __ducklake_metadata_lake.ducklake_data_file f "
        "JOIN __ducklake_metadata_lake.ducklake_table t USING (table_id) "
        "JOIN __ducklake_metadata_lake.ducklake_file_partition_value v USING (data_file_id) "
        f"WHERE t.table_name = 'k{number}'"
    ).fetchall()
    listed = lake.sql(f"SELECT data_file FROM ducklake_list_files('lake', 'k{number}')").fetchall()
    texts: list[str | None] = [None] * len(values)
    seen = 0
    for (path,) in listed:
        (text,) = [text for relative, text in files if path.endswith(relative)]
        for (i,) in lake.sql(f"SELECT i FROM read_parquet('{path}')").fetchall():
            texts[i] = text
            seen += 1
    assert seen == len(values)
    return texts


def test_the_tables_texts_are_duckdbs(make_lake):
    """Each case's texts are what DuckDB records for the same rows (in UTC), or the whole
    units since 1970 of DuckLake 1.1's epoch keys, which DuckDB 1.5 does not write."""
    lake = make_lake(inline_limit=0)
    lake.sql("SET TimeZone = 'UTC'")
    for number, case in enumerate(CASES):
        if case["transform"].startswith("epoch_"):
            expected = [_epoch_text(case["transform"], case["type"], v) for v in case["values"]]
        else:
            expected = _duckdb_texts(lake, number, case)
        assert case["partitions"] == expected, _case_id(case)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_planner_records_the_tables_texts(case):
    """The planner's text for a file whose first row is each value, as the executors send it."""
    type_name, spec = _key(case)
    column = ColumnSpec(1, "c", type_name, arrow_type_for(type_name))
    for value, text in zip(case["values"], case["partitions"], strict=True):
        got = partition_values(spec, [column], [_raw(case["type"], value)], _case_id(case))
        assert got == (text,), (case["transform"], case["type"], value)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_package_s_writer_splits_where_the_texts_differ(case):
    """The package's own writer (``split``) puts two rows in one file exactly when their
    texts are equal, and records that text."""
    type_name, spec = _key(case)
    values = [_value(case["type"], v) for v in case["values"]]  # (TIMESTAMPTZ in UTC)
    rows = pa.table({"c": pa.array(values, arrow_type_for(type_name)), "i": range(len(values))})
    texts = case["partitions"]
    for partition in split(rows, spec):
        members = partition.rows.column("i").to_pylist()
        assert {texts[i] for i in members} == {partition.values[0]}, members
        assert sorted(members) == [i for i, t in enumerate(texts) if t == partition.values[0]]
