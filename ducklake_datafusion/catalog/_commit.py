"""The commit protocol: data files (and a new table) become one new snapshot, atomically.

Every writer of this package (Python appends, DataFusion's ``INSERT INTO``, ``CREATE TABLE
AS``) ends here with a :class:`TableCommit`: the table, the snapshot the write began at,
and the facts of the files it wrote. :func:`commit` then runs one transaction on the
catalog database that adds, as DuckDB's writer adds them for the same data:

1. the ``ducklake_snapshot`` row (id = latest + 1; ``schema_version`` and
   ``next_catalog_id`` advanced by a new table, ``next_file_id`` by the files), inserted
   first: it is where concurrent commits collide (the primary key);
2. for a new table, its ``ducklake_table``, ``ducklake_column`` and
   ``ducklake_schema_versions`` rows;
3. for an overwrite, ``end_snapshot`` on every live data file and inlined row of the table;
4. a ``ducklake_data_file`` row per file (``row_id_start`` from the table's
   ``next_row_id``) and a ``ducklake_file_column_stats`` row per file and leaf column;
5. ``ducklake_table_stats`` (record count, next row id, bytes) and
   ``ducklake_table_column_stats`` (bounds widened to take the new files in: ``_bounds``);
6. ``ducklake_snapshot_changes`` (``created_table:"s"."t"``, ``inserted_into_table:<id>``,
   ``deleted_from_table:<id>``, and the caller's author, message and extra info).

A commit that loses the race for the snapshot id starts over on the lake as it now is; it
goes ahead only if nothing it depends on changed since the write began (the table still
there with the same id, columns and partitioning; for an overwrite, no other change to its
rows), else :class:`CommitConflictError` names the table and both snapshots. A failed
transaction leaves the catalog as it was: the caller deletes the files it wrote.
"""

from __future__ import annotations

import datetime as _dt
import random
import time

from ..errors import (
    CommitConflictError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ._change_tokens import parse_changes_made
from ._commit_request import TableCommit
from ._commit_rows import (
    add_file_rows,
    create_partitioning_rows,
    create_table_rows,
    end_live_rows,
    end_partition_rows,
    insert_row,
)
from ._names import find_table, list_schemas
from ._settings import read_settings
from ._writers import SnapshotRace

__all__ = ["commit"]

MAX_ATTEMPTS = 12


def commit(backend, request: TableCommit) -> int:
    """Commit ``request`` as one new snapshot and return its id.

    With nothing to change (an append of no rows), nothing is committed and the latest
    snapshot id is returned.

    Raises:
        CommitConflictError: the table changed since ``base_snapshot`` (dropped, replaced,
            altered; for an overwrite, any change to its rows), or the race for a snapshot
            id was lost ``MAX_ATTEMPTS`` times.
        TableExistsError: the table to create exists.
        CatalogError and its subclasses: the catalog database failed; nothing committed.
    """
    for attempt in range(MAX_ATTEMPTS):
        try:
            with backend.write_session() as session:
                return _commit_once(session, request, backend.description)
        except SnapshotRace:
            # another commit took the id: wait a little (jittered, growing), start over
            time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
    raise CommitConflictError(
        f"{backend.description}: the commit to table {_name(request)} lost the race for a "
        f"snapshot id {MAX_ATTEMPTS} times to other writers; nothing was committed, write again"
    )


def _name(request: TableCommit) -> str:
    return f"{request.schema_name}.{request.table_name}"


def quoted(name: str) -> str:
    """A name as ``changes_made`` quotes it (DuckDB's ``"..."``, quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _commit_once(session, request: TableCommit, description: str) -> int:
    settings = read_settings(session, description)
    if settings.get("encrypted", "false").lower() == "true":
        raise UnsupportedFeatureError(
            f"{description} is an encrypted lake; this package does not write encrypted "
            "files yet (nothing was committed): write to it with DuckDB"
        )
    (latest,) = session.rows(
        "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM "
        "ducklake_snapshot WHERE snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)"
    )
    latest_id, schema_version, next_catalog_id, next_file_id = (int(v) for v in latest)
    replaces_nothing = request.replace_partitions is not None and not request.replace_partitions
    if (
        request.new_table is None
        and not request.files
        and (not request.overwrite or replaces_nothing)
    ):
        return latest_id
    new_id = latest_id + 1
    changes: list[str] = []
    if request.new_table is not None:
        schema_id = _schema_for_new_table(session, request, latest_id, description)
        table_id = next_catalog_id
        next_catalog_id += 1
        schema_version += 1
        partition_id = None
        if request.new_table.partitioned_by:
            partition_id = next_catalog_id  # specs take their ids from the same counter
            next_catalog_id += 1
        changes.append(f"created_table:{quoted(request.schema_name)}.{quoted(request.table_name)}")
    else:
        table_id = _check_unchanged(session, request, latest_id, description)
        partition_id = request.partition_id
    first_file_id = next_file_id
    next_file_id += len(request.files)
    # The race point first: a concurrent commit of the same id fails here (or waits here
    # for the other transaction, then fails), before anything else is written.
    insert_row(
        session,
        "ducklake_snapshot",
        {
            "snapshot_id": new_id,
            "snapshot_time": session.adapt(_dt.datetime.now(_dt.timezone.utc)),
            "schema_version": schema_version,
            "next_catalog_id": next_catalog_id,
            "next_file_id": next_file_id,
        },
        race_point=True,
    )
    if request.new_table is not None:
        create_table_rows(
            session, request.new_table, table_id, schema_id, request, new_id, schema_version
        )
        if partition_id is not None:
            create_partitioning_rows(session, request.new_table, table_id, partition_id, new_id)
    if request.files:
        changes.append(f"inserted_into_table:{table_id}")
    if request.overwrite and request.replace_partitions is not None:
        what = f"{description}: table {_name(request)}"
        replaced = set(request.replace_partitions)
        if end_partition_rows(session, table_id, new_id, partition_id, replaced, what):
            changes.append(f"deleted_from_table:{table_id}")
    elif request.overwrite:
        end_live_rows(session, table_id, new_id)
        changes.append(f"deleted_from_table:{table_id}")
    add_file_rows(session, request, table_id, new_id, first_file_id, partition_id)
    insert_row(
        session,
        "ducklake_snapshot_changes",
        {
            "snapshot_id": new_id,
            "changes_made": ",".join(changes),
            "author": request.options.author,
            "commit_message": request.options.commit_message,
            "commit_extra_info": request.options.commit_extra_info,
        },
    )
    return new_id


def _schema_for_new_table(session, request: TableCommit, latest: int, description: str) -> int:
    schemas = {s.schema_name: s for s in list_schemas(session, latest)}
    schema = schemas.get(request.schema_name)
    if schema is None:
        raise TableNotFoundError(
            f"{description}: schema {request.schema_name!r} does not exist at snapshot "
            f"{latest}, so table {_name(request)} cannot be created there; create the schema "
            "in DuckDB first (CREATE SCHEMA)"
        )
    if find_table(session, latest, request.schema_name, request.table_name) is not None or (
        _view_exists(session, latest, schema.schema_id, request.table_name)
    ):
        raise TableExistsError(
            f"{description}: table {_name(request)} already exists at snapshot {latest}; "
            "append to it, or choose another name"
        )
    return schema.schema_id


def _view_exists(session, snapshot: int, schema_id: int, name: str) -> bool:
    rows = session.rows(
        "SELECT count(*) FROM ducklake_view WHERE schema_id = ? AND view_name = ? AND "
        "begin_snapshot <= ? AND (end_snapshot IS NULL OR ? < end_snapshot)",
        [schema_id, name, snapshot, snapshot],
    )
    return int(rows[0][0]) > 0


def _check_unchanged(session, request: TableCommit, latest: int, description: str) -> int:
    """The table's id at ``latest``, if nothing the write depends on changed since it
    began; else a :class:`CommitConflictError` naming the table and both snapshots."""
    base = request.base_snapshot

    def conflict(what: str) -> CommitConflictError:
        return CommitConflictError(
            f"{description}: table {_name(request)} {what} after snapshot {base}, where this "
            f"write began (the lake is now at snapshot {latest}); nothing was committed, "
            "write again against the table as it is now"
        )

    entry = find_table(session, latest, request.schema_name, request.table_name)
    if entry is None:
        raise conflict("was dropped or renamed")
    if entry.table_id != request.table_id:
        raise conflict("was replaced by another table of the same name")
    if latest == base:
        return entry.table_id
    changed = session.rows(
        "SELECT count(*) FROM ducklake_column WHERE table_id = ? AND "
        "(begin_snapshot > ? OR end_snapshot > ?)",
        [entry.table_id, base, base],
    )
    if int(changed[0][0]):
        raise conflict("had its columns altered")
    if session.has_table("ducklake_partition_info"):
        changed = session.rows(
            "SELECT count(*) FROM ducklake_partition_info WHERE table_id = ? AND "
            "(begin_snapshot > ? OR end_snapshot > ?)",
            [entry.table_id, base, base],
        )
        if int(changed[0][0]):
            raise conflict("was partitioned anew")
    if request.overwrite:
        for (text,) in session.rows(
            "SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id > ?", [base]
        ):
            if any(t.table_id() == entry.table_id for t in parse_changes_made(text)):
                raise conflict("had rows changed by another commit (an overwrite would lose them)")
    return entry.table_id
