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
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import (
    CommitConflictError,
    InvalidOptionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from ._bounds import widen
from ._change_tokens import parse_changes_made
from ._names import find_table, list_schemas
from ._settings import read_settings
from ._writers import SnapshotRace

__all__ = ["CommitOptions", "FileColumnStats", "NewColumn", "NewDataFile", "NewTable", "TableCommit", "commit"]

MAX_ATTEMPTS = 12
INLINED_DATA_PREFIX = "ducklake_inlined_data_"


@dataclass(frozen=True, slots=True)
class FileColumnStats:
    """One leaf column's ``ducklake_file_column_stats`` row for one file (ids aside)."""

    column_id: int
    column_size_bytes: int | None
    value_count: int
    null_count: int
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None
    # whether each bound is a value of the file (False: text cut to 256 bytes), for 1.1's
    # min_is_exact / max_is_exact
    min_exact: bool = True
    max_exact: bool = True


@dataclass(frozen=True, slots=True)
class NewDataFile:
    """A data file written for the commit: its path relative to the table's directory."""

    path: str
    record_count: int
    file_size_bytes: int
    footer_size: int
    row_group_count: int
    columns: tuple[FileColumnStats, ...]
    partition_values: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class NewColumn:
    """A ``ducklake_column`` row of a new table (any nesting level)."""

    column_id: int
    name: str
    type_name: str
    parent_column: int | None
    column_order: int


@dataclass(frozen=True, slots=True)
class NewTable:
    """The table a commit creates: its uuid, directory (relative to the schema's) and
    columns."""

    table_uuid: uuid.UUID
    path: str
    columns: tuple[NewColumn, ...]
    # (column id, transform) per key when created partitioned, in key order
    partitioned_by: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CommitOptions:
    """What the caller says about a commit: ``ducklake_snapshot_changes``' author, message
    and extra info (NULL when not given), as DuckDB's ``CALL ducklake_set_commit_message``."""

    author: str | None = None
    commit_message: str | None = None
    commit_extra_info: str | None = None

    def __post_init__(self) -> None:
        for name in ("author", "commit_message", "commit_extra_info"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidOptionError(f"{name} must be text or None, got {value!r}")


@dataclass(frozen=True, slots=True)
class TableCommit:
    """What one commit changes in one table.

    Attributes:
        base_snapshot: the snapshot the write began at (its table, columns and path).
        table_id: the table written to; ``None`` when ``new_table`` creates it.
        column_types: DuckLake type of every leaf column id, to compare statistics.
        overwrite: end every row live before this commit (``INSERT OVERWRITE``).
        partition_id: the partition spec the files were written under (``None``:
            unpartitioned, or the spec ``new_table`` creates).
    """

    schema_name: str
    table_name: str
    base_snapshot: int
    table_id: int | None
    files: tuple[NewDataFile, ...]
    column_types: Mapping[int, str]
    new_table: NewTable | None = None
    overwrite: bool = False
    partition_id: int | None = None
    options: CommitOptions = CommitOptions()


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
    if request.new_table is None and not request.files and not request.overwrite:
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
        changes.append(
            f"created_table:{quoted(request.schema_name)}.{quoted(request.table_name)}"
        )
    else:
        table_id = _check_unchanged(session, request, latest_id, description)
        partition_id = request.partition_id
    first_file_id = next_file_id
    next_file_id += len(request.files)
    # The race point first: a concurrent commit of the same id fails here (or waits here
    # for the other transaction, then fails), before anything else is written.
    _insert(session, "ducklake_snapshot", {
        "snapshot_id": new_id,
        "snapshot_time": session.adapt(_dt.datetime.now(_dt.timezone.utc)),
        "schema_version": schema_version,
        "next_catalog_id": next_catalog_id,
        "next_file_id": next_file_id,
    }, race_point=True)
    if request.new_table is not None:
        _create_table(session, request.new_table, table_id, schema_id, request, new_id,
                      schema_version)
        if partition_id is not None:
            _create_partitioning(session, request.new_table, table_id, partition_id, new_id)
    if request.files:
        changes.append(f"inserted_into_table:{table_id}")
    if request.overwrite:
        _end_live_rows(session, table_id, new_id)
        changes.append(f"deleted_from_table:{table_id}")
    _add_files(session, request, table_id, new_id, first_file_id, partition_id)
    _insert(session, "ducklake_snapshot_changes", {
        "snapshot_id": new_id,
        "changes_made": ",".join(changes),
        "author": request.options.author,
        "commit_message": request.options.commit_message,
        "commit_extra_info": request.options.commit_extra_info,
    })
    return new_id


def _insert(session, table: str, row: Mapping[str, object], *, race_point=False) -> None:
    """Insert ``row``, leaving out the keys this catalog's table has no column for (an
    older catalog) so that newer columns get their defaults."""
    present = set(_columns(session, table))
    names = [name for name in row if name in present]
    placeholders = ", ".join("?" for _ in names)
    session.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({placeholders})",
        [row[name] for name in names],
        race_point=race_point,
    )


def _columns(session, table: str) -> tuple[str, ...]:
    held = session.cache.setdefault("write_columns", {})
    if table not in held:
        held[table] = session.column_names(table)
    return held[table]


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


def _create_table(session, table: NewTable, table_id: int, schema_id: int,
                  request: TableCommit, snapshot: int, schema_version: int) -> None:
    _insert(session, "ducklake_table", {
        "table_id": table_id,
        "table_uuid": session.adapt(table.table_uuid),
        "begin_snapshot": snapshot,
        "end_snapshot": None,
        "schema_id": schema_id,
        "table_name": request.table_name,
        "path": table.path,
        "path_is_relative": True,
    })
    for column in table.columns:
        nested = column.type_name in ("struct", "list", "map")
        _insert(session, "ducklake_column", {
            "column_id": column.column_id,
            "begin_snapshot": snapshot,
            "end_snapshot": None,
            "table_id": table_id,
            "column_order": column.column_order,
            "column_name": column.name,
            "column_type": column.type_name,
            "initial_default": None,
            "default_value": "NULL",
            "nulls_allowed": True,
            "parent_column": column.parent_column,
            "default_value_type": "" if nested else "literal",
            "default_value_dialect": "duckdb",
        })
    if session.has_table("ducklake_schema_versions"):
        _insert(session, "ducklake_schema_versions", {
            "begin_snapshot": snapshot,
            "schema_version": schema_version,
            "table_id": table_id,
        })


def _end_live_rows(session, table_id: int, snapshot: int) -> None:
    """End every data file and inlined row of the table live before ``snapshot``."""
    session.execute(
        "UPDATE ducklake_data_file SET end_snapshot = ? WHERE table_id = ? AND "
        "end_snapshot IS NULL",
        [snapshot, table_id],
    )
    for (name,) in session.rows(
        "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ?", [table_id]
    ):
        if not _is_inlined_table_name(name, table_id) or not session.has_table(name):
            continue
        # DuckLake 1.1 prefixes the inlined tables' system columns with _ducklake_
        end = "end_snapshot"
        if "_ducklake_end_snapshot" in _columns(session, name):
            end = "_ducklake_end_snapshot"
        session.execute(f'UPDATE "{name}" SET {end} = ? WHERE {end} IS NULL', [snapshot])


def _is_inlined_table_name(name: str, table_id: int) -> bool:
    """Whether ``name`` is an inlined-data table of ``table_id`` (it is formatted into SQL)."""
    rest = name.removeprefix(f"{INLINED_DATA_PREFIX}{table_id}_")
    return rest != name and rest.isdigit()


def _create_partitioning(session, table: NewTable, table_id: int, partition_id: int,
                         snapshot: int) -> None:
    _insert(session, "ducklake_partition_info", {
        "partition_id": partition_id,
        "table_id": table_id,
        "begin_snapshot": snapshot,
        "end_snapshot": None,
    })
    for index, (column_id, transform) in enumerate(table.partitioned_by):
        _insert(session, "ducklake_partition_column", {
            "partition_id": partition_id,
            "table_id": table_id,
            "partition_key_index": index,
            "column_id": column_id,
            "transform": transform,
        })


def _add_files(session, request: TableCommit, table_id: int, snapshot: int,
               first_file_id: int, partition_id: int | None) -> None:
    stats = session.rows(
        "SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats "
        "WHERE table_id = ?",
        [table_id],
    )
    records, next_row_id, size = (int(v or 0) for v in stats[0]) if stats else (0, 0, 0)
    for index, data_file in enumerate(request.files):
        file_id = first_file_id + index
        _insert(session, "ducklake_data_file", {
            "data_file_id": file_id,
            "table_id": table_id,
            "begin_snapshot": snapshot,
            "end_snapshot": None,
            "file_order": None,
            "path": data_file.path,
            "path_is_relative": True,
            "file_format": "parquet",
            "record_count": data_file.record_count,
            "file_size_bytes": data_file.file_size_bytes,
            "footer_size": data_file.footer_size,
            "row_id_start": next_row_id,
            "partition_id": partition_id if data_file.partition_values else None,
            "encryption_key": None,
            "mapping_id": None,
            "partial_max": None,
            "row_group_count": data_file.row_group_count,
        })
        for index, value in enumerate(data_file.partition_values):
            _insert(session, "ducklake_file_partition_value", {
                "data_file_id": file_id,
                "table_id": table_id,
                "partition_key_index": index,
                "partition_value": _storable(session, value),
            })
        for column in data_file.columns:
            _insert(session, "ducklake_file_column_stats", {
                "data_file_id": file_id,
                "table_id": table_id,
                "column_id": column.column_id,
                "column_size_bytes": column.column_size_bytes,
                "value_count": column.value_count,
                "null_count": column.null_count,
                "min_value": _storable(session, column.min_value),
                "max_value": _storable(session, column.max_value),
                "contains_nan": column.contains_nan,
                "extra_stats": None,
                "min_is_exact": column.min_exact if column.min_value is not None else None,
                "max_is_exact": column.max_exact if column.max_value is not None else None,
            })
        records += data_file.record_count
        next_row_id += data_file.record_count
        size += data_file.file_size_bytes
    if not request.files:
        return
    if stats:
        session.execute(
            "UPDATE ducklake_table_stats SET record_count = ?, next_row_id = ?, "
            "file_size_bytes = ? WHERE table_id = ?",
            [records, next_row_id, size, table_id],
        )
    else:
        _insert(session, "ducklake_table_stats", {
            "table_id": table_id,
            "record_count": records,
            "next_row_id": next_row_id,
            "file_size_bytes": size,
        })
    _widen_column_stats(session, request, table_id)


def _storable(session, bound: str | None) -> str | None:
    """A text bound as this catalog database can keep it: one holding a NUL character
    becomes NULL (no bound) where text cannot hold NUL, as DuckDB stores it there."""
    if bound is None or session.TEXT_KEEPS_NUL or "\0" not in bound:
        return bound
    return None


def _widen_column_stats(session, request: TableCommit, table_id: int) -> None:
    # DuckLake 1.1 says whether each bound is a value (not a cut one): kept when it has it
    exact = "min_is_exact" in _columns(session, "ducklake_table_column_stats")
    held = {
        int(r[0]): r[1:]
        for r in session.rows(
            "SELECT column_id, contains_null, contains_nan, min_value, max_value"
            + (", min_is_exact, max_is_exact" if exact else "")
            + " FROM ducklake_table_column_stats WHERE table_id = ?",
            [table_id],
        )
    }
    for column_id, type_name in request.column_types.items():
        files = [c for f in request.files for c in f.columns if c.column_id == column_id]
        if not files:
            continue
        before = held.get(column_id)
        null, nan, low, high = widen(type_name, None if before is None else before[:4], files)
        row = {"contains_null": null, "contains_nan": nan, "min_value": low, "max_value": high}
        if exact:
            # a widened bound is claimed exact only when every bound it came from was
            row["min_is_exact"] = None if low is None else (
                _all_exact(files, "min") and (before is None or bool(before[4]))
            )
            row["max_is_exact"] = None if high is None else (
                _all_exact(files, "max") and (before is None or bool(before[5]))
            )
        if before is not None:
            names = ", ".join(f"{name} = ?" for name in row)
            session.execute(
                f"UPDATE ducklake_table_column_stats SET {names} "
                "WHERE table_id = ? AND column_id = ?",
                [*row.values(), table_id, column_id],
            )
        else:
            _insert(session, "ducklake_table_column_stats", {
                "table_id": table_id, "column_id": column_id, **row, "extra_stats": None,
            })


def _all_exact(files, which: str) -> bool:
    return all(getattr(f, f"{which}_exact") for f in files)
