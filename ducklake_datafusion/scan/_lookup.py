"""Find a table by name at a snapshot, the way DuckDB does, or say clearly that it is not there.

Used by the catalog provider, time travel, the change feed and the file listing, so the
name rules (exact first; case-insensitive when unambiguous, because DataFusion lower-cases
unquoted identifiers) and the error message exist once.
"""

from __future__ import annotations

from ..catalog import MetadataSession, TableEntry, metadata
from ..errors import TableNotFoundError, UnsupportedFeatureError

__all__ = ["find_table", "require_table"]


def find_table(
    session: MetadataSession, snapshot: int, schema: str, table: str
) -> TableEntry | None:
    """The table ``schema.table`` live at ``snapshot``, or None."""
    entry = metadata.find_table(session, snapshot, schema, table)
    if entry is not None:
        return entry
    candidates = [
        t
        for s in metadata.list_schemas(session, snapshot)
        if s.schema_name.lower() == schema.lower()
        for t in metadata.list_tables(session, snapshot, s.schema_name)
        if t.table_name.lower() == table.lower()
    ]
    return candidates[0] if len(candidates) == 1 else None


def require_table(
    session: MetadataSession,
    description: str,
    snapshot: int,
    schema: str,
    table: str,
    *,
    context: str = "",
) -> TableEntry:
    """Like :func:`find_table`, but raise a TableNotFoundError listing the tables then.

    Args:
        description: the catalog, for the message.
        context: words placed after the snapshot id (``" (2024-05-01..., asked for as @v3)"``).
    """
    entry = find_table(session, snapshot, schema, table)
    if entry is None:
        nested = metadata.nested_schema_names(session, snapshot)
        if schema in nested or schema.lower() in {n.lower() for n in nested}:
            raise UnsupportedFeatureError(
                f"{description}: schema {schema} is a nested schema (DuckLake 1.1), which this "
                f"reader does not read yet (snapshot {snapshot}); only top-level schemas are "
                "read. Query it in DuckDB"
            )
        names = [t.table_name for t in metadata.list_tables(session, snapshot, schema)]
        listing = ", ".join(names[:20]) or "(none in that schema)"
        raise TableNotFoundError(
            f"{description} has no table {schema}.{table} at snapshot {snapshot}{context}; "
            f"tables at that snapshot: {listing}"
        )
    return entry
