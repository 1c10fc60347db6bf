"""``ducklake-datafusion``: query and inspect a lake from the shell.

    ducklake-datafusion sql CATALOG "SELECT ..." [--format table|csv|jsonl|parquet] [-O FILE]
    ducklake-datafusion tables CATALOG
    ducklake-datafusion snapshots CATALOG              (newest first)
    ducklake-datafusion describe CATALOG schema.table
    ducklake-datafusion files CATALOG schema.table [--snapshot N]
    ducklake-datafusion changes CATALOG schema.table START [END]   (END: the latest)
    ducklake-datafusion merge-adjacent-files CATALOG [schema.table] [--max-compacted-files N]
    ducklake-datafusion rewrite-data-files CATALOG [schema.table] [--delete-threshold F]
    ducklake-datafusion expire-snapshots CATALOG [--older-than WHEN] [--versions 2,3] [--dry-run]
    ducklake-datafusion cleanup-old-files CATALOG [--older-than WHEN] [--all] [--dry-run]
    ducklake-datafusion delete-orphaned-files CATALOG [--older-than WHEN] [--all] [--dry-run]
    ducklake-datafusion flush-inlined-data CATALOG [schema.table]
    ducklake-datafusion checkpoint CATALOG

``CATALOG`` is spelled as for ``DuckLakeCatalog`` (a DuckDB file, ``sqlite:...``,
``postgres:...``). In ``sql`` the lake is the catalog ``lake`` (``--name`` changes it), so
``SELECT * FROM lake.main.t`` works, as do the ``ducklake_*`` table functions. Storage
options come from ``-s key=value`` flags and from ``DUCKLAKE_STORAGE_OPTIONS`` (a JSON
object), flags winning. On a terminal a progress line (rows, seconds) is shown on stderr
while a query runs. ``python -m ducklake_datafusion`` is the same program.

Every command opens the catalog first, so a catalog that cannot be read fails before any
SQL runs. The maintenance commands are DuckDB's functions of the same name (``CALL
ducklake_merge_adjacent_files(...)``; ``WHEN`` is an ISO time or an age such as ``7 days``)
and print the rows DuckDB's function returns. Errors print ``ClassName: message`` on stderr, our errors under their own class
(also when DataFusion carried them as text: ``errors.typed``), SQL that DataFusion rejects
or fails to run as ``DataFusionError``. Exit codes follow the error hierarchy (see
:data:`EXIT_CODES`): 0 success, 2 bad usage or option, 3 catalog, 4 table or snapshot not
found, 5 data file or storage, 6 unsupported feature or type, 7 SQL DataFusion rejected, 1
anything else.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa

from .. import errors
from ._cli_maintenance import maintenance_commands

__all__ = ["EXIT_CODES", "main"]

EXIT_CODES: tuple[tuple[type[errors.DuckLakeError], int], ...] = (
    (errors.InvalidOptionError, 2),
    (errors.CatalogError, 3),
    (errors.TableNotFoundError, 4),
    (errors.SnapshotNotFoundError, 4),
    (errors.DataFileError, 5),
    (errors.StorageError, 5),
    (errors.UnsupportedFeatureError, 6),
    (errors.UnsupportedTypeError, 6),
    (errors.MissingDependencyError, 6),
)
SQL_ERROR = 7
TABLE_ROWS = 40  # rows shown by the aligned-table format (``--max-rows``)
WHOLE_COLUMNS = ("data_file", "delete_file")  # paths a user copies: never clipped
_NOT_FOUND = re.compile(r"table '([^']+)' not found")


class DataFusionError(Exception):
    """SQL that DataFusion rejected or failed to run (none of our errors): the message is
    DataFusion's, without its ``DataFusion error:`` prefix."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        with errors.raised_as_ours():
            return args.run(args)
    except errors.DuckLakeError as exc:
        code = next((c for cls, c in EXIT_CODES if isinstance(exc, cls)), 1)
        return _fail(exc, code)
    except DataFusionError as exc:
        return _fail(exc, SQL_ERROR)
    except BrokenPipeError:  # `... | head`
        return 0
    except Exception as exc:  # noqa: BLE001 - a bug or the system: named, code 1
        return _fail(exc, 1)


def _fail(exc: BaseException, code: int) -> int:
    print(f"{type(exc).__name__}: {str(exc).strip()}", file=sys.stderr)
    return code


@contextlib.contextmanager
def _datafusion(hint=None) -> Iterator[None]:
    """Around DataFusion calls: our errors as our classes, any other as
    :class:`DataFusionError` (its text passed through ``hint``, when given)."""
    try:
        with errors.raised_as_ours():
            yield
    except errors.DuckLakeError:
        raise
    except Exception as exc:  # DataFusion raises plain Exception (or ValueError)
        text = str(exc).strip().removeprefix("DataFusion error: ")
        raise DataFusionError(hint(text) if hint else text) from exc


# -- arguments ----------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ducklake-datafusion",
        description="Query and inspect DuckLake lakes with Apache DataFusion.",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name: str, help: str, run, *, table: bool = False, snapshot: bool = False):
        sub = commands.add_parser(name, help=help, description=help)
        sub.add_argument("catalog", help="the catalog: a DuckDB file, sqlite:PATH, postgres:...")
        if table:
            sub.add_argument("table", help="schema.table (or table, in schema main)")
        sub.add_argument(
            "-s",
            "--storage-option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="an object-storage option (repeatable); also DUCKLAKE_STORAGE_OPTIONS (JSON)",
        )
        sub.add_argument("--data-path", help="override the catalog's data_path")
        sub.add_argument(
            "--metadata-schema", help="schema of the ducklake_* tables (METADATA_SCHEMA)"
        )
        if snapshot:
            sub.add_argument("--snapshot", type=int, help="read at this snapshot id")
        _output_options(sub)
        sub.set_defaults(run=run)
        return sub

    sql = command("sql", "run a SQL query over the lake", _run_sql, snapshot=True)
    sql.add_argument("query", help='the query, e.g. "SELECT * FROM lake.main.t"')
    sql.add_argument("--name", default="lake", help="the lake's catalog name (default: lake)")
    command("tables", "list the tables with file counts and sizes", _run_tables, snapshot=True)
    command(
        "snapshots",
        "list the snapshots, newest first, and what each changed "
        f"(--format table shows the newest {TABLE_ROWS}: --max-rows N, 0 for all)",
        _run_snapshots,
    )
    command("describe", "show a table's columns", _run_describe, table=True, snapshot=True)
    command("files", "list a table's data and delete files", _run_files, table=True, snapshot=True)
    changes = command("changes", "the change feed between two snapshots", _run_changes, table=True)
    changes.add_argument("start", help="first snapshot (id or ISO time), inclusive")
    changes.add_argument(
        "end", nargs="?", help="last snapshot (id or ISO time), inclusive (default: the latest)"
    )
    maintenance_commands(command, lambda args: _lake(args, pinned=False), _write_table)
    return parser


def _output_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "-f",
        "--format",
        choices=("table", "csv", "jsonl", "parquet"),
        default="table",
        help="output format (default: an aligned table; parquet needs --output)",
    )
    sub.add_argument("-O", "--output", help="write to this file instead of standard output")
    sub.add_argument(
        "--max-rows",
        type=int,
        default=TABLE_ROWS,
        help=f"rows shown by --format table (default {TABLE_ROWS}; 0: all)",
    )


def _storage_options(args) -> dict[str, str] | None:
    options: dict[str, object] = {}
    raw = os.environ.get("DUCKLAKE_STORAGE_OPTIONS")
    if raw:
        try:
            loaded = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise errors.InvalidOptionError(
                f"DUCKLAKE_STORAGE_OPTIONS must be a JSON object of storage options ({exc})"
            ) from exc
        if not isinstance(loaded, dict):
            raise errors.InvalidOptionError("DUCKLAKE_STORAGE_OPTIONS must be a JSON object")
        options.update(loaded)
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise errors.InvalidOptionError(f"storage option {item!r} must be KEY=VALUE")
        options[key.strip()] = value
    return options or None


def _lake(args, *, pinned: bool = True):
    from ._catalog_provider import DuckLakeCatalog

    snapshot = getattr(args, "snapshot", None) if pinned else None
    return DuckLakeCatalog(
        args.catalog,
        data_path=args.data_path,
        snapshot=snapshot,
        storage_options=_storage_options(args),
        metadata_schema=args.metadata_schema,
    )


def _split_table(name: str) -> tuple[str, str]:
    schema, dot, table = name.partition(".")
    return (schema, table) if dot else ("main", name)


# -- commands -----------------------------------------------------------------------------------


def _run_sql(args) -> int:
    from datafusion import SessionConfig, SessionContext

    from ._dml_sql import sql as run_sql
    from .functions import register

    lake = _lake(args)
    lake.snapshot_id()  # the catalog opens (and the pinned snapshot exists) before any SQL
    ctx = SessionContext(SessionConfig().with_information_schema(True))
    register(ctx, args.name, lake)

    def hint(text: str) -> str:
        return _table_hint(text, lake, args.name)

    with _datafusion(hint):
        frame = run_sql(ctx, args.query)  # DELETE and UPDATE of a lake table too
        schema = frame.schema()
        stream = iter(frame.execute_stream())
    _write(args, schema, _with_progress(_batches(stream)))
    return 0


def _batches(stream) -> Iterator[pa.RecordBatch]:
    """The stream's batches, DataFusion's errors while it runs as ours (``_datafusion``)."""
    while True:
        with _datafusion():
            batch = next(stream, None)
        if batch is None:
            return
        yield batch.to_pyarrow()


def _table_hint(text: str, lake, name: str) -> str:
    """DataFusion's "table not found" with the lake's name for it: ``FROM main.orders``
    is DataFusion's own catalog; the lake is the catalog ``name`` (``lake.main.orders``)."""
    match = _NOT_FOUND.search(text)
    if match is None:
        return text
    parts = match.group(1).split(".")
    if parts[0] == name:
        return f"{text}; `ducklake-datafusion tables` lists the lake's tables"
    table = parts[-1]
    schema = parts[-2] if len(parts) > 1 and parts[-2] != "public" else "main"
    try:
        lake.table(schema, table)
    except errors.DuckLakeError:
        return (
            f"{text}; the lake's tables are named {name}.<schema>.<table> "
            "(`ducklake-datafusion tables` lists them)"
        )
    return f"{text}; the lake is the catalog {name!r}: write {name}.{schema}.{table}"


def _run_tables(args) -> int:
    _write_table(args, _lake(args).tables())
    return 0


def _run_snapshots(args) -> int:
    table = _lake(args).snapshots().sort_by([("snapshot_id", "descending")])
    changes = [
        "; ".join(f"{k}: {', '.join(v)}" for k, v in (row or []))
        for row in table["changes"].to_pylist()
    ]
    table = table.set_column(
        table.schema.get_field_index("changes"), "changes", pa.array(changes, pa.string())
    )
    _write_table(args, table)
    return 0


def _run_describe(args) -> int:
    table = _lake(args).table(*_split_table(args.table))
    rows = {
        "column_name": [c.name for c in table.columns],
        "column_type": [c.type_name for c in table.columns],
        "arrow_type": [str(c.arrow_type) for c in table.columns],
        "column_id": [c.column_id for c in table.columns],
        "initial_default": [c.initial_default for c in table.columns],
    }
    _write_table(args, pa.table(rows))
    return 0


def _run_files(args) -> int:
    """Each live data file with its delete file, row count and the catalog statistics
    that prune it (``column: [min, max] nulls=N`` per column)."""
    from ..catalog import metadata

    table = _lake(args).table(*_split_table(args.table))
    files = table.files()
    leaves = _leaf_ids(table.columns)
    with table.catalog.backend.session() as session:
        found = metadata.read_table_files(
            session, table.entry, table.snapshot_id, stats_columns=list(leaves)
        )
    names = found.file_table.column("path").to_pylist()
    counts = found.file_table.column("record_count").to_pylist()
    ids = found.file_table.column("data_file_id").to_pylist()
    stats: dict[int, list[str]] = {}
    if found.stats is not None:
        for row in found.stats.to_pylist():
            text = f"{leaves[row['column_id']]}: [{row['min_value']}, {row['max_value']}]"
            if row["null_count"]:
                text += f" nulls={row['null_count']}"
            stats.setdefault(row["data_file_id"], []).append(text)
    by_name = {
        name: (count, "; ".join(stats.get(i, []))) for name, count, i in zip(names, counts, ids)
    }
    extra = [by_name.get(_basename(p), (None, None)) for p in files.column("data_file").to_pylist()]
    files = files.select(["data_file", "data_file_size_bytes", "delete_file"])
    files = files.append_column("record_count", pa.array([e[0] for e in extra], pa.int64()))
    files = files.append_column("column_stats", pa.array([e[1] for e in extra], pa.string()))
    _write_table(args, files, whole=WHOLE_COLUMNS)
    return 0


def _leaf_ids(columns, prefix: str = "") -> dict[int, str]:
    out: dict[int, str] = {}
    for column in columns:
        name = prefix + column.name
        if column.children:
            out.update(_leaf_ids(column.children, name + "."))
        else:
            out[column.column_id] = name
    return out


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _run_changes(args) -> int:
    from .functions import table_changes

    schema, table = _split_table(args.table)
    lake = _lake(args, pinned=False)
    end = args.end if args.end is not None else lake.snapshot_id()  # the latest
    _write_table(args, table_changes(lake, schema, table, args.start, end))
    return 0


# -- output -------------------------------------------------------------------------------------


def _write_table(args, table: pa.Table, whole: Sequence[str] = ()) -> None:
    _write(args, table.schema, iter(table.to_batches()), whole)


def _write(
    args, schema: pa.Schema, batches: Iterator[pa.RecordBatch], whole: Sequence[str] = ()
) -> None:
    if args.format == "parquet":
        if not args.output:
            raise errors.InvalidOptionError("--format parquet needs --output FILE")
        import pyarrow.parquet as pq

        with pq.ParquetWriter(args.output, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        return
    with contextlib.ExitStack() as stack:
        out = sys.stdout
        if args.output:
            out = stack.enter_context(open(args.output, "w", encoding="utf-8", newline=""))
        if args.format == "csv":
            _csv(out, schema, batches)
        elif args.format == "jsonl":
            for batch in batches:
                for row in batch.to_pylist():
                    out.write(json.dumps(row, default=str, ensure_ascii=False) + "\n")
        else:
            _aligned(out, schema, batches, args.max_rows, whole)


def _csv(out, schema: pa.Schema, batches) -> None:
    """CSV with a header; pyarrow's writer when every column is flat (much faster)."""
    import csv

    if not any(pa.types.is_nested(f.type) for f in schema):
        import pyarrow.csv as pacsv

        csv.writer(out).writerow(schema.names)
        sink = io.BytesIO()
        options = pacsv.WriteOptions(quoting_style="needed", include_header=False)
        with pacsv.CSVWriter(sink, schema, write_options=options) as writer:
            for batch in batches:
                writer.write_batch(batch)
                out.write(sink.getvalue().decode())
                sink.seek(0)
                sink.truncate()
            out.write(sink.getvalue().decode())
        return
    writer = csv.writer(out)
    writer.writerow(schema.names)
    for batch in batches:
        for row in batch.to_pylist():
            writer.writerow(["" if v is None else _text(v) for v in row.values()])


def _text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, ensure_ascii=False)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _aligned(out, schema: pa.Schema, batches, max_rows: int, whole: Sequence[str] = ()) -> None:
    """An aligned text table of the first ``max_rows`` rows (all if 0), then the count.
    Long cells are clipped, except in the ``whole`` columns (paths a user copies)."""
    rows, total = [], 0
    for batch in batches:
        total += batch.num_rows
        if max_rows == 0 or len(rows) < max_rows:
            for row in batch.to_pylist():
                if max_rows and len(rows) >= max_rows:
                    break
                rows.append(["NULL" if v is None else _text(v) for v in row.values()])
    width = [None if n in whole else 60 for n in schema.names]
    cells = [[_clip(c, w) for c, w in zip(row, width)] for row in rows]
    names = [_clip(n) for n in schema.names]
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out.write(line + "\n")
    out.write("| " + " | ".join(n.ljust(w) for n, w in zip(names, widths)) + " |\n")
    out.write(line + "\n")
    for row in cells:
        out.write("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |\n")
    out.write(line + "\n")
    shown = f" ({len(rows)} shown)" if len(rows) < total else ""
    out.write(f"{total} row{'s' if total != 1 else ''}{shown}\n")


def _clip(text: str, width: int | None = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def _with_progress(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Pass batches through; on a terminal, show rows and seconds on stderr meanwhile."""
    if not sys.stderr.isatty():
        yield from batches
        return
    state = {"rows": 0, "done": False}
    start = time.monotonic()

    def show() -> None:
        while not state["done"]:
            time.sleep(0.2)
            elapsed = time.monotonic() - start
            if elapsed > 0.5 and not state["done"]:
                sys.stderr.write(f"\r{state['rows']:,} rows, {elapsed:.1f} s ")
                sys.stderr.flush()

    painter = threading.Thread(target=show, daemon=True)
    painter.start()
    try:
        for batch in batches:
            state["rows"] += batch.num_rows
            yield batch
    finally:
        state["done"] = True
        painter.join(timeout=1)
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
