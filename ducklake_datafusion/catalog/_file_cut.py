"""The catalog's first cut: a query's integer bounds in the file query's own SQL.

The first query of a table (nothing memoised, or a new lake version the memo cannot be
refreshed to) would otherwise read every live file row and the statistics of every file
before the planner prunes them: on a table of 100,000 files that is the whole cost of
the query. When the query's filter bounds an integer column, the catalog database can
leave out the files whose statistics exclude those bounds, and their statistics with
them (:class:`StatsCut`). ``count(*)`` of a whole table needs the row counts of all
files but the rows of only the files with deletes (:class:`DeletedCut`, with
:func:`file_summary`).

Exactness: a file is left out only when a statistics row of the column says that every
value of the file lies outside the bounds, compared as integers (text the guard does not
read as an integer of up to 18 characters compares as NULL: the file is kept). The
planner prunes the files that remain with the same statistics, so a cut plan keeps
exactly the files a full plan keeps (``tests/catalog/test_file_cut.py`` compares both and DuckDB
on every catalog). Only integer types up to 64 bits are cut: their statistics are plain
decimal text on every catalog, unlike floats (NaN), strings (collations) and times
(spellings). The cut's result is memoised under its own key, never as the table's file
list, so the incremental refresh and later unfiltered queries never see a partial list.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ._backend import MetadataSession
from ._sql import as_bool, live

__all__ = [
    "CUT_TYPES",
    "BeganCut",
    "ColumnBound",
    "DeletedCut",
    "FileSummary",
    "StatsCut",
    "bounded",
    "file_summary",
    "summary_of_rows",
]

# Types whose statistics are integers written as decimal text (uint64 could exceed BIGINT).
CUT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"})


@dataclass(frozen=True)
class ColumnBound:
    """What one conjunct of a query's filter says of an integer column: every matching
    value lies in ``[low, high]`` (None: unbounded), and, when ``points`` are given, is
    one of them (``IN``)."""

    column_id: int
    low: int | None
    high: int | None
    points: tuple[int, ...] = ()


@dataclass(frozen=True)
class StatsCut:
    """Leave out the files whose statistics put a column outside one of the bounds (the
    bounds are conjuncts: a file one of them excludes cannot match)."""

    bounds: tuple[ColumnBound, ...]

    @staticmethod
    def usable(session: MetadataSession) -> bool:
        """Whether the catalog database can read statistics text as integers safely."""
        return session.INTEGER_OF_TEXT is not None

    def condition(self, session: MetadataSession, table_id: int, snapshot: int):
        """``(sql, params)``: a condition on ``data_file_id`` keeping the files that may
        match (bound parameters only)."""
        integer = session.INTEGER_OF_TEXT
        parts, params = [], [table_id]
        below, above = integer.format("max_value"), integer.format("min_value")
        for bound in self.bounds:
            if bound.points:  # outside the file's range at every point
                each = f"({below} < ? OR {above} > ?)"
                parts.append(f"(column_id = ? AND {' AND '.join([each] * len(bound.points))})")
                params.append(bound.column_id)
                for point in bound.points:
                    params += [point, point]
                continue
            sides, values = [], []
            if bound.low is not None:
                sides.append(f"{below} < ?")
                values.append(bound.low)
            if bound.high is not None:
                sides.append(f"{above} > ?")
                values.append(bound.high)
            if sides:
                parts.append(f"(column_id = ? AND ({' OR '.join(sides)}))")
                params += [bound.column_id, *values]
        sql = (
            "data_file_id NOT IN (SELECT data_file_id FROM ducklake_file_column_stats "
            f"WHERE table_id = ? AND ({' OR '.join(parts)}))"
        )
        return sql, params


@dataclass(frozen=True)
class DeletedCut:
    """Keep only the files with live delete files or inlined deletes."""

    @staticmethod
    def usable(session: MetadataSession) -> bool:
        return True

    def condition(self, session: MetadataSession, table_id: int, snapshot: int):
        sql = (
            "data_file_id IN (SELECT data_file_id FROM ducklake_delete_file WHERE table_id = ? "
            f"AND {live()})"
        )
        params = [table_id, snapshot, snapshot]
        inlined = f"ducklake_inlined_delete_{int(table_id)}"
        if session.has_table(inlined):
            sql = f"({sql} OR data_file_id IN (SELECT file_id FROM {inlined} WHERE begin_snapshot <= ?))"
            params.append(snapshot)
        return sql, params


@dataclass(frozen=True)
class BeganCut:
    """Keep only the files added after a snapshot (a stream's new files)."""

    after: int

    @staticmethod
    def usable(session: MetadataSession) -> bool:
        return True

    def condition(self, session: MetadataSession, table_id: int, snapshot: int):
        # by data file id: the same condition also selects the files' delete files and
        # statistics, whose own begin_snapshot is another column
        sql = (
            "data_file_id IN (SELECT data_file_id FROM ducklake_data_file "
            "WHERE table_id = ? AND begin_snapshot > ?)"
        )
        return sql, [table_id, int(self.after)]


def bounded(cut: StatsCut | None) -> StatsCut | None:
    """``cut`` if it bounds anything, else None."""
    if cut is None or not any(b.low is not None or b.high is not None for b in cut.bounds):
        return None
    return cut


@dataclass(frozen=True)
class FileSummary:
    """Aggregates of a table's live data files, from one query."""

    files: int
    records: int
    encrypted: int
    mapped: int
    all_relative: bool  # every path relative to the table's directory
    partial_max: int | None  # the latest snapshot a merged file holds rows of

    def holds_later_rows(self, snapshot: int) -> bool:
        """Whether some file holds rows of snapshots after ``snapshot``."""
        return self.partial_max is not None and self.partial_max > snapshot


def file_summary(session: MetadataSession, table_id: int, snapshot: int) -> FileSummary:
    """The :class:`FileSummary` of the table's live files at ``snapshot``.

    The flag ``path_is_relative`` is read as text in Python: SQLite catalogs may spell
    booleans as text, which SQL would not read as true, and PostgreSQL has no ``max`` of
    booleans. (One ungrouped query: grouping by the flag makes SQLite sort every file row.)
    """
    row = session.rows(
        "SELECT count(*), sum(record_count), count(encryption_key), count(mapping_id), "
        "max(partial_max), count(DISTINCT path_is_relative), "
        "max(CAST(path_is_relative AS VARCHAR)) "
        f"FROM ducklake_data_file WHERE table_id = ? AND {live()}",
        [table_id, snapshot, snapshot],
    )[0]
    files, records, encrypted, mapped, partial, flags, flag = row
    return FileSummary(
        files=int(files or 0),
        records=int(records or 0),
        encrypted=int(encrypted or 0),
        mapped=int(mapped or 0),
        all_relative=int(files or 0) == 0 or (int(flags or 0) == 1 and as_bool(flag)),
        partial_max=None if partial is None else int(partial),
    )


def summary_of_rows(rows: pa.Table) -> FileSummary:
    """The :class:`FileSummary` of a memoised file table (``_sql.FILE_COLUMNS``)."""
    if rows.num_rows == 0:
        return FileSummary(0, 0, 0, 0, True, None)
    relative = rows.column("path_is_relative")
    partial = pc.max(rows.column("partial_max")).as_py()
    return FileSummary(
        files=rows.num_rows,
        records=int(pc.sum(rows.column("record_count")).as_py() or 0),
        encrypted=rows.num_rows - rows.column("encryption_key").null_count,
        mapped=rows.num_rows - rows.column("mapping_id").null_count,
        all_relative=relative.null_count == 0 and bool(pc.all(relative).as_py()),
        partial_max=None if partial is None else int(partial),
    )
