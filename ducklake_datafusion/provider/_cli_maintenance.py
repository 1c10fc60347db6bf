"""The command line's maintenance commands: DuckDB's maintenance functions by name
(``merge-adjacent-files``, ..., ``checkpoint``), their flags DuckDB's named arguments, their
output the rows DuckDB's function returns (``_call_sql.result_table``)."""

from __future__ import annotations

import argparse

from .. import errors

__all__ = ["maintenance_commands"]


def maintenance_commands(command, lake_of, write_table) -> None:
    """Add one command per maintenance function (``command(name, help, run)`` adds one),
    its flags DuckDB's named arguments; ``lake_of(args)`` opens the lake, ``write_table``
    prints the result."""

    def table_command(operation: str, help: str):
        sub = command(
            operation.replace("_", "-"), help, _run_maintenance(operation, lake_of, write_table)
        )
        sub.add_argument("table", nargs="?", help="schema.table (default: every table)")
        sub.add_argument("--author", help="the snapshot's author")
        sub.add_argument("--message", help="the snapshot's commit message")
        return sub

    merge = table_command(
        "merge_adjacent_files", "merge small files into files up to the target size"
    )
    merge.add_argument("--max-compacted-files", type=int, help="at most N merged files a table")
    merge.add_argument("--min-file-size", type=_size, help="only files of at least this size")
    merge.add_argument("--max-file-size", type=_size, help="only files below this size")
    rewrite = table_command(
        "rewrite_data_files", "rewrite files whose deleted share exceeds a threshold"
    )
    rewrite.add_argument(
        "--delete-threshold", type=float, help="the deleted share (default: the lake's, 0.95)"
    )
    table_command("flush_inlined_data", "write the rows inlined in the catalog to Parquet files")
    checkpoint = command(
        "checkpoint",
        "flush, expire, merge, rewrite and clean up, as DuckDB's CHECKPOINT",
        _run_maintenance("checkpoint", lake_of, write_table),
    )
    checkpoint.add_argument("--author", help="the snapshots' author")
    checkpoint.add_argument("--message", help="the snapshots' commit message")
    for operation, help in (
        ("expire_snapshots", "expire old snapshots (never the latest)"),
        ("cleanup_old_files", "delete the files scheduled for deletion"),
        ("delete_orphaned_files", "delete data files no catalog row names"),
    ):
        sub = command(
            operation.replace("_", "-"), help, _run_maintenance(operation, lake_of, write_table)
        )
        sub.add_argument("--older-than", type=_when, help="an ISO time, or an age such as '7 days'")
        sub.add_argument("--dry-run", action="store_true", help="only say what it would do")
        if operation == "expire_snapshots":
            sub.add_argument("--versions", type=_ids, help="these snapshot ids (comma-separated)")
        else:
            sub.add_argument(
                "--all", dest="cleanup_all", action="store_true", help="regardless of age"
            )


def _size(text: str) -> int:
    from ..write import parse_file_size

    size = parse_file_size(text)
    if size is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or 512MB, 1GiB)")
    return size


def _when(text: str):
    import datetime as dt

    from ..maintain import interval

    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            age = interval(text, "--older-than")
        except errors.InvalidOptionError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither an ISO time nor an age such as '7 days'"
            ) from None
        return dt.datetime.now(dt.timezone.utc) - age
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def _ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of snapshot ids") from None


def _run_maintenance(operation: str, lake_of, write_table):
    """The command running ``lake.<operation>`` with the flags given; its rows printed."""

    def run(args) -> int:
        from ._call_sql import result_table

        named = {
            key: value
            for key, value in vars(args).items()
            if value not in (None, False)
            and key
            in (
                "max_compacted_files",
                "min_file_size",
                "max_file_size",
                "delete_threshold",
                "older_than",
                "versions",
                "dry_run",
                "cleanup_all",
                "author",
            )
        }
        if getattr(args, "message", None):
            named["commit_message"] = args.message
        lake = lake_of(args)
        if "table" in vars(args):
            result = getattr(lake, operation)(args.table, **named)
        else:
            result = getattr(lake, operation)(**named)
        write_table(args, result_table(operation, result))
        return 0

    return run
