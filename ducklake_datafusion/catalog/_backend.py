"""The metadata-backend Protocol and the parser of catalog connection strings.

A backend knows how to open a read-only, consistent view of one catalog database and run
parameterised SQL in it. The SQL itself is dialect neutral and lives in the query modules
(see ``metadata``); backends only translate placeholders, decode driver-specific values,
and turn driver errors into :mod:`ducklake_datafusion.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import pyarrow as pa

from ..errors import InvalidOptionError

__all__ = ["MetadataBackend", "MetadataSession", "open_backend"]


@runtime_checkable
class MetadataSession(Protocol):
    """One read transaction on the catalog database. SQL uses ``?`` placeholders.

    Attributes:
        description: names the catalog for error messages (its backend's ``description``).
        cache: the backend's ``cache``, shared by all of its sessions: validated settings
            and the metadata memos (``_session.per_version``, ``_session.per_snapshot``).
        INTEGER_OF_TEXT: an SQL expression, ``{0}`` standing for a text column, that gives
            the integer the text spells and NULL for any other text; ``None`` when the
            database cannot tell them apart safely (then no file is cut by statistics in
            the catalog query, ``_file_cut.StatsCut``).
    """

    description: str
    cache: dict
    INTEGER_OF_TEXT: str | None

    def lake_version(self) -> tuple[int, int, str | None]:
        """``(latest snapshot id, number of snapshots, newest snapshot time)`` of the
        catalog as this session sees it (read once per session): the key of every memo
        that holds per lake version."""

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        """Run a query and return its rows as tuples of Python values."""

    def arrow(
        self, sql: str, params: Sequence[object] = (), schema: pa.Schema | None = None
    ) -> pa.Table:
        """Run a query and return an Arrow table.

        With ``schema`` (whose names are the query's column names) the result has exactly
        that schema, and the backend may use a bulk path that never makes Python objects.
        """

    def has_table(self, name: str) -> bool:
        """Whether a metadata table of that name exists (inlined tables come and go)."""

    def column_names(self, table: str) -> tuple[str, ...]:
        """A metadata table's column names in order (which optional columns it has)."""


@runtime_checkable
class MetadataBackend(Protocol):
    """A catalog database: DuckDB file, SQLite file, PostgreSQL or MySQL/MariaDB database.

    Attributes:
        description: names the catalog for error messages; never contains credentials.
        inlined_values_are_text: True when the backend stores inlined values of most types
            as text (SQLite, PostgreSQL, MySQL) so they must be parsed as DuckDB literals.
        cache: shared by the backend's sessions: validated settings and the metadata memos
            (per snapshot, per lake version); clearing it only costs re-reading.
    """

    description: str
    inlined_values_are_text: bool
    cache: dict

    def session(self) -> AbstractContextManager[MetadataSession]:
        """Open one consistent read-only view; closing it ends the transaction."""

    def write_session(self) -> AbstractContextManager[MetadataSession]:
        """Open one read-write transaction, for a commit only (``_writers``): it commits
        when the block ends normally and rolls back when it raises."""

    def close(self) -> None:
        """Release every connection (on every thread) and private copy now; later
        sessions raise ``CatalogClosedError``. Freeing the backend does the same."""


def open_backend(metadata: str, metadata_schema: str | None = None) -> MetadataBackend:
    """Parse a catalog string as DuckDB's ``ATTACH 'ducklake:...'`` accepts it.

    Accepted forms (an optional leading ``ducklake:`` is stripped): a plain path or
    ``duckdb:path`` for a DuckDB file; ``sqlite:path`` for SQLite; ``postgres:<libpq
    keywords>`` / ``postgresql://...`` for PostgreSQL.

    Args:
        metadata: the catalog string.
        metadata_schema: the schema holding the ``ducklake_*`` tables, as DuckDB's
            ``METADATA_SCHEMA`` attach option (default: ``main`` in DuckDB files, the
            search path in PostgreSQL; SQLite has no schemas, as in DuckDB).
    """
    if metadata_schema is not None and (
        not isinstance(metadata_schema, str) or not metadata_schema or "\0" in metadata_schema
    ):
        raise InvalidOptionError(
            f"metadata_schema must be a schema name (DuckDB's METADATA_SCHEMA), got {metadata_schema!r}"
        )
    if not isinstance(metadata, str) or not metadata.strip():
        raise InvalidOptionError(
            "metadata must be a catalog connection string such as 'lake.ducklake', "
            f"'sqlite:lake.sqlite', 'postgres:dbname=lake host=...' or 'mysql:host=... database=...'; got {metadata!r}"
        )
    text = metadata.strip()
    text = text.removeprefix("ducklake:")
    lowered = text.lower()
    if lowered.startswith("sqlite:"):
        from ._sqlite import SQLiteBackend

        if metadata_schema not in (None, "main"):
            raise InvalidOptionError(
                f"metadata_schema={metadata_schema!r}: SQLite catalogs have no schemas (DuckDB "
                "refuses METADATA_SCHEMA for them too); leave it out"
            )
        return SQLiteBackend(text[len("sqlite:") :])
    if lowered.startswith(("postgres:", "postgresql:")):
        from ._postgres import PostgresBackend

        dsn = (
            text if lowered.startswith(("postgres://", "postgresql://")) else text.split(":", 1)[1]
        )
        return PostgresBackend(dsn, metadata_schema)
    if lowered.startswith(("mysql:", "mariadb:")):
        from ._mysql import MySQLBackend

        dsn = text if lowered.startswith(("mysql://", "mariadb://")) else text.split(":", 1)[1]
        return MySQLBackend(dsn, metadata_schema)
    if lowered.startswith("duckdb:"):
        text = text[len("duckdb:") :]
    if "://" in text:
        raise InvalidOptionError(
            f"catalog {metadata!r}: remote DuckDB catalog files are not supported; use a local "
            "DuckDB file, 'sqlite:path', 'postgres:...' or 'mysql:...'"
        )
    from ._duckdb import DuckDBBackend

    return DuckDBBackend(text, metadata_schema)
