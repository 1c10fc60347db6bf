"""The metadata queries of the DuckLake read path (steps 0-11 of the read-path notes).

Every function takes an open :class:`MetadataSession` so that all reads of one query share
one transaction. The SQL is plain and dialect neutral; all values are bound parameters.
The only identifiers formatted into SQL are inlined-table names read from the catalog's
own registry, and those are checked against a strict pattern first.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import re
import time
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import (
    CatalogError,
    NotADuckLakeCatalogError,
    UnsupportedVersionError,
)
from ._backend import MetadataSession
from ._format import (
    INLINED_SYSTEM_COLUMNS,
    NEWEST_VERSION,
    READ_VERSIONS,
    inlined_system_columns,
)
from ._models import (
    ColumnEntry,
    DeleteFileEntry,
    InlinedTableEntry,
    NameMappingNode,
    PartitionColumnEntry,
    SchemaEntry,
    SnapshotInfo,
    TableEntry,
    TableFiles,
    ViewEntry,
    delete_file_entry,
)
from ._session import memoised, per_version

__all__ = [
    "SUPPORTED_VERSIONS",
    "columns_of",
    "find_table",
    "latest_snapshot",
    "list_schemas",
    "list_snapshots",
    "list_tables",
    "list_views",
    "nested_schema_names",
    "read_columns",
    "read_settings",
    "read_table_files",
    "snapshot_at_time",
    "snapshot_by_id",
    "table_names_of",
    "top_level_schemas",
]

SUPPORTED_VERSIONS = READ_VERSIONS
_INLINED_DATA = re.compile(r"^ducklake_inlined_data_\d+_\d+$")


def live(alias: str = "") -> str:
    """The snapshot-visibility rule, written once: begin inclusive, end exclusive.

    Binds the snapshot id twice.
    """
    p = f"{alias}." if alias else ""
    return f"{p}begin_snapshot <= ? AND ({p}end_snapshot IS NULL OR ? < {p}end_snapshot)"


_SNAPSHOT_CACHE_SIZE = 512


def _per_snapshot(session: MetadataSession, key: tuple, compute):
    """Memoise a lookup whose answer is fixed once its snapshot exists.

    What is live at snapshot S (schemas, tables, columns, inlined-table layouts) never
    changes after S is committed: later commits only add rows beginning after S or end rows
    after S. So names are still looked up on every call (the latest snapshot id is read
    each time), but an unchanged lake costs one small query instead of four. File lists are
    not memoised here but per lake version (``per_version``): maintenance may move the
    rows that describe them.
    """
    cache = getattr(session, "cache", None)
    if cache is None:
        return compute()
    memo = cache.setdefault("per_snapshot", {})
    if key not in memo:
        if len(memo) >= _SNAPSHOT_CACHE_SIZE:
            memo.clear()
        memo[key] = compute()
    return memo[key]


def _bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "t", "true")
    return bool(value)


def _timestamp(value: object) -> _dt.datetime:
    """Snapshot times: datetimes from DuckDB/PostgreSQL, variable-length text from SQLite."""
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    text = str(value).strip().replace(" ", "T", 1)
    match = re.match(r"^(.*?)([+-]\d{2})(:?\d{2})?$", text)
    if match and "T" in match.group(1):
        text = match.group(1) + match.group(2) + ":" + (match.group(3) or "00").lstrip(":")
    # Python 3.10's fromisoformat wants exactly 3 or 6 fraction digits.
    text = re.sub(r"\.(\d{1,6})\d*", lambda m: "." + m.group(1).ljust(6, "0"), text, count=1)
    parsed = _dt.datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)


SETTINGS_TTL_SECONDS = 60.0


def read_settings(session: MetadataSession, description: str) -> dict[str, str]:
    """Step 0: global settings; checks the format version.

    The validated settings are kept in the backend's cache for ``SETTINGS_TTL_SECONDS``:
    they change only when the catalog is migrated, and re-reading them would cost two
    queries on every schema, table and scan look-up.
    """
    cache = getattr(session, "cache", None)
    cached = cache.get("settings") if cache is not None else None
    if cached is not None and time.monotonic() - cached[0] < SETTINGS_TTL_SECONDS:
        return cached[1]
    settings = _read_settings(session, description)
    if cache is not None:
        cache["settings"] = (time.monotonic(), settings)
    return settings


def _read_settings(session: MetadataSession, description: str) -> dict[str, str]:
    if not session.has_table("ducklake_metadata"):
        raise NotADuckLakeCatalogError(
            f"{description} has no ducklake_metadata table, so it is not a DuckLake catalog; "
            "pass the catalog database that DuckDB's ATTACH 'ducklake:...' created (and, if "
            "it was attached with METADATA_SCHEMA, the same schema as metadata_schema=)"
        )
    rows = session.rows("SELECT key, value FROM ducklake_metadata WHERE scope IS NULL")
    settings = {key: value for key, value in rows}
    version = settings.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(_version_message(description, version))
    return settings


def _version_message(description: str, version: object) -> str:
    """What to do about a catalog of another format version (read-path notes, e #40)."""
    supported = ", ".join(SUPPORTED_VERSIONS)
    head = (
        f"{description} uses DuckLake format version {version!r}; this reader reads "
        f"{supported} catalogs and never migrates (it opens catalogs read-only). "
    )
    text = str(version or "")
    if text.startswith("0."):
        return head + (
            "DuckDB migrates older catalogs when it attaches them read-write: back the "
            "catalog up, then run ATTACH 'ducklake:<catalog>' AS lake (AUTOMATIC_MIGRATION "
            "true) in DuckDB 1.5 with its ducklake extension, which rewrites it as 1.0"
        )
    return head + (
        f"The newest format it reads is {NEWEST_VERSION}; a newer one may store what this "
        "reader would misread: upgrade ducklake-datafusion, or keep writers on a format it "
        f"reads (DuckDB: DUCKLAKE_VERSION '{NEWEST_VERSION}' when creating the catalog)"
    )


def _snapshot(row: tuple) -> SnapshotInfo:
    return SnapshotInfo(int(row[0]), _timestamp(row[1]), int(row[2]))


_SNAPSHOT_SQL = (
    "SELECT snapshot_id, CAST(snapshot_time AS VARCHAR), schema_version FROM ducklake_snapshot"
)


def latest_snapshot(session: MetadataSession) -> SnapshotInfo:
    """The latest snapshot: one ``max()`` query, its row memoised per lake version.

    (``ORDER BY snapshot_id DESC LIMIT 1`` costs DuckDB three times as much.)
    """
    latest = session.lake_version()[0]
    snapshot = snapshot_by_id(session, latest)
    if snapshot is None:
        raise NotADuckLakeCatalogError(
            f"{getattr(session, 'description', 'the catalog')} has an empty ducklake_snapshot "
            "table, so it is not a usable DuckLake catalog; pass the catalog database that "
            "DuckDB's ATTACH 'ducklake:...' created"
        )
    return snapshot


def snapshot_by_id(session: MetadataSession, snapshot_id: int) -> SnapshotInfo | None:
    def lookup() -> SnapshotInfo | None:
        rows = session.rows(_SNAPSHOT_SQL + " WHERE snapshot_id = ?", [int(snapshot_id)])
        return _snapshot(rows[0]) if rows else None

    return per_version(session, ("snapshot", int(snapshot_id)), lookup)


def list_snapshots(session: MetadataSession) -> list[SnapshotInfo]:
    def read() -> tuple[SnapshotInfo, ...]:
        rows = session.rows(_SNAPSHOT_SQL + " ORDER BY snapshot_id")
        return tuple(_snapshot(r) for r in rows)

    return list(per_version(session, ("snapshots",), read))


def snapshot_at_time(
    session: MetadataSession, when: _dt.datetime, *, at_or_after: bool = False
) -> SnapshotInfo | None:
    """Latest snapshot with time <= ``when`` (or earliest >= when for a range start).

    Compared in Python because SQLite stores the times as text of variable length.
    """
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    snapshots = list_snapshots(session)
    if at_or_after:
        later = [s for s in snapshots if s.snapshot_time >= when]
        return min(later, key=lambda s: (s.snapshot_time, s.snapshot_id)) if later else None
    earlier = [s for s in snapshots if s.snapshot_time <= when]
    return max(earlier, key=lambda s: (s.snapshot_time, s.snapshot_id)) if earlier else None


def list_schemas(session: MetadataSession, snapshot: int) -> list[SchemaEntry]:
    return list(
        _per_snapshot(session, ("schemas", snapshot), lambda: _list_schemas(session, snapshot))
    )


def _list_schemas(session: MetadataSession, snapshot: int) -> tuple[SchemaEntry, ...]:
    rows = session.rows(
        "SELECT schema_id, schema_name, path, path_is_relative FROM ducklake_schema s "
        f"WHERE {live()}{top_level_schemas(session)} ORDER BY schema_id",
        [snapshot, snapshot],
    )
    return tuple(SchemaEntry(int(r[0]), r[1], r[2], _bool(r[3])) for r in rows)


def top_level_schemas(session: MetadataSession) -> str:
    """``" AND s.parent_schema_id IS NULL"`` when the catalog can nest schemas (1.1), else
    ``""``: a schema name is looked up among top-level schemas only, so that a nested
    ``sales.main`` is never read as ``main``."""
    if "parent_schema_id" in columns_of(session, "ducklake_schema"):
        return " AND s.parent_schema_id IS NULL"
    return ""


def nested_schema_names(session: MetadataSession, snapshot: int) -> tuple[str, ...]:
    """Dotted paths of the nested schemas live at ``snapshot`` (1.1), which this reader
    does not read: named in the error of a lookup that did not find its table."""
    if "parent_schema_id" not in columns_of(session, "ducklake_schema"):
        return ()
    rows = session.rows(
        f"SELECT schema_id, schema_name, parent_schema_id FROM ducklake_schema WHERE {live()}",
        [snapshot, snapshot],
    )
    parents = {int(r[0]): (r[1], None if r[2] is None else int(r[2])) for r in rows}

    def path(schema_id: int) -> str:
        name, parent = parents[schema_id]
        seen = {schema_id}
        while parent is not None and parent in parents and parent not in seen:
            seen.add(parent)
            parent_name, parent = parents[parent]
            name = f"{parent_name}.{name}"
        return name

    return tuple(sorted(path(i) for i, (_, parent) in parents.items() if parent is not None))


def columns_of(session: MetadataSession, table: str) -> tuple[str, ...]:
    """The column names of a metadata table (memoised per lake version): which optional
    columns a catalog has is read from the catalog, never inferred from its version."""
    if not _METADATA_TABLE.match(table):
        raise ValueError(f"not a metadata table name: {table!r}")

    return per_version(session, ("columns_of", table), lambda: session.column_names(table))


_METADATA_TABLE = re.compile(r"^ducklake_[a-z0-9_]+$")


def _table_sql(session: MetadataSession) -> str:
    return (
        "SELECT t.table_id, t.table_uuid, s.schema_id, s.schema_name, t.table_name, "
        "s.path, s.path_is_relative, t.path, t.path_is_relative "
        "FROM ducklake_table t JOIN ducklake_schema s ON t.schema_id = s.schema_id "
        f"WHERE {live('t')} AND {live('s')}{top_level_schemas(session)} AND s.schema_name = ?"
    )


def _table(row: tuple) -> TableEntry:
    return TableEntry(
        table_id=int(row[0]),
        table_uuid=str(row[1]),
        schema_id=int(row[2]),
        schema_name=row[3],
        table_name=row[4],
        schema_path=row[5],
        schema_path_is_relative=_bool(row[6]),
        path=row[7],
        path_is_relative=_bool(row[8]),
    )


def list_tables(session: MetadataSession, snapshot: int, schema_name: str) -> list[TableEntry]:
    params = [snapshot] * 4 + [schema_name]
    rows = session.rows(_table_sql(session) + " ORDER BY t.table_name", params)
    return [_table(r) for r in rows]


def _view_sql(session: MetadataSession) -> str:
    return (
        "SELECT v.view_id, s.schema_name, v.view_name, v.dialect, v.sql, v.column_aliases "
        "FROM ducklake_view v JOIN ducklake_schema s ON v.schema_id = s.schema_id "
        f"WHERE {live('v')} AND {live('s')}{top_level_schemas(session)} AND s.schema_name = ? "
        "ORDER BY v.view_name"
    )


_ALIAS = re.compile(r'"((?:[^"]|"")*)"')


def table_names_of(session: MetadataSession, table_id: int) -> list[tuple[str, str]]:
    """Every ``(schema, table)`` name a table has had (renames keep the table id)."""
    rows = session.rows(
        "SELECT DISTINCT s.schema_name, t.table_name FROM ducklake_table t "
        "JOIN ducklake_schema s ON t.schema_id = s.schema_id WHERE t.table_id = ?",
        [table_id],
    )
    return [(r[0], r[1]) for r in rows]


def list_views(session: MetadataSession, snapshot: int, schema_name: str) -> list[ViewEntry]:
    """Step 12: the views of a schema live at the snapshot."""

    def read() -> tuple[ViewEntry, ...]:
        if not session.has_table("ducklake_view"):
            return ()
        rows = session.rows(_view_sql(session), [snapshot] * 4 + [schema_name])
        return tuple(
            ViewEntry(
                int(r[0]),
                r[1],
                r[2],
                (r[3] or "duckdb").lower(),
                r[4],
                tuple(a.replace('""', '"') for a in _ALIAS.findall(r[5] or "")),
            )
            for r in rows
        )

    return list(_per_snapshot(session, ("views", snapshot, schema_name), read))


def find_table(
    session: MetadataSession, snapshot: int, schema_name: str, table_name: str
) -> TableEntry | None:
    params = [snapshot] * 4 + [schema_name, table_name]

    def lookup() -> TableEntry | None:
        rows = session.rows(_table_sql(session) + " AND t.table_name = ?", params)
        return _table(rows[0]) if rows else None

    return _per_snapshot(session, ("table", snapshot, schema_name, table_name), lookup)


def read_columns(session: MetadataSession, table_id: int, snapshot: int) -> tuple[ColumnEntry, ...]:
    """Step 4: every column version live at the snapshot, all nesting levels."""
    key = ("columns", snapshot, table_id)
    return _per_snapshot(session, key, lambda: _read_columns(session, table_id, snapshot))


def _read_columns(
    session: MetadataSession, table_id: int, snapshot: int
) -> tuple[ColumnEntry, ...]:
    """Step 4: every column version live at the snapshot, all nesting levels."""
    rows = session.rows(
        "SELECT column_id, column_name, column_type, initial_default, parent_column, column_order, "
        f"begin_snapshot FROM ducklake_column WHERE table_id = ? AND {live()} ORDER BY column_order",
        [table_id, snapshot, snapshot],
    )
    return tuple(
        ColumnEntry(int(r[0]), r[1], r[2], r[3], _opt_int(r[4]), int(r[5]), int(r[6])) for r in rows
    )


FILE_COLUMNS = (
    "data_file_id", "path", "path_is_relative", "file_format", "record_count",
    "file_size_bytes", "footer_size", "row_id_start", "begin_snapshot", "partial_max",
    "mapping_id", "partition_id", "encrypted", "encryption_key", "delete_file_id",
    "delete_path", "delete_path_is_relative", "delete_format", "delete_count", "delete_size",
    "delete_footer_size", "delete_begin_snapshot", "delete_encrypted", "delete_encryption_key",
)  # fmt: skip

# Live data files with their live delete file, columnar for the planner: read with two plain
# queries and joined in Arrow (SQLite builds a temporary index for the SQL join every time).
_DATA_FILES_SQL = (
    "SELECT data_file_id, path, path_is_relative, file_format, record_count, file_size_bytes, "
    "footer_size, row_id_start, begin_snapshot, partial_max, mapping_id, partition_id, "
    "CASE WHEN encryption_key IS NULL THEN 0 ELSE 1 END AS encrypted, encryption_key "
    f"FROM ducklake_data_file WHERE table_id = ? AND {live()}"
)
_DELETE_FILES_SQL = (
    "SELECT data_file_id, delete_file_id, path, path_is_relative, format, delete_count, "
    "file_size_bytes, footer_size, begin_snapshot, "
    "CASE WHEN encryption_key IS NULL THEN 0 ELSE 1 END AS encrypted, encryption_key "
    f"FROM ducklake_delete_file WHERE table_id = ? AND {live()}"
)
_DELETE_COLUMNS = FILE_COLUMNS[14:]

_I64, _TEXT, _BOOL = pa.int64(), pa.string(), pa.bool_()
_DATA_FILES_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("path", _TEXT), ("path_is_relative", _BOOL),
        ("file_format", _TEXT), ("record_count", _I64), ("file_size_bytes", _I64),
        ("footer_size", _I64), ("row_id_start", _I64), ("begin_snapshot", _I64),
        ("partial_max", _I64), ("mapping_id", _I64), ("partition_id", _I64),
        ("encrypted", _I64), ("encryption_key", _TEXT),
    ]
)  # fmt: skip
_DELETE_FILES_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("delete_file_id", _I64), ("path", _TEXT),
        ("path_is_relative", _BOOL), ("format", _TEXT), ("delete_count", _I64),
        ("file_size_bytes", _I64), ("footer_size", _I64), ("begin_snapshot", _I64),
        ("encrypted", _I64), ("encryption_key", _TEXT),
    ]
)  # fmt: skip
_STATS_SCHEMA = pa.schema(
    [
        ("data_file_id", _I64), ("column_id", _I64), ("value_count", _I64),
        ("null_count", _I64), ("min_value", _TEXT), ("max_value", _TEXT),
        ("contains_nan", _BOOL),
    ]
)  # fmt: skip
_PARTITION_VALUES_SCHEMA = pa.schema(
    [("data_file_id", _I64), ("partition_key_index", _I64), ("partition_value", _TEXT)]
)


def read_file_table(
    session: MetadataSession, table_id: int, snapshot: int
) -> tuple[pa.Table, dict[int, tuple[DeleteFileEntry, ...]]]:
    """Step 5: one Arrow table with columns ``FILE_COLUMNS`` (sorted by data_file_id).

    Each row carries the data file's first live delete file (lowest ``delete_file_id``).
    A data file normally has at most one, but DuckDB's flush of inlined deletes into a
    file written by ``ducklake_rewrite_data_files`` adds a second one with a
    ``begin_snapshot`` in the past; any further live delete files are returned beside the
    table, by data_file_id, so that none is lost.
    """
    params = [table_id, snapshot, snapshot]
    data = session.arrow(_DATA_FILES_SQL, params, _DATA_FILES_SCHEMA)
    return joined_delete_files(data, read_delete_files(session, table_id, snapshot))


def read_delete_files(session: MetadataSession, table_id: int, snapshot: int) -> pa.Table:
    """The table's live delete files at ``snapshot`` (``_DELETE_FILES_SCHEMA``)."""
    params = [table_id, snapshot, snapshot]
    return session.arrow(_DELETE_FILES_SQL, params, _DELETE_FILES_SCHEMA)


def joined_delete_files(
    data: pa.Table, deletes: pa.Table
) -> tuple[pa.Table, dict[int, tuple[DeleteFileEntry, ...]]]:
    """Data-file rows (``_DATA_FILES_SCHEMA``) with their first live delete file, and the
    further ones by data_file_id (see :func:`read_file_table`)."""
    n = data.num_rows
    extra: dict[int, tuple[DeleteFileEntry, ...]] = {}
    if deletes.num_rows == 0:
        columns = [pa.nulls(n, pa.int64()) for _ in _DELETE_COLUMNS]
    else:
        if deletes.num_rows > 1:
            order = [("data_file_id", "ascending"), ("delete_file_id", "ascending")]
            deletes = deletes.sort_by(order)
        owners = deletes.column("data_file_id").to_numpy(zero_copy_only=False)
        unique_owners, first_rows = np.unique(owners, return_index=True)
        extra = _extra_delete_files(deletes)
        ids = data.column("data_file_id").cast(pa.int64())
        found = pc.index_in(ids, value_set=pa.array(unique_owners, pa.int64()))
        positions = pc.take(pa.array(first_rows, pa.int64()), found)  # null: no delete file
        columns = [deletes.column(i).take(positions) for i in range(1, deletes.num_columns)]
    table = pa.Table.from_arrays(list(data.columns) + columns, names=list(FILE_COLUMNS))
    return sorted_by_file_id(table), extra


def sorted_by_file_id(table: pa.Table) -> pa.Table:
    """``table`` in ``data_file_id`` order (checked first: usually it already is, and a
    sort of 100,000 rows costs ~6 ms)."""
    ids = table.column("data_file_id").to_numpy(zero_copy_only=False)
    if len(ids) < 2 or bool(np.all(ids[1:] >= ids[:-1])):
        return table
    return table.sort_by("data_file_id")


def _extra_delete_files(deletes: pa.Table) -> dict[int, tuple[DeleteFileEntry, ...]]:
    """Delete files after the first of their data file (``deletes`` sorted by data file)."""
    owners = deletes.column("data_file_id").to_numpy(zero_copy_only=False)
    if len(owners) < 2 or not (owners[1:] == owners[:-1]).any():
        return {}
    extra: dict[int, list[DeleteFileEntry]] = {}
    rows = deletes.to_pylist()
    for previous, row in itertools.pairwise(rows):
        if row["data_file_id"] == previous["data_file_id"]:
            extra.setdefault(int(row["data_file_id"]), []).append(delete_file_entry(row))
    return {k: tuple(v) for k, v in extra.items()}


def _opt_int(value: object) -> int | None:
    return None if value is None else int(value)


def read_table_files(
    session: MetadataSession,
    table: TableEntry,
    snapshot: int,
    *,
    stats_columns: Iterable[int] = (),
    with_partitions: bool = False,
    cut=None,
) -> TableFiles:
    """Steps 5-11 for one table at one snapshot.

    Files, statistics and partition values come back as Arrow tables so that planning and
    pruning a table of 10,000 files stays in vectorised code. The result is memoised per
    lake version (see ``per_version``): repeated queries of an unchanged lake re-read
    nothing but the version.

    Args:
        stats_columns: column ids whose file statistics the pruner wants (none: skip).
        with_partitions: read partition specs and file partition values.
        cut: a ``_file_cut`` condition (``StatsCut``, ``DeletedCut``): read only the files
            it keeps, unless the table's whole file list is at hand (memoised, or
            refreshable from the previous lake version), which is cheaper to prune.
    """
    key = ("files", table.table_id, snapshot, tuple(sorted(set(stats_columns))), with_partitions)
    if cut is not None and cut.usable(session) and not _whole_list_at_hand(session, key):
        cut_key = ("cut", cut, *key[1:])
        return per_version(session, cut_key, lambda: _read_cut_table_files(session, cut, *key[1:]))

    def read() -> TableFiles:
        from ._refresh import refreshed_table_files  # it builds on this module's queries

        refreshed = refreshed_table_files(session, key)
        if refreshed is not None:
            return refreshed
        return _read_table_files(session, table.table_id, snapshot, key[3], with_partitions)

    return per_version(session, key, read)


def _whole_list_at_hand(session: MetadataSession, key: tuple) -> bool:
    """Whether the table's whole file list is cheaper than a cut: memoised for this lake
    version, or refreshable from the previous one's memo."""
    from ._refresh import can_refresh

    _, tid, snapshot, _, _ = key
    if memoised(session, key) is not None:
        return True
    if memoised(session, ("file_table", tid, snapshot)) is not None:
        return True
    return can_refresh(session, key)


# Kept files up to this many are named by id in the queries of their deletes and statistics.
_IDS_AS_PARAMETERS = 500


def _read_cut_table_files(
    session: MetadataSession,
    cut,
    tid: int,
    snapshot: int,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
) -> TableFiles:
    """Steps 5-11 for the files ``cut`` keeps (``catalog._file_cut``)."""
    from ._file_cut import StatsCut

    condition, cut_params = cut.condition(session, tid, snapshot)
    params = [tid, snapshot, snapshot, *cut_params]
    data = session.arrow(f"{_DATA_FILES_SQL} AND {condition}", params, _DATA_FILES_SCHEMA)
    kept = (condition, cut_params)  # the other rows by the same condition, or by the ids:
    ids = data.column("data_file_id").to_pylist()
    if len(ids) <= _IDS_AS_PARAMETERS:  # the condition costs a scan of every statistic
        kept = (f"data_file_id IN ({', '.join('?' for _ in ids)})", ids) if ids else ("1 = 0", [])
    deletes = session.arrow(
        f"{_DELETE_FILES_SQL} AND {kept[0]}",
        [tid, snapshot, snapshot, *kept[1]],
        _DELETE_FILES_SCHEMA,
    )
    file_table, extra_delete_files = joined_delete_files(data, deletes)
    stats = _file_stats(session, tid, list(stats_columns), kept)
    partitioned = (
        with_partitions and file_table.column("partition_id").null_count < file_table.num_rows
    )
    values = _partition_values(session, tid, kept) if partitioned else None
    cut_away = 0
    if isinstance(cut, StatsCut):  # what the statistics left out counts as pruned
        cut_away = _summary(session, tid, snapshot, None).files - data.num_rows
    return table_files(
        session,
        tid,
        snapshot,
        file_table,
        extra_delete_files,
        stats_columns,
        with_partitions,
        stats=stats,
        partition_values=values,
        files_cut=cut_away,
    )


def file_summary_of(session: MetadataSession, table: TableEntry, snapshot: int):
    """``_file_cut.file_summary`` of the table, memoised per lake version: from the file
    list when it is at hand (memoised, or refreshable after a commit), else from one
    aggregate query (no file row read)."""
    return _summary(session, table.table_id, snapshot, table)


def _summary(session: MetadataSession, tid: int, snapshot: int, table: TableEntry | None):
    """The memoised summary; from the file list when ``table`` is given and its list is
    at hand, else from the aggregate query."""
    from ._file_cut import file_summary, summary_of_rows

    def compute():
        if table is not None and _whole_list_at_hand(session, ("files", tid, snapshot, (), False)):
            return summary_of_rows(read_table_files(session, table, snapshot).file_table)
        return file_summary(session, tid, snapshot)

    return per_version(session, ("file_summary", tid, snapshot), compute)


def _read_table_files(
    session: MetadataSession,
    tid: int,
    snapshot: int,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
) -> TableFiles:
    # Memoised on its own: the same snapshot is often read with other statistics columns
    # (the Rust scan's table() reads none, its scan() those of the query's filter).
    file_table, extra_delete_files = per_version(
        session, ("file_table", tid, snapshot), lambda: read_file_table(session, tid, snapshot)
    )
    return table_files(
        session, tid, snapshot, file_table, extra_delete_files, stats_columns, with_partitions
    )


def table_files(
    session: MetadataSession,
    tid: int,
    snapshot: int,
    file_table: pa.Table,
    extra_delete_files: dict,
    stats_columns: tuple[int, ...],
    with_partitions: bool,
    *,
    stats: pa.Table | None = None,
    partition_values: pa.Table | None = None,
    name_mappings: dict | None = None,
    files_cut: int = 0,
) -> TableFiles:
    """Steps 7-11 around a file table; ``stats``, ``partition_values`` and
    ``name_mappings`` when already known (an incremental refresh), read otherwise."""
    mapping_ids = {m for m in file_table.column("mapping_id").to_pylist() if m is not None}
    partitioned = (
        with_partitions and file_table.column("partition_id").null_count < file_table.num_rows
    )
    known = name_mappings or {}
    mappings = {m: known[m] for m in mapping_ids if m in known}
    mappings.update(_name_mappings(session, mapping_ids - set(mappings)))
    if stats is None:
        stats = _file_stats(session, tid, list(stats_columns))
    if partitioned and partition_values is None:
        partition_values = _partition_values(session, tid)
    return TableFiles(
        file_table=file_table,
        extra_delete_files=extra_delete_files,
        inlined_deletes=_inlined_deletes(session, tid, snapshot),
        inlined_rows=_inlined_rows(session, tid, snapshot),
        name_mappings=mappings,
        stats=stats,
        partition_columns=_partition_columns(session, tid) if partitioned else {},
        partition_values=partition_values if partitioned else None,
        files_cut=files_cut,
    )


def _inlined_deletes(
    session: MetadataSession, table_id: int, snapshot: int
) -> dict[int, tuple[int, ...]]:
    name = f"ducklake_inlined_delete_{int(table_id)}"
    if not session.has_table(name):
        return {}
    positions: dict[int, list[int]] = {}
    for file_id, pos in session.rows(
        f"SELECT file_id, row_id FROM {name} WHERE begin_snapshot <= ?", [snapshot]
    ):
        positions.setdefault(int(file_id), []).append(int(pos))
    return {k: tuple(sorted(v)) for k, v in positions.items()}


def _inlined_tables(session: MetadataSession, table_id: int) -> list[InlinedTableEntry]:
    """Inlined-data tables of a table with the snapshot their column layout began.

    A layout without a ``ducklake_schema_versions`` row is the table's first one (tables
    never altered), as in the extension.
    """
    rows = session.rows(
        "SELECT i.table_name, i.schema_version, v.begin_snapshot "
        "FROM ducklake_inlined_data_tables i LEFT JOIN ducklake_schema_versions v "
        "ON v.table_id = i.table_id AND v.schema_version = i.schema_version "
        "WHERE i.table_id = ? ORDER BY i.schema_version",
        [table_id],
    )
    if any(r[2] is None for r in rows):
        first = session.rows(
            "SELECT min(begin_snapshot) FROM ducklake_table WHERE table_id = ?", [table_id]
        )[0][0]
        rows = [(r[0], r[1], first if r[2] is None else r[2]) for r in rows]
    return [InlinedTableEntry(r[0], int(r[1]), int(r[2])) for r in rows]


def _inlined_rows(session: MetadataSession, table_id: int, snapshot: int):
    result = []
    tables = _per_snapshot(
        session, ("inlined_tables", snapshot, table_id), lambda: _inlined_tables(session, table_id)
    )
    for entry in tables:
        if entry.layout_snapshot > snapshot or not _INLINED_DATA.match(entry.table_name):
            continue
        if not session.has_table(entry.table_name):
            continue
        layout = read_columns(session, table_id, entry.layout_snapshot)
        system = _inlined_system_columns(session, entry.table_name)
        begin, end = system.begin_snapshot, system.end_snapshot
        rows = session.arrow(
            f"SELECT {_inlined_select_list(layout, system)} FROM {entry.table_name} "
            f"WHERE {begin} <= ? AND ({end} IS NULL OR ? < {end})",
            [snapshot, snapshot],
        )
        if rows.num_rows:
            # the system columns under one spelling, whatever the table's format
            names = list(INLINED_SYSTEM_COLUMNS.names) + rows.column_names[3:]
            result.append((rows.rename_columns(names), layout))
    return tuple(result)


def _inlined_system_columns(session: MetadataSession, table_name: str):
    """The system columns of one inlined-data table: renamed by the 1.1 migration table
    by table, so read from the table itself (a half-migrated catalog reads as it is)."""
    names = list(columns_of(session, table_name))
    system = inlined_system_columns(names)
    if system is None:
        raise CatalogError(
            f"{getattr(session, 'description', 'the catalog')}: inlined-data table "
            f"{table_name} starts with columns {names[:3]}, neither DuckLake 1.0's "
            "(row_id, begin_snapshot, end_snapshot) nor 1.1's (_ducklake_row_id, "
            "_ducklake_begin_snapshot, _ducklake_end_snapshot); the catalog is damaged or "
            "of a format this reader does not know"
        )
    return system


def _inlined_select_list(layout: tuple[ColumnEntry, ...], system) -> str:
    """``*``, unless a column is a VARIANT: DuckDB cannot export VARIANT to Arrow, so such
    columns are read as the JSON text of ``CAST(v AS JSON)`` (what the reader exposes).

    Only DuckDB catalogs inline VARIANT values (SQLite and PostgreSQL never do), so the
    DuckDB spelling of the cast is the one needed. Column names come from the catalog
    itself and are quoted as identifiers.
    """
    top = [c for c in layout if c.parent_column is None]
    if not any(c.column_type.lower() == "variant" for c in top):
        return "*"
    parts = list(system.names)
    for column in top:
        name = '"' + column.column_name.replace('"', '""') + '"'
        if column.column_type.lower() == "variant":
            parts.append(f"CAST(CAST({name} AS JSON) AS VARCHAR) AS {name}")
        else:
            parts.append(name)
    return ", ".join(parts)


def _name_mappings(
    session: MetadataSession, mapping_ids: set
) -> dict[int, tuple[NameMappingNode, ...]]:
    mappings = {}
    for mapping_id in sorted(mapping_ids):
        rows = session.rows(
            "SELECT column_id, source_name, target_field_id, parent_column, is_partition "
            "FROM ducklake_name_mapping WHERE mapping_id = ? ORDER BY column_id",
            [mapping_id],
        )
        mappings[mapping_id] = tuple(
            NameMappingNode(int(r[0]), r[1], int(r[2]), _opt_int(r[3]), _bool(r[4])) for r in rows
        )
    return mappings


def _file_stats(session: MetadataSession, table_id: int, column_ids: list[int], cut=None):
    """Step 10 as an Arrow table (data_file_id, column_id, counts, min/max text,
    contains_nan); ``cut``: ``(condition, params)`` on the files to read them of."""
    if not column_ids:
        return None
    marks = ", ".join("?" for _ in column_ids)
    sql = (
        "SELECT data_file_id, column_id, value_count, null_count, min_value, max_value, "
        "contains_nan FROM ducklake_file_column_stats "
        f"WHERE table_id = ? AND column_id IN ({marks})"
    )
    return session.arrow(*_restricted(sql, [table_id, *column_ids], cut), _STATS_SCHEMA)


def _partition_columns(session: MetadataSession, table_id: int):
    rows = session.rows(
        "SELECT partition_id, partition_key_index, column_id, transform "
        "FROM ducklake_partition_column WHERE table_id = ? ORDER BY partition_id, partition_key_index",
        [table_id],
    )
    specs: dict[int, list[PartitionColumnEntry]] = {}
    for r in rows:
        specs.setdefault(int(r[0]), []).append(
            PartitionColumnEntry(int(r[0]), int(r[1]), int(r[2]), r[3])
        )
    return {k: tuple(v) for k, v in specs.items()}


def _partition_values(session: MetadataSession, table_id: int, cut=None):
    """Partition values of every file of the table (or of those ``cut`` keeps, as in
    :func:`_file_stats`), as an Arrow table."""
    sql = (
        "SELECT data_file_id, partition_key_index, partition_value "
        "FROM ducklake_file_partition_value WHERE table_id = ?"
    )
    return session.arrow(*_restricted(sql, [table_id], cut), _PARTITION_VALUES_SCHEMA)


def _restricted(sql: str, params: list, cut) -> tuple[str, list]:
    """``sql`` and ``params`` with the ``(condition, params)`` of ``cut`` added, if any."""
    if cut is None:
        return sql, params
    return f"{sql} AND {cut[0]}", [*params, *cut[1]]
