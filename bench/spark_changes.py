"""Spark change feed benchmark: ``read_changes`` (computed by Spark) vs the format option.

    .venv/bin/python bench/spark_changes.py             # 1M rows, 20 change snapshots
    .venv/bin/python bench/spark_changes.py --repeat 5

The lake (cached under ``./bench_lakes/``): table ``t`` (id BIGINT, k INTEGER, v DOUBLE,
s VARCHAR), 1M rows inserted in four 250k-row files, then 20 snapshots cycling through
an UPDATE of ~1000 rows spread over every file, a DELETE of ~1000 rows, an INSERT of 10k
rows and an UPDATE of 5000 adjacent rows. Two feeds:

* ``changes``: the 20 change snapshots (~57k feed rows);
* ``everything``: from the table's creation on (~1.06M feed rows: the initial inserts too).

Readers, round-robin, median of ``--repeat`` runs after one warm-up, each run a fresh
DataFrame written to Spark's ``noop`` sink (every row computed, nothing collected):

* ``read_changes``: the distributed feed (side scans of the differing files, joined on
  rowid by Spark, ``spark/changes/_feed.py``);
* ``format option``: ``.option("read_changes", ...)``: the feed computed by the core's
  ``table_changes`` in Spark's planning worker and shipped in the partitions;
* ``core``: ``functions.table_changes`` in this process (no Spark), for reference.

Both Spark answers are checked equal (ordered) to the core's. Also reported: the bytes of
the pickled input partitions each Spark path plans (what the driver ships).
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cached_lake, environment, load_average, markdown_table, measure_interleaved

ROWS = 1_000_000
FILES = 4
CHANGES = 20


def _build(con) -> None:
    con.execute("CREATE TABLE lake.main.t (id BIGINT, k INTEGER, v DOUBLE, s VARCHAR)")
    per_file = ROWS // FILES
    for f in range(FILES):
        con.execute(
            "INSERT INTO lake.main.t SELECT i, (i * 7919) % 1000, i / 3, 's' || (i % 1000) "
            f"FROM range({f * per_file}, {(f + 1) * per_file}) r(i)"
        )
    next_id = ROWS
    for n in range(CHANGES):
        kind = n % 4
        if kind == 0:
            con.execute(f"UPDATE lake.main.t SET v = v + 1 WHERE id % 997 = {n}")
        elif kind == 1:
            con.execute(f"DELETE FROM lake.main.t WHERE id % 1009 = {n}")
        elif kind == 2:
            con.execute(
                f"INSERT INTO lake.main.t SELECT i, 1, 0, 'new' "
                f"FROM range({next_id}, {next_id + 10_000}) r(i)"
            )
            next_id += 10_000
        else:
            start = 1000 + n * 40_000
            con.execute(
                f"UPDATE lake.main.t SET s = 'u{n}' WHERE id BETWEEN {start} AND {start + 4999}"
            )


def _spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("ducklake-spark-changes-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _partition_bytes(lake, table: str, first: int, last: int) -> tuple[int, int]:
    """Pickled bytes of the input partitions: format option path, both side scans."""
    from ducklake_datafusion.spark import DuckLakeDataSource
    from ducklake_datafusion.spark._core._options import SourceOptions
    from ducklake_datafusion.spark.changes._feed import feed_layout
    from ducklake_datafusion.spark.changes._side_source import DuckLakeChangeSideReader

    source = DuckLakeDataSource(
        {"metadata": lake.metadata, "path": table, "read_changes": f"{first},{last}"}
    )
    old = len(pickle.dumps(source.reader(source.schema()).partitions()))
    options = SourceOptions.parse(
        {
            "metadata": lake.metadata,
            "path": table,
            "changes_start": str(first),
            "changes_end": str(last),
        }
    )
    with options.pinned(last).open_table() as opened:
        layout = feed_layout(opened.columns, None, table)
    new = 0
    for side in ("old", "new"):
        reader = DuckLakeChangeSideReader(options, side, layout.side_schema)
        new += len(pickle.dumps(reader.partitions()))
    return old, new


def _noop(make, first: int, end: int) -> None:
    """Compute every row of a fresh feed DataFrame without collecting it."""
    make(first, end).write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from ducklake_datafusion import DuckLakeCatalog
    from ducklake_datafusion.provider.functions import table_changes
    from ducklake_datafusion.spark import read_changes, register_spark

    lake, built = cached_lake("changes", {"rows": ROWS, "files": FILES, "n": CHANGES}, _build)
    if built:
        print(f"built the lake in {built:.1f} s")
    catalog = DuckLakeCatalog(lake.metadata)
    last = catalog.snapshot_id()  # 1: CREATE, 2..5: the inserts, 6..25: the changes
    catalog.backend.close()
    assert last == 1 + FILES + CHANGES, last
    feeds = {"changes": (2 + FILES, last), "everything": (0, last)}
    spark = _spark()
    register_spark(spark)

    def core(first, end):
        catalog = DuckLakeCatalog(lake.metadata)
        try:
            return table_changes(catalog, "main", "t", first, end)
        finally:
            catalog.backend.close()

    def distributed(first, end):
        return read_changes(spark, lake.metadata, "main.t", first, end)

    def format_option(first, end):
        return (
            spark.read.format("ducklake")
            .option("metadata", lake.metadata)
            .option("read_changes", f"{first},{end}")
            .load("main.t")
        )

    rows = []
    for name, (first, end) in feeds.items():
        want = core(first, end)
        for label, make in (("read_changes", distributed), ("format option", format_option)):
            got = make(first, end).toArrow()
            assert got.num_rows == want.num_rows, (label, got.num_rows, want.num_rows)
            for column in got.column_names:  # (Spark's nullability differs)
                assert got[column].equals(want[column].cast(got[column].type)), (label, column)
        timings = measure_interleaved(
            {
                "read_changes": functools.partial(_noop, distributed, first, end),
                "format option": functools.partial(_noop, format_option, first, end),
                "core": functools.partial(core, first, end),
            },
            repeat=args.repeat,
        )
        shipped_old, shipped_new = _partition_bytes(lake, "main.t", first, end)
        rows.append(
            [
                f"{name} ({first}..{end}, {want.num_rows:,} rows)",
                f"{timings['read_changes'][0].median:.2f} s",
                f"{timings['format option'][0].median:.2f} s",
                f"{timings['core'][0].median:.2f} s",
                f"{shipped_new / 1e3:,.0f} kB",
                f"{shipped_old / 1e6:,.1f} MB",
            ]
        )
    headers = [
        "feed",
        "read_changes",
        "format option (driver)",
        "core, no Spark",
        "partitions shipped (read_changes)",
        "(format option)",
    ]
    print(markdown_table(headers, rows))
    print(f"load average: {load_average()}")
    print(environment())
    spark.stop()


if __name__ == "__main__":
    main()
