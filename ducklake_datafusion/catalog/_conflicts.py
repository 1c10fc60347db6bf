"""Whether a transaction may still commit: its requirements against what committed since.

One table says which of another commit's changes break which requirement, read from the
``changes_made`` tokens of every snapshot after the transaction's base (DuckDB's writer
checks its conflicts the same way, ``CheckForConflicts`` in duckdb/ducklake); the file
level, where two deletes on one table meet, is then decided by the files' own rows:

* :class:`TableUnchanged`: the table is found under its name with its id, and no commit
  dropped or altered it (columns, partitioning, renames).
* :class:`RowsUnchanged`: additionally no commit inserted, deleted, flushed or compacted
  its rows (an overwrite would lose them).
* :class:`NoRowsInserted`: no commit inserted rows into it (a MERGE's inserts and its
  actions on unmatched rows were decided without them).
* :class:`FilesUnchanged`: each data file is still live with exactly the delete files the
  plan read (another delete, update or compaction of that file replaced or ended them).
  Appends to the table never break it: new rows are not among the rows a delete chose.
* :class:`NotCommittedBefore`: the streaming batch was not committed before (the query's
  record in ``ducklake_metadata``, else the marker in ``commit_extra_info``).

A broken requirement is a :class:`CommitConflictError` naming the table, the file where
there is one, the base snapshot and the snapshot that changed it.
"""

from __future__ import annotations

from ..errors import CommitConflictError
from ._change_tokens import parse_changes_made
from ._names import find_table
from ._stream_batches import last_stream_batch
from ._transaction import (
    FilesUnchanged,
    NoRowsInserted,
    NotCommittedBefore,
    RowsUnchanged,
    TableRef,
    TableUnchanged,
    Transaction,
)

__all__ = ["check_requirements"]

# requirement kind -> {token kind another commit wrote: what it did to the table}
CONFLICTS: dict[type, dict[str, str]] = {
    TableUnchanged: {
        "dropped_table": "was dropped",
        "altered_table": "had its columns or partitioning altered",
    },
    RowsUnchanged: {
        "dropped_table": "was dropped",
        "altered_table": "had its columns or partitioning altered",
        "inserted_into_table": "had rows inserted",
        "inlined_insert": "had rows inserted",
        "deleted_from_table": "had rows deleted",
        "inlined_delete": "had rows deleted",
        "inline_flush": "had its inlined rows flushed to files",
        "flushed_inlined": "had its inlined rows flushed to files",
        "merge_adjacent": "had its files compacted",
        "rewrite_delete": "had its files compacted",
        "compacted_table": "had its files compacted",
    },
    NoRowsInserted: {
        "dropped_table": "was dropped",
        "altered_table": "had its columns or partitioning altered",
        "inserted_into_table": "had rows inserted (which the statement's matches did not see)",
        "inlined_insert": "had rows inserted (which the statement's matches did not see)",
    },
    FilesUnchanged: {
        "dropped_table": "was dropped",
        "altered_table": "had its columns or partitioning altered",
    },
}


def check_requirements(session, transaction: Transaction, latest: int, description: str) -> dict:
    """Check every requirement at ``latest``; the id each named table has there.

    Raises:
        CommitConflictError: a requirement no longer holds.
    """
    base = transaction.base_snapshot
    table_ids: dict[TableRef, int] = {}
    since = _changes_since(session, base) if latest > base else []
    for requirement in transaction.requirements:
        if isinstance(requirement, NotCommittedBefore):
            table_id = None
            if requirement.table is not None:
                table = requirement.table
                table_ids[table] = table_ids.get(table) or _current_id(
                    session, table, base, latest, description
                )
                table_id = table_ids[table]
            _check_not_committed(session, requirement, table_id, description)
            continue
        table = requirement.table
        if table not in table_ids:
            table_ids[table] = _current_id(session, table, base, latest, description)
        for snapshot, tokens in since:
            for token in tokens:
                what = CONFLICTS[type(requirement)].get(token.kind)
                if what and token.table_id() == table_ids[table]:
                    if isinstance(requirement, RowsUnchanged):
                        what += " (an overwrite would lose them)"
                    raise _conflict(description, table, what, base, snapshot)
        if isinstance(requirement, FilesUnchanged) and latest > base:
            _check_files(session, requirement, table_ids[table], base, description)
    return table_ids


def _changes_since(session, base: int) -> list[tuple[int, tuple]]:
    rows = session.rows(
        "SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes WHERE snapshot_id > ? "
        "ORDER BY snapshot_id",
        [base],
    )
    return [(int(snapshot), parse_changes_made(text)) for snapshot, text in rows]


def _current_id(session, table: TableRef, base: int, latest: int, description: str) -> int:
    """The table's id at ``latest``: the plan's own when nothing committed since its base
    (a catalog lookup less on the commonest commit), else looked up by name."""
    if latest == base and table.table_id is not None:
        return table.table_id
    entry = find_table(session, latest, table.schema_name, table.table_name)
    if entry is None:
        raise _conflict(description, table, "was dropped or renamed", base, None, latest)
    if table.table_id is not None and entry.table_id != table.table_id:
        raise _conflict(
            description, table, "was replaced by another table of the same name", base, None, latest
        )
    return entry.table_id


def _check_files(session, requirement: FilesUnchanged, table_id: int, base, description):
    """Each data file still live, with the same delete files, or a conflict naming it."""
    wanted = dict(requirement.files)
    if not wanted:
        return
    ids = list(wanted)
    live: set[int] = set()
    deletes: dict[int, set[int]] = {file_id: set() for file_id in ids}
    inlined: set[int] = set()  # files with positions deleted through the catalog since
    inlined_table = f"ducklake_inlined_delete_{int(table_id)}"
    has_inlined = session.has_table(inlined_table)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for (file_id,) in session.rows(
            f"SELECT data_file_id FROM ducklake_data_file WHERE table_id = ? AND "
            f"end_snapshot IS NULL AND data_file_id IN ({marks})",
            [table_id, *chunk],
        ):
            live.add(int(file_id))
        for file_id, delete_id in session.rows(
            f"SELECT data_file_id, delete_file_id FROM ducklake_delete_file WHERE table_id = ? "
            f"AND end_snapshot IS NULL AND data_file_id IN ({marks})",
            [table_id, *chunk],
        ):
            deletes[int(file_id)].add(int(delete_id))
        if has_inlined:
            for (file_id,) in session.rows(
                f'SELECT DISTINCT file_id FROM "{inlined_table}" WHERE begin_snapshot > ? '
                f"AND file_id IN ({marks})",
                [base, *chunk],
            ):
                inlined.add(int(file_id))
    for file_id in ids:
        if file_id not in live:
            what = f"had its data file {file_id} ended (deleted or compacted)"
        elif deletes[file_id] != set(wanted[file_id]) or file_id in inlined:
            what = f"had rows of its data file {file_id} deleted"
        else:
            continue
        raise _conflict(description, requirement.table, what, base, _last_change(session, base))


def _last_change(session, base: int) -> int | None:
    rows = session.rows(
        "SELECT max(snapshot_id) FROM ducklake_snapshot_changes WHERE snapshot_id > ?", [base]
    )
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def _check_not_committed(
    session, requirement: NotCommittedBefore, table_id: int | None, description: str
) -> None:
    if table_id is not None and requirement.query_id is not None:
        last = last_stream_batch(session, table_id, requirement.query_id)
        if last is not None:  # the query's own record: one read
            if requirement.batch_id is not None and requirement.batch_id <= last[0]:
                raise AlreadyCommitted(last[1])
            return
    # no record (the query's first batch, or batches of an older release): the markers
    rows = session.rows(
        "SELECT snapshot_id, commit_extra_info FROM ducklake_snapshot_changes "
        "WHERE commit_extra_info LIKE ?",
        [_like_prefix(requirement.marker)],
    )
    for snapshot, extra in rows:
        if extra is not None and str(extra).startswith(requirement.marker):
            raise AlreadyCommitted(int(snapshot))


def _like_prefix(marker: str) -> str:
    """A LIKE pattern that finds at least every text starting with ``marker`` (its
    wildcards and backslashes replaced by ``_``; the prefix is compared exactly after)."""
    return "".join("_" if c in "%_\\" else c for c in marker) + "%"


class AlreadyCommitted(Exception):
    """The streaming batch was committed before, as ``snapshot`` (internal)."""

    def __init__(self, snapshot: int) -> None:
        super().__init__(snapshot)
        self.snapshot = snapshot


def _conflict(description, table: TableRef, what, base, snapshot, latest=None):
    by = f" by snapshot {snapshot}" if snapshot is not None else ""
    now = f" (the lake is now at snapshot {latest})" if latest is not None else ""
    return CommitConflictError(
        f"{description}: table {table.name} {what}{by} after snapshot {base}, where this "
        f"write began{now}; nothing was committed, write again against the table as it is now"
    )
