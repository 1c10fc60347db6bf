"""Predicates counted by every reader that prunes with a file's statistics, against the
same reader's count over the same rows in memory (``tests/write/test_footer_statistics.py``,
``tests/spark/test_spark_footer_statistics.py``).

:data:`EDGES` holds edge values of every scalar type we write; :func:`edge_rows` cycles
them over a file's rows; :func:`predicates` draws ``(op, value)`` pairs from a column's
values and extras (NaN, +-inf, +-1e30, +-0.0 for floats); :func:`duckdb_counts` and
:func:`datafusion_counts` count each predicate with one scan of its own (so each scan
prunes by it), all in one ``UNION ALL`` query.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa

__all__ = [
    "EDGES",
    "FLOATS",
    "assert_every_reader_agrees",
    "data_files",
    "datafusion_counts",
    "duckdb_counts",
    "edge_rows",
    "mismatches",
    "predicates",
    "sql_types",
]

NAN, INF = float("nan"), float("inf")
UTC = dt.timezone.utc
OPS = ("<", "<=", "=", ">=", ">")

# Per column: its Arrow type and its edge values (cycled over the rows of a file).
EDGES: dict[str, tuple[pa.DataType, list]] = {
    "i8": (pa.int8(), [-128, 127, 0, None, -1]),
    "i16": (pa.int16(), [-(2**15), 2**15 - 1, 0, None]),
    "i32": (pa.int32(), [-(2**31), 2**31 - 1, 7, None]),
    "i64": (pa.int64(), [-(2**63), 2**63 - 1, 0, None, 42]),
    "u8": (pa.uint8(), [0, 255, 128, None]),
    "u16": (pa.uint16(), [0, 2**16 - 1, None]),
    "u32": (pa.uint32(), [0, 2**32 - 1, 2**31, None]),
    "u64": (pa.uint64(), [0, 2**64 - 1, 2**63, None]),
    "f32": (pa.float32(), [1.5, NAN, -0.0, INF, None, -2.25]),
    "f64": (pa.float64(), [1166.33, NAN, 333.33, -INF, 0.0, None, -0.0, 5e-324]),
    "f64_inf": (pa.float64(), [INF, -INF, 1.0, None]),
    "dec": (pa.decimal128(10, 2), [decimal.Decimal("-99999999.99"), decimal.Decimal(0), None]),
    "dec38": (pa.decimal128(38, 10), [decimal.Decimal("1.5"), decimal.Decimal("-1e-10"), None]),
    "text": (pa.string(), ["", "é" * 200, "z" * 300, "a", "Ω", None]),
    "blob": (pa.binary(), [b"", b"\x00", b"\xff" * 300, b"\x01", None]),
    "flag": (pa.bool_(), [True, False, None]),
    "day": (pa.date32(), [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1), None]),
    "ts": (
        pa.timestamp("us"),
        [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(2020, 1, 1)],
    ),
    "tstz": (
        pa.timestamp("us", tz="UTC"),
        [dt.datetime(2024, 1, 1, 10, tzinfo=UTC), dt.datetime(1970, 1, 1, tzinfo=UTC), None],
    ),
}
FLOATS = ("f32", "f64", "f64_inf")
# values a predicate compares with beyond each column's own
EXTRA = {name: [NAN, INF, -INF, 1e30, -1e30, 0.0, -0.0, 1990.0] for name in FLOATS}
# (no text holding NUL: DuckDB 1.5.5's DuckLake scan splices such a bound into its catalog
# query unescaped and fails to parse it, whoever wrote the files)
EXTRA.update({"i64": [-1, 1], "u64": [1], "text": ["zz", "zzz"], "blob": [b"\x00\x00"]})


def _column(name: str, rows: int, offset: int, *, only_nan: bool = False) -> pa.Array:
    kind, values = EDGES[name]
    if only_nan and name in FLOATS:
        return pa.array([NAN] * rows, kind)
    return pa.array([values[(offset + i) % len(values)] for i in range(rows)], kind)


def edge_rows(
    rows: int, offset: int = 0, *, only_nan: bool = False, no_nan: bool = False, names=None
) -> pa.Table:
    """``rows`` rows of the columns ``names`` (all of :data:`EDGES` by default), each
    cycling through its edge values from ``offset``; ``only_nan``: the float columns all
    NaN; ``no_nan``: their NaN made NULL."""
    table = pa.table({n: _column(n, rows, offset, only_nan=only_nan) for n in names or EDGES})
    if no_nan:
        for name in (n for n in FLOATS if n in table.column_names):
            clean = pa.array(
                [None if v is not None and math.isnan(v) else v for v in table[name].to_pylist()],
                EDGES[name][0],
            )
            table = table.set_column(table.schema.get_field_index(name), name, clean)
    return table


def data_files(lake, table: str) -> list[str]:
    """The live data files of ``lake.main.<table>`` (DuckDB's list)."""
    return (
        lake.reference("SELECT data_file FROM ducklake_list_files('lake', ?)", params=[table])
        .column(0)
        .to_pylist()
    )


def predicates(rows: pa.Table, name: str) -> list[tuple[str, object]]:
    """``(op, value)`` for every operator against each value of the column and the extras;
    ``("IS NULL", None)`` and ``("IS NOT NULL", None)``."""
    seen, values = set(), []
    for value in rows[name].to_pylist() + EXTRA.get(name, []):
        key = ("nan",) if isinstance(value, float) and math.isnan(value) else (repr(value),)
        if value is not None and key not in seen:
            seen.add(key)
            values.append(value)
    return [(op, v) for v in values for op in OPS] + [("IS NULL", None), ("IS NOT NULL", None)]


def duckdb_counts(con, source: str, name: str, predicates_, sql_type: str) -> list[int]:
    """DuckDB's count of each predicate over ``source``, one scan (and pruning) each."""
    parts, params = [], []
    for index, (op, value) in enumerate(predicates_):
        if value is None:
            where = f'"{name}" {op}'
        else:
            where = f'"{name}" {op} CAST(? AS {sql_type})'
            params.append(value)
        parts.append(f"SELECT {index} AS k, count(*) AS n FROM {source} WHERE {where}")
    rows = con.execute(" UNION ALL ".join(parts) + " ORDER BY k", params).fetchall()
    return [n for _, n in rows]


def datafusion_counts(ctx, source: str, name: str, predicates_) -> list[int]:
    """DataFusion's count of each predicate over ``source``, one scan each."""
    kind = ctx.sql(f"SELECT * FROM {source} LIMIT 0").schema().field(name).type
    parts, params = [], {}
    for index, (op, value) in enumerate(predicates_):
        if value is None:
            where = f'"{name}" {op}'
        else:
            where = f'"{name}" {op} $v{index}'
            params[f"v{index}"] = pa.scalar(value, kind)  # the column's own type
        parts.append(f"SELECT {index} AS k, count(*) AS n FROM {source} WHERE {where}")
    sql = " UNION ALL ".join(parts) + " ORDER BY k"
    return [row["n"] for row in ctx.sql(sql, param_values=params).to_pylist()]


def sql_types(lake, table: str) -> dict[str, str]:
    """DuckDB's type of each column of ``lake.main.<table>``."""
    row = lake.reference(f"SELECT * FROM lake.main.{table} LIMIT 0")
    con = lake.attach()
    types = {
        name: kind
        for name, kind in con.execute(
            f"SELECT column_name, column_type FROM (DESCRIBE lake.main.{table})"
        ).fetchall()
    }
    lake.detach()
    assert set(types) == set(row.column_names)
    return types


def mismatches(predicates_, counts, truth) -> list:
    """``(predicate, count, count in memory)`` where a reader's count is not the truth."""
    return [(p, c, t) for p, c, t in zip(predicates_, counts, truth) if c != t]


def assert_every_reader_agrees(lake, table: str, rows: pa.Table, names=None) -> int:
    """Every predicate over every column (``names``, default all of ``rows``) of
    ``lake.main.<table>``, counted by DuckDB through the catalog and by its
    ``read_parquet`` over the table's files (against DuckDB over ``rows`` in memory), by
    DataFusion's ``register_parquet`` over the files and by our reader on both paths
    (against DataFusion over ``rows`` in memory). Returns the number of predicates."""
    import duckdb
    from datafusion import SessionContext

    from ducklake_datafusion import DuckLakeCatalog, register

    files = data_files(lake, table)
    types = sql_types(lake, table)
    memory = duckdb.connect()
    memory.register("rows_arrow", rows)
    memory.execute("CREATE TABLE mem AS SELECT * FROM rows_arrow")
    file_list = "[" + ", ".join(f"'{f}'" for f in files) + "]"

    ctx = SessionContext()
    ctx.register_record_batches("mem", [rows.to_batches()])
    ctx.register_parquet("files", files[0].rsplit("/", 1)[0] + "/", file_extension=".parquet")
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    exact = SessionContext()
    register(exact, "lake", DuckLakeCatalog(**lake.reader_args(), native=False))

    con = lake.attach()
    checked = 0
    try:
        for name in names or rows.column_names:
            cases = predicates(rows, name)
            checked += len(cases)
            what = f"{table}.{name}"
            duck_truth = duckdb_counts(memory, "mem", name, cases, types[name])
            fusion_truth = datafusion_counts(ctx, "mem", name, cases)
            answers = {
                "DuckDB through the catalog": (
                    duckdb_counts(con, f"lake.main.{table}", name, cases, types[name]),
                    duck_truth,
                ),
                "DuckDB's read_parquet": (
                    duckdb_counts(con, f"read_parquet({file_list})", name, cases, types[name]),
                    duck_truth,
                ),
                "DataFusion's register_parquet": (
                    datafusion_counts(ctx, "files", name, cases),
                    fusion_truth,
                ),
                "our Rust scan": (
                    datafusion_counts(ctx, f"lake.main.{table}", name, cases),
                    fusion_truth,
                ),
                "our exact path": (
                    datafusion_counts(exact, f"lake.main.{table}", name, cases),
                    fusion_truth,
                ),
            }
            for reader, (counts, truth) in answers.items():
                wrong = mismatches(cases, counts, truth)
                assert not wrong, f"{what}, {reader}: (predicate, count, in memory) {wrong[:5]}"
    finally:
        lake.detach()
    return checked
