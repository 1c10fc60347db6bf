"""The catalog rows of a commit, written in its transaction (``_commit`` decides which).

One function per kind of action (``_transaction``): a new table's ``ducklake_table``,
``ducklake_column``, ``ducklake_schema_versions`` and partition rows; an overwrite's ended
files and inlined rows; the files' ``ducklake_data_file``, ``ducklake_file_partition_value``
and ``ducklake_file_column_stats`` rows, and the table statistics widened to take them in.
A delete's rows are ``_delete_rows``'.
Each insert leaves out the columns an older catalog lacks (:func:`insert_row`), so 1.0
and 1.1 catalogs are each written in their own form.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UnsupportedFeatureError
from ._bounds import widen
from ._commit_request import NewDataFile, NewTable
from ._transaction import AddDataFiles, TableRef

__all__ = [
    "add_file_rows",
    "columns_of",
    "create_partitioning_rows",
    "create_table_rows",
    "end_live_rows",
    "end_partition_rows",
    "insert_partition_spec",
    "insert_row",
    "is_inlined_table_name",
]

INLINED_DATA_PREFIX = "ducklake_inlined_data_"


def insert_row(session, table: str, row: Mapping[str, object], *, race_point=False) -> None:
    """Insert ``row``, leaving out the keys this catalog's table has no column for (an
    older catalog) so that newer columns get their defaults."""
    present = set(columns_of(session, table))
    names = [name for name in row if name in present]
    placeholders = ", ".join("?" for _ in names)
    session.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({placeholders})",
        [row[name] for name in names],
        race_point=race_point,
    )


MAX_PARAMETERS = 30_000  # per statement: below SQLite's 32,766 and PostgreSQL's 65,535
# from this many rows on, a database's faster way of inserting them (``insert_many``)
MANY_ROWS = 100


def insert_rows(session, table: str, rows: list[Mapping[str, object]]) -> None:
    """Insert many rows (of the same keys) with multi-row ``VALUES`` statements: a commit
    of 1,000 files is a few statements instead of 7,000 round trips to the database."""
    if not rows:
        return
    present = set(columns_of(session, table))
    names = [name for name in rows[0] if name in present]
    if len(rows) >= MANY_ROWS and session.insert_many(
        table, names, [[row[name] for name in names] for row in rows]
    ):
        return
    one = "(" + ", ".join("?" for _ in names) + ")"
    per_statement = max(1, MAX_PARAMETERS // max(len(names), 1))
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        session.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES " + ", ".join([one] * len(chunk)),
            [row[name] for row in chunk for name in names],
        )


def columns_of(session, table: str) -> tuple[str, ...]:
    held = session.cache.setdefault("write_columns", {})
    if table not in held:
        held[table] = session.column_names(table)
    return held[table]


def create_table_rows(
    session,
    table: NewTable,
    ref: TableRef,
    table_id: int,
    schema_id: int,
    snapshot: int,
    schema_version: int,
) -> None:
    insert_row(
        session,
        "ducklake_table",
        {
            "table_id": table_id,
            "table_uuid": session.adapt(table.table_uuid),
            "begin_snapshot": snapshot,
            "end_snapshot": None,
            "schema_id": schema_id,
            "table_name": ref.table_name,
            "path": table.path,
            "path_is_relative": True,
        },
    )
    for column in table.columns:
        nested = column.type_name in ("struct", "list", "map")
        insert_row(
            session,
            "ducklake_column",
            {
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
            },
        )
    if session.has_table("ducklake_schema_versions"):
        insert_row(
            session,
            "ducklake_schema_versions",
            {
                "begin_snapshot": snapshot,
                "schema_version": schema_version,
                "table_id": table_id,
            },
        )


def end_live_rows(session, table_id: int, snapshot: int) -> None:
    """End every data file and inlined row of the table live before ``snapshot``."""
    session.execute(
        "UPDATE ducklake_data_file SET end_snapshot = ? WHERE table_id = ? AND "
        "end_snapshot IS NULL",
        [snapshot, table_id],
    )
    for (name,) in session.rows(
        "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ?", [table_id]
    ):
        if not is_inlined_table_name(name, table_id) or not session.has_table(name):
            continue
        # DuckLake 1.1 prefixes the inlined tables' system columns with _ducklake_
        end = "end_snapshot"
        if "_ducklake_end_snapshot" in columns_of(session, name):
            end = "_ducklake_end_snapshot"
        session.execute(f'UPDATE "{name}" SET {end} = ? WHERE {end} IS NULL', [snapshot])


def end_partition_rows(
    session,
    table_id: int,
    snapshot: int,
    partition_id: int | None,
    partitions: set[tuple[str | None, ...]],
    what: str,
) -> int:
    """End the data files of the table's partitions ``partitions`` (a dynamic partition
    overwrite); how many were ended. Only a table whose live rows are all in files of its
    current partitioning can be cut by partition: inlined rows, or files of an earlier
    partitioning, are refused by name (nothing is known of their partitions without
    reading them)."""
    for (name,) in session.rows(
        "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ?", [table_id]
    ):
        if not is_inlined_table_name(name, table_id) or not session.has_table(name):
            continue
        end = (
            "_ducklake_end_snapshot"
            if "_ducklake_end_snapshot" in columns_of(session, name)
            else "end_snapshot"
        )
        if int(session.rows(f'SELECT count(*) FROM "{name}" WHERE {end} IS NULL')[0][0]):
            raise UnsupportedFeatureError(
                f"{what} has rows inlined in the catalog, whose partitions a dynamic partition "
                "overwrite cannot tell apart; flush them into files first (DuckDB: CALL "
                "ducklake_flush_inlined_data), or overwrite the whole table"
            )
    files = session.rows(
        "SELECT data_file_id, partition_id FROM ducklake_data_file WHERE table_id = ? AND "
        "end_snapshot IS NULL",
        [table_id],
    )
    if any(found != partition_id for _, found in files):
        raise UnsupportedFeatureError(
            f"{what} has files written under an earlier partitioning, whose partitions a "
            "dynamic partition overwrite cannot tell apart; overwrite the whole table"
        )
    keys: dict[int, dict[int, str | None]] = {int(file_id): {} for file_id, _ in files}
    for file_id, index, value in session.rows(
        "SELECT v.data_file_id, v.partition_key_index, v.partition_value FROM "
        "ducklake_file_partition_value v JOIN ducklake_data_file f USING (data_file_id) "
        "WHERE f.table_id = ? AND f.end_snapshot IS NULL",
        [table_id],
    ):
        keys[int(file_id)][int(index)] = value
    wanted = {tuple(_storable(session, v) for v in values) for values in partitions}
    ended = [
        file_id
        for file_id, values in keys.items()
        if tuple(values[i] for i in sorted(values)) in wanted
    ]
    for file_id in ended:
        session.execute(
            "UPDATE ducklake_data_file SET end_snapshot = ? WHERE data_file_id = ?",
            [snapshot, file_id],
        )
    return len(ended)


def is_inlined_table_name(name: str, table_id: int) -> bool:
    """Whether ``name`` is an inlined-data table of ``table_id`` (it is formatted into SQL)."""
    rest = name.removeprefix(f"{INLINED_DATA_PREFIX}{table_id}_")
    return rest != name and rest.isdigit()


def create_partitioning_rows(
    session, table: NewTable, table_id: int, partition_id: int, snapshot: int
) -> None:
    insert_partition_spec(session, table_id, partition_id, table.partitioned_by, snapshot)


def insert_partition_spec(session, table_id: int, partition_id: int, keys, snapshot: int) -> None:
    """A partition spec that begins at ``snapshot``: its ``ducklake_partition_info`` row and
    a ``ducklake_partition_column`` row per ``(column id, transform)`` key, in order (none:
    the empty spec DuckDB's ``RESET PARTITIONED BY`` begins)."""
    insert_row(
        session,
        "ducklake_partition_info",
        {
            "partition_id": partition_id,
            "table_id": table_id,
            "begin_snapshot": snapshot,
            "end_snapshot": None,
        },
    )
    for index, (column_id, transform) in enumerate(keys):
        insert_row(
            session,
            "ducklake_partition_column",
            {
                "partition_id": partition_id,
                "table_id": table_id,
                "partition_key_index": index,
                "column_id": column_id,
                "transform": transform,
            },
        )


def add_file_rows(
    session,
    request: AddDataFiles,
    table_id: int,
    snapshot: int,
    first_file_id: int,
    partition_id: int | None,
) -> None:
    stats = session.rows(
        "SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats "
        "WHERE table_id = ?",
        [table_id],
    )
    records, next_row_id, size = (int(v or 0) for v in stats[0]) if stats else (0, 0, 0)
    files, values, columns = [], [], []
    for index, data_file in enumerate(request.files):
        file_id = first_file_id + index
        files.append(
            data_file_row(
                data_file,
                file_id,
                table_id,
                begin_snapshot=snapshot,
                row_id_start=next_row_id,
                partition_id=partition_id,
            )
        )
        values.extend(_partition_value_rows(session, data_file, table_id, file_id))
        columns.extend(_column_stats_rows(session, data_file, table_id, file_id))
        records += data_file.record_count
        next_row_id += data_file.record_count
        size += data_file.file_size_bytes
    insert_rows(session, "ducklake_data_file", files)
    insert_rows(session, "ducklake_file_partition_value", values)
    insert_rows(session, "ducklake_file_column_stats", columns)
    if not request.files:
        return
    if stats:
        session.execute(
            "UPDATE ducklake_table_stats SET record_count = ?, next_row_id = ?, "
            "file_size_bytes = ? WHERE table_id = ?",
            [records, next_row_id, size, table_id],
        )
    else:
        insert_row(
            session,
            "ducklake_table_stats",
            {
                "table_id": table_id,
                "record_count": records,
                "next_row_id": next_row_id,
                "file_size_bytes": size,
            },
        )
    _widen_column_stats(session, request, table_id, first=not stats)


def data_file_row(
    data_file: NewDataFile,
    file_id: int,
    table_id: int,
    *,
    begin_snapshot: int,
    row_id_start: int | None,
    partition_id: int | None,
    partial_max: int | None = None,
) -> dict:
    """A new data file's ``ducklake_data_file`` row: an append's, a merge's, a rewrite's
    or a flush's (they differ only in the keyword arguments). ``partition_id`` counts only
    for a file with partition values."""
    return {
        "data_file_id": file_id,
        "table_id": table_id,
        "begin_snapshot": begin_snapshot,
        "end_snapshot": None,
        "file_order": None,
        "path": data_file.path,
        "path_is_relative": True,
        "file_format": "parquet",
        "record_count": data_file.record_count,
        "file_size_bytes": data_file.file_size_bytes,
        "footer_size": data_file.footer_size,
        "row_id_start": row_id_start,
        "partition_id": partition_id if data_file.partition_values else None,
        "encryption_key": None,
        "mapping_id": None,
        "partial_max": partial_max,
        "row_group_count": data_file.row_group_count,
    }


def insert_data_file(session, data_file: NewDataFile, file_id: int, table_id: int, **row) -> None:
    """One new data file's catalog rows: its ``ducklake_data_file`` row
    (:func:`data_file_row`, with ``row``'s keyword arguments) and its detail rows."""
    insert_row(session, "ducklake_data_file", data_file_row(data_file, file_id, table_id, **row))
    file_detail_rows(session, data_file, table_id, file_id)


def held_column_stats(session, table_id: int) -> tuple[bool, dict[int, tuple]]:
    """A table's ``ducklake_table_column_stats`` rows by column id (``contains_null,
    contains_nan, min_value, max_value`` and, where the catalog is DuckLake 1.1,
    ``min_is_exact, max_is_exact``), and whether it is 1.1 (has the two)."""
    exact = "min_is_exact" in columns_of(session, "ducklake_table_column_stats")
    held = {
        int(r[0]): r[1:]
        for r in session.rows(
            "SELECT column_id, contains_null, contains_nan, min_value, max_value"
            + (", min_is_exact, max_is_exact" if exact else "")
            + " FROM ducklake_table_column_stats WHERE table_id = ?",
            [table_id],
        )
    }
    return exact, held


def file_detail_rows(session, data_file: NewDataFile, table_id: int, file_id: int) -> None:
    """A new data file's ``ducklake_file_partition_value`` and ``ducklake_file_column_stats``
    rows."""
    insert_rows(
        session,
        "ducklake_file_partition_value",
        _partition_value_rows(session, data_file, table_id, file_id),
    )
    insert_rows(
        session,
        "ducklake_file_column_stats",
        _column_stats_rows(session, data_file, table_id, file_id),
    )


def _partition_value_rows(session, data_file: NewDataFile, table_id: int, file_id: int) -> list:
    return [
        {
            "data_file_id": file_id,
            "table_id": table_id,
            "partition_key_index": key_index,
            "partition_value": _storable(session, value),
        }
        for key_index, value in enumerate(data_file.partition_values)
    ]


def _column_stats_rows(session, data_file: NewDataFile, table_id: int, file_id: int) -> list:
    return [
        {
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
        }
        for column in data_file.columns
    ]


def _storable(session, bound: str | None) -> str | None:
    """A text bound as this catalog database can keep it: one holding a NUL character
    becomes NULL (no bound) where text cannot hold NUL, as DuckDB stores it there."""
    if bound is None or session.TEXT_KEEPS_NUL or "\0" not in bound:
        return bound
    return None


def _widen_column_stats(session, request: AddDataFiles, table_id: int, *, first: bool) -> None:
    """Widen the table's column statistics to take the files in. A column gets its row
    at the table's first rows only (``first``): DuckDB 1.5.5 never adds one for a column
    added to a table that had statistics already (its later files update only the rows
    there are)."""
    # DuckLake 1.1 says whether each bound is a value (not a cut one): kept when it has it
    exact, held = held_column_stats(session, table_id)
    for column_id, type_name in request.column_types.items():
        files = [c for f in request.files for c in f.columns if c.column_id == column_id]
        if not files:
            continue
        before = held.get(column_id)
        null, nan, low, high = widen(type_name, None if before is None else before[:4], files)
        row = {"contains_null": null, "contains_nan": nan, "min_value": low, "max_value": high}
        if exact:
            # a widened bound is claimed exact only when every bound it came from was
            row["min_is_exact"] = (
                None
                if low is None
                else (_all_exact(files, "min") and (before is None or bool(before[4])))
            )
            row["max_is_exact"] = (
                None
                if high is None
                else (_all_exact(files, "max") and (before is None or bool(before[5])))
            )
        if before is None and not first:
            continue
        if before is not None:
            names = ", ".join(f"{name} = ?" for name in row)
            session.execute(
                f"UPDATE ducklake_table_column_stats SET {names} "
                "WHERE table_id = ? AND column_id = ?",
                [*row.values(), table_id, column_id],
            )
        else:
            insert_row(
                session,
                "ducklake_table_column_stats",
                {
                    "table_id": table_id,
                    "column_id": column_id,
                    **row,
                    "extra_stats": None,
                },
            )


def _all_exact(files, which: str) -> bool:
    return all(getattr(f, f"{which}_exact") for f in files)
