"""Write benchmark: our INSERT against DuckDB's own INSERT into a DuckLake, same data.

    .venv/bin/python bench/write.py                 # 10M rows, DuckDB-file and SQLite catalogs
    .venv/bin/python bench/write.py --rows 1000000  # quicker
    DUCKLAKE_TEST_PG='host=... dbname=...' .venv/bin/python bench/write.py   # + PostgreSQL

For each catalog kind, one Parquet file of ``--rows`` rows (k BIGINT, g INTEGER, v DOUBLE,
s VARCHAR, d DATE) is inserted into an empty DuckLake table:

* **ours**: DataFusion ``INSERT INTO lake.main.t SELECT * FROM src`` (``src`` registered
  with ``register_parquet``), through the Rust provider's sink into our writer;
* **duckdb**: DuckDB 1.5.5's ``INSERT INTO lake.t SELECT * FROM read_parquet(...)`` into a
  lake of the same catalog kind (inlining off).

Each run writes into a fresh lake; medians of ``--repeat`` runs, engines alternating.
Both results are read back by DuckDB and compared (count, sums). Then, on PostgreSQL when
``DUCKLAKE_TEST_PG`` is set (else SQLite), the time of one commit of 1,000 files' facts
(the commit protocol alone: files written beforehand).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
import uuid

import duckdb
import duckdb_extensions
import pyarrow as pa

from ducklake_datafusion import DuckLakeCatalog, register


def _source(directory: str, rows: int) -> str:
    path = os.path.join(directory, f"src-{rows}.parquet")
    if not os.path.exists(path):
        con = duckdb.connect()
        con.execute(
            f"COPY (SELECT i AS k, CAST(i % 97 AS INTEGER) AS g, i / 7 AS v, "
            f"'name-' || (i % 1000) AS s, DATE '2020-01-01' + CAST(i % 1461 AS INTEGER) AS d "
            f"FROM range({rows}) r(i)) TO '{path}' (FORMAT parquet)"
        )
    return path


def _connect(catalog: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    if catalog == "sqlite":
        duckdb_extensions.import_extension("sqlite_scanner", con=con)
    if catalog == "postgres":
        duckdb_extensions.import_extension("postgres_scanner", con=con)
    return con


def _new_lake(root: str, catalog: str) -> tuple[str, str]:
    """A fresh empty lake with ``main.t``: (our metadata string, DuckDB's attach string)."""
    name = uuid.uuid4().hex[:8]
    data = os.path.join(root, name, "data") + "/"
    os.makedirs(data)
    if catalog == "duckdb":
        metadata = os.path.join(root, name, "cat.ducklake")
    elif catalog == "sqlite":
        metadata = "sqlite:" + os.path.join(root, name, "cat.sqlite")
    else:
        import psycopg

        base = os.environ["DUCKLAKE_TEST_PG"]
        db = f"bench_{name}"
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {db}")
        metadata = f"postgres:{base} dbname={db}"
    con = _connect(catalog)
    con.execute(
        f"ATTACH 'ducklake:{metadata}' AS lake (DATA_PATH '{data}', DATA_INLINING_ROW_LIMIT 0)"
    )
    con.execute("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, v DOUBLE, s VARCHAR, d DATE)")
    con.execute("DETACH lake")
    con.close()
    return metadata, data


def _ours(root: str, catalog: str, source: str) -> tuple[float, tuple]:
    metadata, _ = _new_lake(root, catalog)
    from datafusion import SessionContext

    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(metadata))
    ctx.register_parquet("src", source)
    start = time.perf_counter()
    ctx.sql("INSERT INTO lake.main.t SELECT * FROM src").collect()
    elapsed = time.perf_counter() - start
    return elapsed, _check(catalog, metadata)


def _duckdb(root: str, catalog: str, source: str) -> tuple[float, tuple]:
    metadata, _ = _new_lake(root, catalog)
    con = _connect(catalog)
    con.execute(f"ATTACH 'ducklake:{metadata}' AS lake (DATA_INLINING_ROW_LIMIT 0)")
    start = time.perf_counter()
    con.execute(f"INSERT INTO lake.main.t SELECT * FROM read_parquet('{source}')")
    elapsed = time.perf_counter() - start
    con.execute("DETACH lake")
    return elapsed, _check(catalog, metadata)


def _check(catalog: str, metadata: str) -> tuple:
    con = _connect(catalog)
    con.execute(f"ATTACH 'ducklake:{metadata}' AS lake (READ_ONLY)")
    row = con.execute("SELECT count(*), sum(k), sum(g), sum(length(s)) FROM lake.main.t").fetchone()
    con.close()
    return row


def _commit_of_many_files(root: str, catalog: str, files: int) -> float:
    """One commit of ``files`` files' facts (written beforehand)."""
    from ducklake_datafusion.catalog import TableCommit, commit
    from ducklake_datafusion.write import DataFileWriter

    metadata, data = _new_lake(root, catalog)
    lake = DuckLakeCatalog(metadata)
    table = lake.table("main", "t")
    batch = pa.table(
        {
            "k": [1],
            "g": pa.array([1], pa.int32()),
            "v": [1.0],
            "s": ["x"],
            "d": pa.array([0], pa.date32()),
        }
    )
    written = []
    for _ in range(files):
        writer = DataFileWriter(data + "main/t/", table.columns, None, description="bench")
        writer.write(batch)
        written += writer.close()
    request = TableCommit(
        schema_name="main",
        table_name="t",
        base_snapshot=table.snapshot_id,
        table_id=table.entry.table_id,
        files=tuple(f.data_file for f in written),
        column_types={c.column_id: c.type_name for c in table.columns},
    )
    start = time.perf_counter()
    commit(lake.backend, request)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    catalogs = ["duckdb", "sqlite"] + (["postgres"] if os.environ.get("DUCKLAKE_TEST_PG") else [])
    root = tempfile.mkdtemp(prefix="ducklake-write-bench-")
    try:
        source = _source(root, args.rows)
        print(
            f"{args.rows:,} rows, {os.path.getsize(source) / 1e6:.0f} MB of Parquet; "
            f"median of {args.repeat}"
        )
        print("| catalog | ours (s) | DuckDB (s) | ours / DuckDB |")
        print("|---|---|---|---|")
        for catalog in catalogs:
            times = {"ours": [], "duckdb": []}
            answers = set()
            for _ in range(args.repeat):
                for name, run in (("ours", _ours), ("duckdb", _duckdb)):
                    elapsed, answer = run(root, catalog, source)
                    times[name].append(elapsed)
                    answers.add(answer)
            if len(answers) != 1:
                raise SystemExit(f"{catalog}: the lakes differ: {answers}")
            ours, theirs = statistics.median(times["ours"]), statistics.median(times["duckdb"])
            print(f"| {catalog} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f}x |")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak memory of this process (both engines' runs): {peak:.0f} MB")
        catalog = "postgres" if "postgres" in catalogs else "sqlite"
        took = _commit_of_many_files(root, catalog, args.files)
        print(f"\none commit of {args.files:,} files on {catalog}: {took * 1000:.0f} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
