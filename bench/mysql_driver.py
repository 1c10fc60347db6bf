"""Which MySQL driver reads a 10,000-file table's catalog rows fastest (catalog/_mysql.py).

    eval "$(.ci/start_mysql.sh)"
    .venv/bin/python bench/mysql_driver.py [--files 10000]
    .ci/stop_mysql.sh "$DUCKLAKE_TEST_MYSQL_DIR"

Builds the ``files`` lake with a DuckDB-file catalog (``common.build_many_files``), copies
its catalog rows into a fresh MySQL database on ``DUCKLAKE_TEST_MYSQL`` (DuckDB's MySQL
extension cannot write a second INSERT there, so the copy is how such a catalog is made,
as in ``tests/support/mysql_lakes.py``), and times the planner's two big reads (live data
files, and their statistics) with PyMySQL and mysql-connector-python, each as Python rows
and as the backend's CSV text (``_bulk.mysql_csv_query``), then planning the whole table
through ``DuckLakeCatalog`` (metadata memo dropped each time, as after a commit).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

from common import build_many_files, cached_lake, connect, markdown_table, measure, millis

from ducklake_datafusion import DuckLakeCatalog
from ducklake_datafusion.catalog import _sql
from ducklake_datafusion.catalog._bulk import mysql_csv_query, parse_csv
from ducklake_datafusion.catalog._mysql import mysql_sql
from ducklake_datafusion.catalog._rows import conform_to, rows_to_arrow

STATS_SQL = (
    "SELECT data_file_id, column_id, value_count, null_count, min_value, max_value, "
    "contains_nan FROM ducklake_file_column_stats WHERE table_id = ?"
)


def _keys(conninfo: str) -> dict:
    return dict(part.split("=", 1) for part in conninfo.split())


def mysql_copy(source_metadata: str, data_path: str, conninfo: str) -> str:
    """A new MySQL database holding the catalog rows of the DuckDB-file catalog."""
    import pymysql

    keys = _keys(conninfo)
    database = f"bench_{uuid.uuid4().hex[:8]}"
    admin = pymysql.connect(
        host=keys["host"], port=int(keys["port"]), user=keys["user"], autocommit=True
    )
    with admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
    target = f"{conninfo} database={database}"
    con = connect("mysql")
    con.execute(f"ATTACH 'ducklake:mysql:{target}' AS init (DATA_PATH '{data_path}')")
    con.execute("DETACH init")
    con.execute(f"ATTACH '{source_metadata}' AS src (READ_ONLY)")
    names = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'src' "
            "AND table_name LIKE 'ducklake_%'"
        ).fetchall()
    ]
    con.execute(f"ATTACH '{target}' AS dst (TYPE mysql)")
    for name in names:
        if name.startswith("ducklake_inlined_data_") and name != "ducklake_inlined_data_tables":
            con.execute(f'CREATE TABLE dst."{name}" AS SELECT * FROM src."{name}"')
            continue
        con.execute(f'DELETE FROM dst."{name}"')
        con.execute(f'INSERT INTO dst."{name}" BY NAME SELECT * FROM src."{name}"')
    con.close()
    return database


def _connections(keys: dict, database: str) -> dict:
    import mysql.connector
    import pymysql

    common = {"host": keys["host"], "port": int(keys["port"]), "user": keys["user"]}
    common["database"] = database
    pym = pymysql.connect(**common, charset="utf8mb4")
    conn = mysql.connector.connect(**common, charset="utf8mb4")
    for c in (pym, conn):
        cursor = c.cursor()
        cursor.execute(
            "SET SESSION sql_mode = 'ANSI_QUOTES', group_concat_max_len = @@max_allowed_packet"
        )
        cursor.close()
    return {"PyMySQL 1.2.4": pym, "mysql-connector-python 26.10 (pure)": conn}


def _reader(connection, bulk: bool):
    def read(sql, params, schema):
        cursor = connection.cursor()
        if bulk:
            cursor.execute(mysql_sql(mysql_csv_query(sql, schema), params), tuple(params))
            text, _count = cursor.fetchone()
            data = text.encode() if isinstance(text, str) else bytes(text)
            return parse_csv(data + b"\n", schema)
        cursor.execute(mysql_sql(sql, params), tuple(params))
        names = [d[0] for d in cursor.description]
        return conform_to(rows_to_arrow(names, cursor.fetchall()), schema)

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    conninfo = os.environ.get("DUCKLAKE_TEST_MYSQL")
    if not conninfo:
        raise SystemExit('DUCKLAKE_TEST_MYSQL is not set: eval "$(.ci/start_mysql.sh)"')
    lake, built = cached_lake(
        "files", {"n": args.files}, lambda con: build_many_files(con, args.files)
    )
    how = f"built in {built:.1f} s" if built else "cached"
    print(f"lake: {args.files} files ({how})")
    started = time.perf_counter()
    database = mysql_copy(lake.metadata, str(lake.root / "data") + "/", conninfo)
    print(f"catalog copied to MySQL in {time.perf_counter() - started:.1f} s")
    keys = _keys(conninfo)
    catalog = DuckLakeCatalog(f"mysql:{conninfo} database={database}")
    table = catalog.table("main", "t")
    tid, snap = table.entry.table_id, table.snapshot_id
    queries = [
        (_sql.DATA_FILES_SQL, [tid, snap, snap], _sql.DATA_FILES_SCHEMA),
        (STATS_SQL, [tid], _sql.STATS_SCHEMA),
    ]
    rows = []
    for name, connection in _connections(keys, database).items():
        for bulk in (False, True):
            read = _reader(connection, bulk)
            timing, result = measure(
                lambda read=read: [read(*q) for q in queries], repeat=args.repeat
            )
            counts = "+".join(str(t.num_rows) for t in result)
            rows.append([name, "CSV text" if bulk else "rows", millis(timing.median), counts])

    def plan():
        catalog.backend.cache.clear()  # as after a commit: every catalog row read again
        return table.scan_plan()

    timing, planned = measure(plan, repeat=args.repeat)
    files = planned.stats.files_total
    rows.append(
        ["DuckLakeCatalog (PyMySQL, bulk)", "scan_plan()", millis(timing.median), f"{files} files"]
    )
    print(markdown_table(["driver", "fetched as", "median", "rows"], rows))
    catalog.close()


if __name__ == "__main__":
    main()
