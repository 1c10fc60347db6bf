"""Spark's row-level ``DELETE``, ``UPDATE`` and ``MERGE INTO``, committed as one snapshot.

Spark rewrites each statement into a scan of the table that adds the metadata columns
``_ducklake_rowid``, ``_ducklake_file_id`` and ``_ducklake_position`` (``_scan``) and a
delta write (the jar's ``DuckLakeDeltaWrite``): its executors name each deleted row by those
three values, write updated rows (carrying their row ids) and inserted rows as Parquet files
below the table's directory, and the driver sends everything here once:

``change_commit`` ``{target, command, files, deletes, stream?, author?, commit_message?,
commit_extra_info?}`` and one blob -> ``{snapshot, deleted, updated, inserted, replayed?}``.

* ``target``: the ``write_begin`` answer's target (``_write.WriteTarget``): the table, its id
  and the snapshot Spark read, which is the change's base;
* ``files``: the written files as for appends, ``row_ids`` set on those whose last column is
  the rows' own ids (an update's new rows, ``_ducklake_internal_row_id``);
* ``stream``: a streaming query's batch (``foreachBatch``: the session's ``txnAppId`` and
  ``txnVersion``), committed at most once and recorded as the sink records its batches; a
  batch committed before answers ``replayed`` and changes nothing;
* the blob: ``deletes`` rows as three little-endian int64 columns one after another (row
  ids, data file ids, positions; ``-1`` for the file id and position of a row inlined in
  the catalog).

The core's ``TableChange`` turns them into what DuckDB writes for the same statement (delete
files, cumulative ones where a file had deletes, files ended whole, inlined rows ended,
added files with their row ids) and commits them as one snapshot with its conflict rule: a
concurrent change of a touched file fails the commit (``CommitConflictError``); a
concurrent append does not. A failed commit deletes every file of the change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from ...catalog import AlreadyCommitted, NoRowsInserted
from ...errors import InvalidOptionError, TableNotFoundError
from ...read import FILE_ID, POSITION, ROW_ID
from ...scan import Lake, SnapshotRef
from ...write import StreamBatch, TableChange, WrittenFile, commit_changes
from ._write import WriteTarget, commit_options, stream_commit_info, written_data_file

__all__ = ["change_commit_response", "deleted_rows"]

_COMMANDS = ("DELETE", "UPDATE", "MERGE")


def change_commit_response(lake: Lake, request: Mapping, blobs: Sequence[bytes]) -> dict:
    target = WriteTarget.from_json(request["target"])
    command = str(request["command"]).upper()
    if command not in _COMMANDS or target.kind != "append" or target.table_id is None:
        raise InvalidOptionError(
            f"a Spark row-level change of {target.namespace}.{target.name} came as "
            f"{command!r} of a {target.kind!r} write; expected {', '.join(_COMMANDS)} of an "
            "existing table"
        )
    table = lake.table_at(target.namespace, target.name, SnapshotRef(snapshot_id=target.snapshot))
    if table.entry.table_id != target.table_id:
        raise TableNotFoundError(
            f"table {target.namespace}.{target.name} of {lake.description} is not the table "
            f"{command} began on (it was dropped or replaced); nothing was changed"
        )
    change = TableChange(table)
    description = f"{command} of {change.description}"
    change.delete(deleted_rows(blobs, int(request["deletes"]), description))
    written, updated = [], 0
    # an update's rows first, then inserted ones: row ids are numbered in that order, as DuckDB
    # numbers a MERGE's (its new rows take the ids after the updated rows' count)
    entries = sorted(request.get("files") or (), key=lambda e: not e.get("row_ids"))
    for entry in entries:
        row_ids = bool(entry.get("row_ids"))
        data_file = written_data_file(
            entry, table.columns, change.partitioning, description, row_ids=row_ids
        )
        written.append(WrittenFile(change.directory + data_file.path, data_file))
        updated += data_file.record_count if row_ids else 0
    change.add_written(written)
    inserted = sum(f.data_file.record_count for f in written) - updated
    options = commit_options(request)
    stream = request.get("stream")
    if stream is not None:
        query_id, batch_id = str(stream["query_id"]), int(stream["batch_id"])
        extra_info, marker = stream_commit_info(query_id, batch_id, options.commit_extra_info)
        change.once_per_batch(StreamBatch(query_id, batch_id, marker))
        options = dataclasses.replace(options, commit_extra_info=extra_info)
    if command == "MERGE":
        # a row appended meanwhile may be a match the MERGE did not see (its NOT MATCHED
        # clauses, which Spark does not tell, would have acted on it): it fails instead
        change.requirements.append(NoRowsInserted(change.ref))
    try:
        snapshot = commit_changes([change], options)
    except AlreadyCommitted as committed:
        return {
            "snapshot": committed.snapshot,
            "deleted": 0,
            "updated": 0,
            "inserted": 0,
            "replayed": True,
        }
    return {
        "snapshot": snapshot,
        "deleted": change.deleted_count - updated,
        "updated": updated,
        "inserted": inserted,
    }


def deleted_rows(blobs: Sequence[bytes], count: int, description: str) -> pa.Table:
    """The blob of ``count`` deleted rows as the core's row locations."""
    if len(blobs) != 1 or len(blobs[0]) != 24 * count:
        raise InvalidOptionError(
            f"{description}: the deleted rows came as {len(blobs)} blob(s) of "
            f"{[len(b) for b in blobs]} bytes, not one of {24 * count} bytes ({count} rows)"
        )
    columns = np.frombuffer(blobs[0], dtype="<i8").reshape(3, count)
    inlined = columns[1] < 0
    if np.any(inlined != (columns[2] < 0)):
        raise InvalidOptionError(f"{description}: a deleted row has a file but no position")
    return pa.table(
        {
            ROW_ID: pa.array(columns[0], pa.int64()),
            FILE_ID: pa.array(columns[1], pa.int64(), mask=inlined),
            POSITION: pa.array(columns[2], pa.int64(), mask=inlined),
        }
    )
