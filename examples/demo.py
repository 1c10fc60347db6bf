"""Build a small DuckLake lake with DuckDB (the reference writer), query it from DataFusion,
change its rows through DataFusion (an insert, a delete, an update, a merge), and read the
result back with DuckDB.

Run with ``make demo``. The lake goes to ``./demo_lake`` (recreated each run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import duckdb
import duckdb_extensions
from datafusion import SessionContext

import ducklake_datafusion
from ducklake_datafusion import DuckLakeCatalog, register

HERE = os.path.abspath("demo_lake")


def build_lake() -> str:
    shutil.rmtree(HERE, ignore_errors=True)
    os.makedirs(HERE)
    catalog = os.path.join(HERE, "lake.ducklake")
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{HERE}/data')")
    con.execute(
        "CREATE TABLE lake.main.orders (id BIGINT, region VARCHAR, day DATE, amount DECIMAL(10,2))"
    )
    con.execute(
        "INSERT INTO lake.main.orders SELECT i, ['north','south','east','west'][i % 4 + 1], "
        "DATE '2024-01-01' + (i % 60)::INTEGER, (i % 997) / 10 FROM range(200000) r(i)"
    )
    con.execute("DELETE FROM lake.main.orders WHERE id % 10 = 0")  # positional deletes
    con.execute("INSERT INTO lake.main.orders VALUES (1000000, 'north', DATE '2024-03-01', 5.00)")
    con.execute("ALTER TABLE lake.main.orders RENAME COLUMN amount TO total")  # schema evolution
    con.execute("DETACH lake")
    return catalog


def main() -> None:
    catalog = build_lake()
    ctx = SessionContext()
    lake = DuckLakeCatalog(catalog)
    register(ctx, "lake", lake)
    print("schemas:", sorted(lake.list_schema_names()), "snapshot:", lake.snapshot_id())
    queries = [
        "SELECT count(*) AS orders FROM lake.main.orders",
        (
            "SELECT region, sum(total) AS revenue, count(*) AS n FROM lake.main.orders "
            "WHERE day >= DATE '2024-02-01' GROUP BY region ORDER BY region"
        ),
        "SELECT * FROM lake.main.orders WHERE id > 199995 ORDER BY id",
    ]
    for sql in queries:
        print(f"\n> {sql}")
        ctx.sql(sql).show()
    plan = lake.table("main", "orders").scan_plan()
    print(
        f"\nscan plan: {plan.stats.files_total} files, {plan.stats.files_with_deletes} with deletes, "
        f"{plan.stats.inlined_rows} inlined rows, snapshot {plan.snapshot_id}"
    )
    print("\nin time: the orders table at snapshot 2 (before the delete):")
    then = SessionContext()
    register(then, "lake", lake.at(snapshot=2))
    then.sql("SELECT count(*) AS orders FROM lake.main.orders").show()

    change_rows(catalog)

    query = "SELECT region, count(*) AS n FROM lake.main.orders GROUP BY region ORDER BY region"
    print(f'\nthe same lake from the shell:\n$ ducklake-datafusion sql {catalog} "{query}"')
    subprocess.run([sys.executable, "-m", "ducklake_datafusion", "sql", catalog, query], check=True)


def change_rows(catalog: str) -> None:
    """An insert, a delete, an update and a merge through DataFusion, each one snapshot;
    DuckDB reads the result as its own."""
    ctx = ducklake_datafusion.DuckLakeSessionContext()  # its sql() also changes rows
    register(ctx, "lake", DuckLakeCatalog(catalog))
    ctx.from_pydict(
        {"id": [2000000, 3000000], "region": ["east", "north"], "total": [9.25, 1.0]},
        name="corrections",
    )
    statements = [
        "INSERT INTO lake.main.orders VALUES (2000000, 'east', DATE '2024-03-02', 7.50)",
        "DELETE FROM lake.main.orders WHERE region = 'west' AND day < DATE '2024-01-08'",
        "UPDATE lake.main.orders SET total = total * 2 WHERE id IN (1000000, 2000000)",
        (
            "MERGE INTO lake.main.orders AS o USING corrections AS c ON o.id = c.id "
            "WHEN MATCHED THEN UPDATE SET total = c.total "
            "WHEN NOT MATCHED THEN INSERT VALUES (c.id, c.region, DATE '2024-03-03', c.total)"
        ),
    ]
    print("\nchanging rows through DataFusion:")
    for statement in statements:
        print(f"> {statement}")
        ctx.sql(statement).show()
    con = duckdb.connect()
    duckdb_extensions.import_extension("ducklake", con=con)
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (READ_ONLY)")
    print("DuckDB reads the changed lake:")
    print(
        con.sql(
            "SELECT snapshot_id, changes FROM lake.snapshots() ORDER BY snapshot_id DESC LIMIT 4"
        )
    )
    print(con.sql("SELECT id, region, total FROM lake.main.orders WHERE id >= 1000000 ORDER BY id"))
    con.close()


if __name__ == "__main__":
    main()
