"""The last batch each streaming query committed into a table, kept in ``ducklake_metadata``.

A streaming sink commits each micro-batch at most once: a batch replayed after a failure
must find that it committed already. The commit records ``(query, batch, snapshot)`` as a
row of the table's scope in ``ducklake_metadata`` (``scope = 'table'``: DuckDB accepts and
lists unknown keys there, and refuses unknown scopes), so the check is one indexed read
instead of a scan of every streaming snapshot's ``commit_extra_info``, which grew with the
stream's life. Both run inside the commit's own transaction.
"""

from __future__ import annotations

from ._backend import MetadataSession
from ._commit_rows import insert_row

__all__ = ["last_stream_batch", "record_stream_batch"]

_PREFIX = "ducklake_datafusion_stream:"


def last_stream_batch(
    session: MetadataSession, table_id: int, query_id: str
) -> tuple[int, int] | None:
    """``(batch id, snapshot id)`` of the last batch ``query_id`` committed into the table,
    or ``None`` if it recorded none."""
    rows = session.rows(
        "SELECT value FROM ducklake_metadata WHERE key = ? AND scope = 'table' AND scope_id = ?",
        [_PREFIX + query_id, table_id],
    )
    if not rows:
        return None
    batch, _, snapshot = str(rows[0][0]).partition(":")
    return int(batch), int(snapshot)


def record_stream_batch(
    session, table_id: int, query_id: str, batch_id: int, snapshot_id: int
) -> None:
    """Record that ``snapshot_id`` commits batch ``batch_id`` of ``query_id``."""
    key = _PREFIX + query_id
    session.execute(
        "DELETE FROM ducklake_metadata WHERE key = ? AND scope = 'table' AND scope_id = ?",
        [key, table_id],
    )
    insert_row(
        session,
        "ducklake_metadata",
        {"key": key, "value": f"{batch_id}:{snapshot_id}", "scope": "table", "scope_id": table_id},
    )
