"""Shared benchmark helpers: lakes built by the reference writer, timing, reporting.

Lakes are written by DuckDB + the ``ducklake`` extension (the reference writer) under
``./bench_lakes/<name>-<parameters>/`` and reused while they exist: a lake directory is
complete when it holds a ``READY`` file, anything else is deleted and rebuilt.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import duckdb_extensions

REPO = Path(__file__).resolve().parent.parent
LAKES = REPO / "bench_lakes"
RECIPE = 1  # bump when a lake recipe changes, so cached lakes are rebuilt

# Extensions the writer needs per catalog kind (names of duckdb-extension-* wheels).
_EXTENSIONS = {
    "duckdb": [],
    "sqlite": ["sqlite_scanner"],
    "postgres": ["postgres_scanner"],
    "mysql": ["mysql_scanner"],
}


# ------------------------------------------------------------------------------------------
# Lakes


@dataclass(frozen=True)
class Lake:
    """A lake on local disk.

    Attributes:
        metadata: the catalog string both readers take after ``ducklake:`` (a DuckDB file
            path, ``sqlite:path`` or ``postgres:<libpq keywords>``).
        kind: ``duckdb``, ``sqlite`` or ``postgres``.
        root: the lake's directory (data files under ``root/data``).
    """

    metadata: str
    kind: str
    root: Path

    @property
    def data_path(self) -> str:
        return str(self.root / "data") + "/"


def connect(kind: str = "duckdb") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the ducklake extension (and the catalog's scanner) loaded."""
    con = duckdb.connect()
    for name in ["ducklake", *_EXTENSIONS[kind]]:
        duckdb_extensions.import_extension(name, con=con)
    return con


def attach(con, lake: Lake, *, read_only: bool = False, alias: str = "lake") -> None:
    """``ATTACH 'ducklake:<metadata>' AS <alias>`` (READ_ONLY for timing reads)."""
    options = "READ_ONLY" if read_only else f"DATA_PATH {_literal(lake.data_path)}"
    con.execute(f"ATTACH {_literal('ducklake:' + lake.metadata)} AS {alias} ({options})")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def cached_lake(
    name: str,
    params: dict,
    build: Callable[[duckdb.DuckDBPyConnection], None],
    *,
    kind: str = "duckdb",
    pg: str | None = None,
) -> tuple[Lake, float | None]:
    """Return the lake ``name`` built with ``params``, building it with ``build`` if missing.

    ``build(con)`` runs with the lake attached read-write as ``lake``. For PostgreSQL
    catalogs ``pg`` is a libpq keyword string of an existing database on the server; the
    lake gets its own database, named after the cache key. Returns ``(lake, seconds spent
    building or None when cached)``.
    """
    key = "-".join([name, kind, f"r{RECIPE}"] + [f"{k}{v}" for k, v in sorted(params.items())])
    root = LAKES / key
    lake = Lake(_metadata(kind, root, key, pg), kind, root)
    marker = root / "READY"
    ready = marker.exists() and json.loads(marker.read_text()).get("metadata") == lake.metadata
    if ready and (kind != "postgres" or _pg_database_exists(pg, key)):
        return lake, None
    shutil.rmtree(root, ignore_errors=True)
    (root / "data").mkdir(parents=True)
    if kind == "postgres":
        _pg_recreate_database(pg, key)
    started = time.perf_counter()
    con = connect(kind)
    try:
        con.execute("SET threads = 1")  # deterministic file layout (one writer thread)
        attach(con, lake)
        build(con)
        con.execute("DETACH lake")
    finally:
        con.close()
    elapsed = time.perf_counter() - started
    marker.write_text(json.dumps({"metadata": lake.metadata, "params": params}))
    return lake, elapsed


def _metadata(kind: str, root: Path, key: str, pg: str | None) -> str:
    if kind == "duckdb":
        return str(root / "catalog.ducklake")
    if kind == "sqlite":
        return "sqlite:" + str(root / "catalog.sqlite")
    if kind == "postgres":
        if not pg:
            raise ValueError("PostgreSQL lakes need a libpq connection string (DUCKLAKE_TEST_PG)")
        from psycopg.conninfo import make_conninfo

        return "postgres:" + make_conninfo(pg, dbname=_pg_name(key))
    raise ValueError(f"unknown catalog kind {kind!r}")


def _pg_name(key: str) -> str:
    return "bench_" + key.replace("-", "_").lower()[:50]


def _pg_admin(pg: str):
    import psycopg

    return psycopg.connect(pg, autocommit=True, connect_timeout=5)


def _pg_database_exists(pg: str, key: str) -> bool:
    with _pg_admin(pg) as con:
        found = con.execute("SELECT 1 FROM pg_database WHERE datname = %s", [_pg_name(key)])
        return found.fetchone() is not None


def _pg_recreate_database(pg: str, key: str) -> None:
    name = _pg_name(key)  # built from our own cache key: letters, digits, underscores
    with _pg_admin(pg) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{name}"')


def copy_catalog_rows(con, source: Lake, pg: str) -> None:
    """Fill the PostgreSQL lake attached as ``lake`` with the catalog rows of the DuckDB-file
    lake ``source`` (its data files stay where they are: ``data_path`` is copied too).

    The reference writer registers 100,000 files in a PostgreSQL catalog far slower than
    in a DuckDB file (a build did not finish in 30 minutes here); copying the rows it wrote
    into the DuckDB file gives the same catalog in seconds. Every ``ducklake_*`` table is
    emptied and refilled, inlined-data tables included.
    """
    con.execute("DETACH lake")
    con.execute(f"ATTACH {_literal(source.metadata)} AS source_catalog (READ_ONLY)")
    con.execute(f"ATTACH {_literal(pg)} AS target_catalog (TYPE postgres)")
    try:
        names = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'source_catalog' "
                "AND table_name LIKE 'ducklake_%' ORDER BY table_name"
            ).fetchall()
        ]
        existing = {
            row[0]
            for row in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'target_catalog'"
            ).fetchall()
        }
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            if name in existing:
                con.execute(f"DELETE FROM target_catalog.public.{quoted}")
                con.execute(
                    f"INSERT INTO target_catalog.public.{quoted} "
                    f"SELECT * FROM source_catalog.main.{quoted}"
                )
            else:
                con.execute(
                    f"CREATE TABLE target_catalog.public.{quoted} AS "
                    f"SELECT * FROM source_catalog.main.{quoted}"
                )
    finally:
        con.execute("DETACH source_catalog")
        con.execute("DETACH target_catalog")
    con.execute(f"ATTACH {_literal('ducklake:' + _pg_part(pg))} AS lake")


def _pg_part(pg: str) -> str:
    return "postgres:" + pg


def build_many_files(con, files: int, table: str = "t") -> None:
    """A table of ``files`` tiny data files (2,048 rows each: k BIGINT clustered, g, v).

    The fast way to many files: a tiny ``target_file_size`` and row-group size make the
    writer start a new file after every 2,048-row vector of one big INSERT (one snapshot,
    about 7 s for 10,000 files on 2 cores).
    """
    con.execute("CALL lake.set_option('target_file_size', '1KB')")
    con.execute("CALL lake.set_option('parquet_row_group_size', '2048')")
    con.execute(f"CREATE TABLE lake.main.{table} (k BIGINT, g INTEGER, v DOUBLE)")
    con.execute(
        f"INSERT INTO lake.main.{table} SELECT k, (k % 97)::INTEGER, k * 0.5 FROM range(?) r(k)",
        [files * 2048],
    )


def replicate_file_rows(con, copies: int) -> None:
    """Register every data file of table ``t`` ``copies`` times in the DuckDB catalog file
    attached as ``lake_catalog`` (a copy made for the benchmark, never a user's): the
    catalog of a table of ``copies`` x as many files, over the same Parquet files.

    Each copy gets new file ids and row ids after the last (file and column statistics
    copied with it); the latest snapshot's ``next_file_id`` and the table's statistics
    move past them, so that later commits by the reference writer stay consistent. Both
    readers then see each row ``copies`` times.
    """
    c = "lake_catalog.main."
    (tid,) = con.execute(
        f"SELECT table_id FROM {c}ducklake_table WHERE table_name = 't' AND end_snapshot IS NULL"
    ).fetchone()
    (files_end,) = con.execute(
        f"SELECT max(data_file_id) + 1 FROM {c}ducklake_data_file"
    ).fetchone()
    (rows_end,) = con.execute(
        f"SELECT next_row_id FROM {c}ducklake_table_stats WHERE table_id = ?", [tid]
    ).fetchone()
    live = f"table_id = {int(tid)} AND end_snapshot IS NULL"
    for copy in range(1, copies):
        shift_files, shift_rows = copy * files_end, copy * rows_end
        con.execute(
            f"INSERT INTO {c}ducklake_data_file SELECT * REPLACE ("
            f"data_file_id + {shift_files} AS data_file_id, "
            f"row_id_start + {shift_rows} AS row_id_start) "
            f"FROM {c}ducklake_data_file WHERE {live} AND data_file_id < {files_end}"
        )
        con.execute(
            f"INSERT INTO {c}ducklake_file_column_stats SELECT * REPLACE ("
            f"data_file_id + {shift_files} AS data_file_id) "
            f"FROM {c}ducklake_file_column_stats WHERE table_id = {int(tid)} "
            f"AND data_file_id < {files_end}"
        )
    con.execute(
        f"UPDATE {c}ducklake_snapshot SET next_file_id = {copies * files_end} "
        f"WHERE snapshot_id = (SELECT max(snapshot_id) FROM {c}ducklake_snapshot)"
    )
    con.execute(
        f"UPDATE {c}ducklake_table_stats SET record_count = record_count * {copies}, "
        f"file_size_bytes = file_size_bytes * {copies}, next_row_id = {copies * rows_end} "
        f"WHERE table_id = ?",
        [tid],
    )


# ------------------------------------------------------------------------------------------
# Timing


@dataclass(frozen=True)
class Timing:
    """Seconds of the timed runs (warm-up runs excluded): wall clock and process CPU.

    CPU time (all threads of this process) is the steadier figure on a shared machine:
    other processes stretch wall-clock times but not our CPU seconds.
    """

    runs: tuple[float, ...]
    cpu: tuple[float, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu) if self.cpu else None


def measure_interleaved(
    fns: dict[str, Callable[[], object]], *, warmup: int = 1, repeat: int = 5
) -> dict[str, tuple[Timing, object]]:
    """Time several alternatives round-robin, so load from elsewhere hits all alike.

    Each function runs ``warmup`` times untimed, then the rounds run every function once
    per round. Returns ``{name: (timing, result of its last run)}``.
    """
    results: dict[str, object] = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            results[name] = fn()
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            results[name] = fn()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    return {name: (Timing(tuple(wall[name]), tuple(cpu[name])), results[name]) for name in fns}


def measure(fn: Callable[[], object], *, warmup: int = 1, repeat: int = 5) -> tuple[Timing, object]:
    """Run ``fn`` ``warmup`` times untimed, then ``repeat`` times timed.

    Returns the timings and the result of the last run.
    """
    return measure_interleaved({"fn": fn}, warmup=warmup, repeat=repeat)["fn"]


def sorted_rows(table) -> list:
    """A result's rows as sorted tuples, to compare answers whatever their order."""
    return sorted(tuple(r.values()) for r in table.to_pylist())


def same_rows(a: list, b: list) -> bool:
    """Equal up to float rounding (sums are added in a different order)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float):
                if not math.isclose(u, v, rel_tol=1e-9):
                    return False
            elif u != v:
                return False
    return True


# ------------------------------------------------------------------------------------------
# Reporting


@dataclass(frozen=True)
class PlanningTimes:
    """``scan_plan()`` with and without a filter, on an unchanged lake and as after a commit."""

    full: Timing
    pruned: Timing
    full_new: Timing
    pruned_new: Timing
    plan_all: object  # ScanPlan of every file
    plan_pruned: object  # ScanPlan with the filter


def measure_planning(catalog, table, expr, *, repeat: int) -> PlanningTimes:
    """Time planning a table; "new" drops the memoised metadata first, as a commit would."""

    def after_commit(scan):
        catalog.forget_metadata()
        return scan()

    full, plan_all = measure(lambda: table.scan_plan(), repeat=repeat)
    pruned, plan_pruned = measure(lambda: table.scan_plan(filter=expr), repeat=repeat)
    full_new, _ = measure(lambda: after_commit(table.scan_plan), repeat=repeat)
    pruned_new, _ = measure(
        lambda: after_commit(lambda: table.scan_plan(filter=expr)), repeat=repeat
    )
    return PlanningTimes(full, pruned, full_new, pruned_new, plan_all, plan_pruned)


def seconds(value: float | None) -> str:
    """Seconds with three significant digits (``0.0931``, ``1.24``); ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:.3g}"


def millis(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f} ms"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table with padded columns (readable in a terminal, pasteable in docs)."""
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]

    def line(cells) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _package_revision() -> str:
    """Which ducklake_datafusion is measured: the repo's (commit, dirty?) or another copy."""
    import ducklake_datafusion

    where = Path(ducklake_datafusion.__file__).resolve().parent
    if where != REPO / "ducklake_datafusion":
        return f"imported from {where} (not this checkout)"
    try:
        dirty = _git("status", "--porcelain", "--", "ducklake_datafusion")
        return _git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")
    except OSError:
        return "unknown"


def load_average() -> str:
    """The 1/5/15-minute load averages (other processes share the machine's cores)."""
    if not hasattr(os, "getloadavg"):
        return "?"
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def environment() -> str:
    """The command line and the machine/software it ran on, for the top of a report."""
    command = " ".join([os.path.relpath(sys.executable, REPO), *sys.argv])
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = ", ".join(
        f"{name} {_version(dist)}"
        for name, dist in [
            ("datafusion", "datafusion"),
            ("pyarrow", "pyarrow"),
            ("duckdb", "duckdb"),
            ("ducklake ext", "duckdb-extension-ducklake"),
            ("numpy", "numpy"),
        ]
    )
    return "\n".join(
        [
            f"command:  {command}",
            (
                f"machine:  {cpus} CPUs usable ({os.cpu_count()} online), "
                f"load average {load_average()}, {platform.machine()} {platform.system()}"
            ),
            f"python:   {platform.python_version()}; {versions}",
            f"package:  ducklake-datafusion {_package_revision()}",
        ]
    )
