"""One exception hierarchy for everything that can go wrong while reading a lake.

Every error raised on purpose by this package derives from :class:`DuckLakeError`, so
``except DuckLakeError`` catches all of them. Messages name the catalog, table, snapshot
and file involved and say what to do; they never contain credentials (each message is
scrubbed when the error is made).

Errors raised inside a DataFusion scan cross the Rust boundary and reach the user as a
DataFusion exception whose text contains the class name and message of the original
error (see ``tests/test_errors.py``).
"""

from __future__ import annotations

from ._secrets import scrub

__all__ = [
    "CatalogClosedError",
    "CatalogError",
    "CatalogLockedError",
    "CatalogNotFoundError",
    "DataFileCorruptError",
    "DataFileError",
    "DataFileMissingError",
    "DeleteFileError",
    "DuckLakeError",
    "InternalError",
    "InvalidOptionError",
    "MissingDependencyError",
    "NotADuckLakeCatalogError",
    "SnapshotNotFoundError",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
]


class DuckLakeError(Exception):
    """Root of every error this package raises on purpose.

    The message is scrubbed of every credential this process was given (and of URL
    signatures) when the error is made, whatever path it took (see ``_secrets``).
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(scrub(a) if isinstance(a, str) else a for a in args))


class CatalogError(DuckLakeError):
    """The catalog database cannot be used."""


class CatalogClosedError(CatalogError):
    """The catalog was closed (``close()`` or the end of its ``with`` block)."""


class CatalogNotFoundError(CatalogError):
    """The catalog database does not exist or cannot be reached."""


class NotADuckLakeCatalogError(CatalogError):
    """The database exists but holds no DuckLake metadata tables."""


class UnsupportedVersionError(CatalogError):
    """The catalog was written in a DuckLake format version this reader does not know."""


class CatalogLockedError(CatalogError):
    """A DuckDB-file catalog is attached by a writer process, which holds a file lock."""


class SnapshotNotFoundError(DuckLakeError):
    """The requested snapshot id or time does not exist (never written, or expired)."""


class TableNotFoundError(DuckLakeError):
    """The schema or table does not exist at the snapshot being read."""


class DataFileError(DuckLakeError):
    """A data file listed by the catalog cannot be read."""


class DataFileMissingError(DataFileError, FileNotFoundError):
    """A data file listed by the catalog is not on storage."""


class DataFileCorruptError(DataFileError):
    """A data file exists but is truncated, corrupt, or not what the catalog says."""


class DeleteFileError(DataFileError):
    """A delete file listed by the catalog is missing or unreadable."""


class StorageError(DuckLakeError):
    """Object storage refused a request (credentials, missing bucket, network)."""


class UnsupportedTypeError(DuckLakeError):
    """A column has a type this reader cannot represent faithfully."""


class UnsupportedFeatureError(DuckLakeError):
    """The lake uses a feature this reader refuses rather than answer wrongly."""


class InvalidOptionError(DuckLakeError, ValueError):
    """An argument or option passed by the user is not valid."""


class InternalError(DuckLakeError):
    """This package broke one of its own contracts (a bug to report): e.g. the Rust scan
    refused a file table or batch the Python side built for it. The message names the
    catalog, table and snapshot, and the original error is chained (``__cause__``)."""


class MissingDependencyError(DuckLakeError, ImportError):
    """An optional dependency (polars, pandas, psycopg, pyspark) is not installed; the
    message names the extra to install."""
