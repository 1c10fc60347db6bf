"""Where the time of a full scan goes: the full aggregate of bench/scan.py, taken apart.

    .venv/bin/python bench/profile_scan.py             # on the 10M-row lake of scan.py
    .venv/bin/python bench/profile_scan.py --quick     # on the 1M-row lake
    .venv/bin/python bench/profile_scan.py --py-spy    # also sample a run with py-spy

Query: ``SELECT count(*), sum(v), max(k) FROM t`` (half the files carry deletes), so the
scan reads columns v and k. Three tables:

1. engines: DuckDB, ours, DataFusion over a raw pyarrow dataset (default and large
   batches), DataFusion's own Parquet reader, and DataFusion over the same columns already
   in memory (the aggregation alone);
2. our executor without DataFusion, piece by piece (Python drains the batches);
3. knobs through DataFusion: partitions, our output batch size, pyarrow's thread pool.

Every row is a median of round-robin runs, wall clock and process CPU seconds.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from common import (
    attach,
    connect,
    environment,
    load_average,
    markdown_table,
    measure_interleaved,
    seconds,
)
from datafusion import SessionConfig, SessionContext
from scan import FULL, QUICK, scan_lake

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.provider import DuckLakeDataset, _dataset
from ducklake_datafusion.read import read_request
from ducklake_datafusion.read._deletes import decoded_deletes, deleted_positions
from ducklake_datafusion.read._reader import open_file, read_data_file, scan_clean_files

QUERY = "SELECT count(*) AS n, sum(v) AS sv, max(k) AS mk FROM {t}"
COLUMNS = ["v", "k"]


def drain(batches) -> int:
    return sum(b.num_rows for b in batches)


def rows_of(timed: dict, note: dict | None = None) -> list[list[str]]:
    note = note or {}
    return [
        [name, seconds(t.median), seconds(t.cpu_median), note.get(name, "")]
        for name, (t, _) in timed.items()
    ]


def engines(lake, plan, repeat: int) -> list[list[str]]:
    """The query on each engine (DuckDB attached READ_ONLY next to our reader)."""
    paths = [task.file.url for task in plan.tasks]
    native_dir = lake.root / "native_t"  # symlinks to the live data files only
    if not native_dir.exists():
        native_dir.mkdir()
        for i, path in enumerate(paths):
            os.symlink(path, native_dir / f"{i:03d}.parquet")
    ours = SessionContext()
    register(ours, "lake", DuckLakeCatalog(lake.metadata))
    raw = SessionContext()
    raw.register_dataset("raw", ds.dataset(paths, format="parquet"))
    raw_big = SessionContext(SessionConfig().with_batch_size(131_072))
    raw_big.register_dataset("raw", ds.dataset(paths, format="parquet"))
    native = SessionContext()
    native.register_parquet("native", str(native_dir))
    table = ds.dataset(paths, format="parquet").to_table(columns=COLUMNS)
    half = table.num_rows // 2
    memory = SessionContext()
    memory.register_record_batches(
        "mem", [table.slice(0, half).to_batches(), table.slice(half).to_batches()]
    )
    con = connect()
    attach(con, lake, read_only=True)
    try:
        timed = measure_interleaved(
            {
                "DuckDB + ducklake": lambda: con.execute(
                    QUERY.format(t="lake.main.t")
                ).to_arrow_table(),
                "ours (DataFusion)": lambda: ours.sql(QUERY.format(t="lake.main.t")).collect(),
                "raw pyarrow dataset, batch 8192": lambda: raw.sql(QUERY.format(t="raw")).collect(),
                "raw pyarrow dataset, batch 131072": lambda: raw_big.sql(
                    QUERY.format(t="raw")
                ).collect(),
                "DataFusion native Parquet": lambda: native.sql(QUERY.format(t="native")).collect(),
                "DataFusion, columns in memory": lambda: memory.sql(
                    QUERY.format(t="mem")
                ).collect(),
            },
            repeat=repeat,
        )
    finally:
        con.close()
    return rows_of(
        timed,
        {
            "DuckDB + ducklake": "deletes applied",
            "ours (DataFusion)": "deletes applied",
            "raw pyarrow dataset, batch 8192": "deletes ignored; DataFusion's default batch",
            "DataFusion native Parquet": "deletes ignored",
            "DataFusion, columns in memory": "aggregation only: no decode",
        },
    )


def per_row_group(url: str) -> int:
    """Decode a file the way the per-file reader does: a new batch reader per row group."""
    parquet = pq.ParquetFile(url, pre_buffer=True)
    return sum(
        drain(parquet.iter_batches(batch_size=131_072, row_groups=[i], columns=COLUMNS))
        for i in range(parquet.num_row_groups)
    )


def drain_fragment(fragment) -> int:
    return drain(fragment.scanner(columns=COLUMNS).to_batches())


def executor_pieces(table, plan, repeat: int) -> list[list[str]]:
    """Our executor without DataFusion, and plain pyarrow decoding the same files."""
    request = read_request(plan, COLUMNS)
    clean = [t for t in plan.tasks if t.fast]
    dirty = [t for t in plan.tasks if not t.fast]
    urls = [t.file.url for t in plan.tasks]
    dirty_urls = [t.file.url for t in dirty]
    fragments = DuckLakeDataset(table).get_fragments()
    pool = ThreadPoolExecutor(len(fragments))
    sample = deleted_positions(
        dirty[0].deletes, plan.snapshot_id, lambda r: open_file(r, plan.storage), "x"
    )
    timed = measure_interleaved(
        {
            f"pyarrow dataset, all {len(urls)} files (decode only)": lambda: drain(
                ds.dataset(urls, format="parquet").to_batches(columns=COLUMNS, batch_size=131_072)
            ),
            f"ours execute_tasks, all {len(plan.tasks)} tasks, 1 thread": lambda: drain(
                _dataset.execute_tasks(plan, plan.tasks, request)
            ),
            f"ours, {len(fragments)} DataFusion fragments, one Python thread each": lambda: sum(
                pool.map(drain_fragment, fragments)
            ),
            f"ours, {len(clean)} clean files, one dataset scan": lambda: drain(
                scan_clean_files(clean, request)
            ),
            f"ours, {len(clean)} clean files, per-file reader": lambda: sum(
                drain(read_data_file(t, request)) for t in clean
            ),
            f"ours, {len(dirty)} files with deletes, per-file reader": lambda: sum(
                drain(read_data_file(t, request)) for t in dirty
            ),
            f"pyarrow dataset, the {len(dirty)} files with deletes (decode only)": lambda: drain(
                ds.dataset(dirty_urls, format="parquet").to_batches(
                    columns=COLUMNS, batch_size=131_072
                )
            ),
            f"pq.ParquetFile.iter_batches, the {len(dirty)} files (decode only)": lambda: sum(
                drain(pq.ParquetFile(u).iter_batches(batch_size=131_072, columns=COLUMNS))
                for u in dirty_urls
            ),
            "the same, one iter_batches call per row group (as ours)": lambda: sum(
                per_row_group(u) for u in dirty_urls
            ),
            f"deleted_positions() for the {len(dirty)} files, decoded": lambda: (
                decoded_deletes.clear(),  # decoded now, then cached for the next row
                [
                    deleted_positions(
                        t.deletes, plan.snapshot_id, lambda r: open_file(r, plan.storage), "x"
                    )
                    for t in dirty
                ],
            ),
            f"deleted_positions() for the {len(dirty)} files, cached": lambda: [
                deleted_positions(
                    t.deletes, plan.snapshot_id, lambda r: open_file(r, plan.storage), "x"
                )
                for t in dirty
            ],
            f"np.unique of {len(sample):,} sorted positions, x{len(dirty)}": lambda: [
                np.unique(sample) for _ in dirty
            ],
            f"np.sort of the same, x{len(dirty)}": lambda: [np.sort(sample) for _ in dirty],
        },
        repeat=repeat,
    )
    pool.shutdown()
    return rows_of(timed)


@contextmanager
def output_batch_size(rows: int):
    """Make our scanners read and yield ``rows``-row batches (default 131,072)."""
    original = _dataset.read_request

    def patched(*args, **kwargs):
        return dataclasses.replace(original(*args, **kwargs), batch_size=rows)

    _dataset.read_request = patched
    try:
        yield
    finally:
        _dataset.read_request = original


def knobs(lake, repeat: int) -> list[list[str]]:
    """Ours through DataFusion with one setting changed at a time."""
    sql = QUERY.format(t="lake.main.t")
    catalog = DuckLakeCatalog(lake.metadata)

    def context(partitions: int | None = None):
        config = SessionConfig()
        if partitions:
            config = config.with_target_partitions(partitions)
        ctx = SessionContext(config)
        register(ctx, "lake", catalog)
        return lambda: ctx.sql(sql).collect()

    def with_batch(rows: int):
        run = context()

        def go():
            with output_batch_size(rows):
                return run()

        return go

    def with_arrow_threads(threads: int):
        run = context()

        def go():
            before = pa.cpu_count()
            pa.set_cpu_count(threads)
            try:
                return run()
            finally:
                pa.set_cpu_count(before)

        return go

    timed = measure_interleaved(
        {
            "default (2 partitions, 131072-row batches)": context(),
            "target_partitions = 1": context(1),
            "target_partitions = 4": context(4),
            "batch 32768": with_batch(32_768),
            "batch 524288": with_batch(524_288),
            "pyarrow cpu_count = 1": with_arrow_threads(1),
            "pyarrow cpu_count = 4": with_arrow_threads(4),
        },
        repeat=repeat,
    )
    return rows_of(timed)


def py_spy(lake, runs: int = 10) -> str:
    """Sample ``runs`` executions with py-spy (native frames) and summarise the stacks."""
    exe = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(exe):
        return "py-spy not installed (pip install py-spy)"
    script = (
        "import datafusion\n"
        "from ducklake_datafusion import DuckLakeCatalog, register\n"
        "ctx = datafusion.SessionContext()\n"
        f"register(ctx, 'lake', DuckLakeCatalog({lake.metadata!r}))\n"
        f"sql = {QUERY.format(t='lake.main.t')!r}\n"
        "ctx.sql(sql).collect()\n"
        "import time; time.sleep(0.3)\n"  # the idle-close timer ends; then the sampled loop
        f"for _ in range({runs}): ctx.sql(sql).collect()\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stacks.txt")
        cmd = [exe, "record", "--native", "-r", "250", "-f", "raw", "-o", out, "--"]
        subprocess.run([*cmd, sys.executable, "-c", script], check=True, capture_output=True)
        return summarise_stacks(out)


def summarise_stacks(path: str) -> str:
    """Share of samples per frame (inclusive), for the frames worth reading."""
    inclusive: collections.Counter = collections.Counter()
    total = 0
    interesting = re.compile(r"ducklake_datafusion|parquet::arrow|arrow::compute|unique|filter")
    with open(path) as lines:
        samples = [line.rstrip().rpartition(" ") for line in lines]
    for stack, _, count in samples:
        frames = stack.split(";")
        if not any("collect" in f or "to_batches" in f for f in frames):
            continue  # imports and start-up
        total += int(count)
        for frame in {re.sub(r":\d+\)", ")", f) for f in frames}:
            if interesting.search(frame):
                inclusive[frame] += int(count)
    rows = [[f"{100 * n / total:.0f}%", f[:110]] for f, n in inclusive.most_common(25)]
    return markdown_table(["samples", "frame (inclusive)"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the 1M-row lake")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 7, quick 3)")
    parser.add_argument("--py-spy", action="store_true", help="also sample with py-spy")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    repeat = args.repeat or (3 if args.quick else 7)
    print(environment())
    print(f"repeats:  {repeat} round-robin runs after 1 warm-up; medians\n")
    lake, _ = scan_lake(sizes)
    table = DuckLakeCatalog(lake.metadata).table("main", "t")
    plan = table.scan_plan()
    print(f"query: {QUERY.format(t='t')}; {plan.stats}\n")
    headers = ["", "wall s", "cpu s", "note"]
    print("## 1. Engines\n")
    print(markdown_table(headers, engines(lake, plan, repeat)))
    print(f"\n## 2. Our executor without DataFusion (columns {COLUMNS})\n")
    print(markdown_table(headers, executor_pieces(table, plan, repeat)))
    print("\n## 3. Knobs, ours through DataFusion\n")
    print(markdown_table(headers, knobs(lake, repeat)))
    if args.py_spy:
        print("\n## 4. py-spy: share of samples in the sampled loop\n")
        print(py_spy(lake))
    print(f"\nload average now: {load_average()}")


if __name__ == "__main__":
    main()
