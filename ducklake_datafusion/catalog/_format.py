"""The DuckLake format versions this reader reads, and what differs between them, as data.

A catalog records its format in ``ducklake_metadata`` (``key = 'version'``). DuckDB 1.5
writes ``1.0``; DuckDB 2.0 creates ``1.1`` catalogs and migrates older ones to it with
``AUTOMATIC_MIGRATION`` (its development builds wrote ``1.1-dev1``). The reference matches
the version string exactly against the versions it knows, and so does this reader.

What a 1.1 catalog changes for a reader, and how each is handled (the README lists it too):

* inlined-data tables name their system columns ``_ducklake_row_id``,
  ``_ducklake_begin_snapshot`` and ``_ducklake_end_snapshot`` (1.0: ``row_id``,
  ``begin_snapshot``, ``end_snapshot``), so a user column may now be named ``row_id``. The
  migration renames table by table, so each table's own first column decides
  (:func:`inlined_system_columns`), never the version string: a half-migrated catalog
  reads as it is;
* ``row_group_count`` on data and delete files, ``min_is_exact``/``max_is_exact`` on column
  statistics: facts a writer records; columns are always selected by name, so they are
  simply not read (bounds stay bounds);
* ``ducklake_view_column_tag``: comments of view columns (read when the table exists);
* ``epoch_year``/``epoch_month``/``epoch_day``/``epoch_hour`` partition transforms
  (``scan/_pruning``), deletion-vector files holding one blob per snapshot
  (``read/_deletes``): read by the scan side, which needs no version;
* ``ducklake_schema.parent_schema_id`` (nested schemas): only top-level schemas are read
  by name (:data:`TOP_LEVEL_SCHEMA`); a nested schema is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "INLINED_SYSTEM_COLUMNS",
    "LEGACY_INLINED_SYSTEM_COLUMNS",
    "NEWEST_VERSION",
    "READ_VERSIONS",
    "InlinedSystemColumns",
    "inlined_system_columns",
]

# Every format version read, oldest first; the last is the newest.
READ_VERSIONS = ("1.0", "1.1-dev1", "1.1")
NEWEST_VERSION = READ_VERSIONS[-1]


@dataclass(frozen=True)
class InlinedSystemColumns:
    """The names of an inlined-data table's three system columns (its first three)."""

    row_id: str
    begin_snapshot: str
    end_snapshot: str

    @property
    def names(self) -> tuple[str, str, str]:
        return (self.row_id, self.begin_snapshot, self.end_snapshot)


# 1.1 (and 1.1-dev1): the names every other part of this package uses for inlined rows.
INLINED_SYSTEM_COLUMNS = InlinedSystemColumns(
    "_ducklake_row_id", "_ducklake_begin_snapshot", "_ducklake_end_snapshot"
)
# 1.0, and tables a 1.1 migration has not renamed yet.
LEGACY_INLINED_SYSTEM_COLUMNS = InlinedSystemColumns("row_id", "begin_snapshot", "end_snapshot")
_KNOWN = (INLINED_SYSTEM_COLUMNS, LEGACY_INLINED_SYSTEM_COLUMNS)


def inlined_system_columns(column_names: list[str]) -> InlinedSystemColumns | None:
    """The system columns of an inlined-data table with these columns, in order, or
    ``None`` when its first three columns are neither form (not a table this reader
    knows how to read)."""
    first = tuple(name.lower() for name in column_names[:3])
    for known in _KNOWN:
        if first == known.names:
            return known
    return None
