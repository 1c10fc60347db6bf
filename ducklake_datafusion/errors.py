"""One exception hierarchy for everything that can go wrong while reading a lake.

Every error raised on purpose by this package derives from :class:`DuckLakeError`, so
``except DuckLakeError`` catches all of them. Messages name the catalog, table, snapshot
and file involved and say what to do; they never contain credentials (each message is
scrubbed when the error is made).

Errors raised while DataFusion plans or runs a scan reach the caller of
``ctx.sql(...).collect()`` as DataFusion's plain ``Exception``: the Rust scan crosses the
``datafusion-ffi`` boundary and the exact reader's batches cross Arrow's C stream, and
both carry only text, ``... ClassName: message``. :func:`raised_as_ours` (or
:func:`typed`) turns such an exception back into ours; see "Getting our classes back"
below.
"""

from __future__ import annotations

import ast
import contextlib
import re
import threading
import weakref
from collections import deque
from collections.abc import Iterator

from .common import scrub

__all__ = [
    "CatalogClosedError",
    "CatalogError",
    "CatalogLockedError",
    "CatalogNotFoundError",
    "CatalogReadOnlyError",
    "CommitConflictError",
    "CommitStateUnknownError",
    "DataFileCorruptError",
    "DataFileError",
    "DataFileMissingError",
    "DeleteFileError",
    "DuckLakeError",
    "InternalError",
    "InvalidOptionError",
    "MergeError",
    "MissingDependencyError",
    "NotADuckLakeCatalogError",
    "SnapshotNotFoundError",
    "StorageError",
    "TableExistsError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
    "raised_as_ours",
    "remembered_for_datafusion",
    "typed",
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


class CatalogReadOnlyError(CatalogError):
    """A write was asked of a catalog this process may not write: a read-only file or
    database user, or a lake opened pinned to a snapshot."""


class CommitConflictError(DuckLakeError):
    """Another writer changed what this commit depends on (the table was dropped, altered
    or replaced) after the write began. Nothing was committed; the message names the
    table and both snapshots. Re-run the write against the lake as it is now."""


class CommitStateUnknownError(CatalogError):
    """The catalog database was asked to ``COMMIT`` and its answer was lost (the
    connection broke): the snapshot may or may not exist. The files the write made are
    kept, named in the message, since a committed snapshot may refer to them; look at the
    table's latest snapshot before writing again (``ducklake_delete_orphaned_files``
    removes them if nothing refers to them)."""


class SnapshotNotFoundError(DuckLakeError):
    """The requested snapshot id or time does not exist (never written, or expired)."""


class TableNotFoundError(DuckLakeError):
    """The schema or table does not exist at the snapshot being read."""


class TableExistsError(DuckLakeError):
    """A table to be created exists already (or a view of that name does)."""


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


class MergeError(InvalidOptionError):
    """A MERGE's rows break one of its rules: a target row matched by more than one
    source row (the SQL standard's cardinality rule; also an ``UPDATE ... FROM``'s target
    row joined to several rows), or a ``THEN ERROR`` clause that applies to a row. Nothing
    was written."""


class InternalError(DuckLakeError):
    """This package broke one of its own contracts (a bug to report): e.g. the Rust scan
    refused a file table or batch the Python side built for it. The message names the
    catalog, table and snapshot, and the original error is chained (``__cause__``)."""


class MissingDependencyError(DuckLakeError, ImportError):
    """An optional dependency (polars, pandas, psycopg, pyspark) is not installed; the
    message names the extra to install."""


# -- Getting our classes back ------------------------------------------------------------------
#
# The places where our errors leave for DataFusion (``remembered_for_datafusion``: the Rust scan's
# resolver, the exact reader's fragments and batches, the table functions) note the last
# few, keyed by the text ``ClassName: message`` that DataFusion's exception will carry, and
# :func:`typed` finds the one an exception carries: the very object raised, with its
# ``__cause__``, while something still holds it, else one rebuilt from the class name and
# message in the text (as for an error the Rust scan makes itself while it reads: no Python
# object exists). The message is the key rather than a token added to it: it already names
# the table, snapshot and file, and whoever reads the DataFusion exception as it is reads
# what the error said. The notes hold their errors by weak reference only: an error's
# traceback holds the frames it was raised through, and their locals the failed scan's
# table and catalog, which a strong note would keep alive until the next error
# (tests/test_release.py).

_KEPT = 64
# (the text DataFusion carries, the error's repr, a weak reference to the error)
_recent: deque[tuple[str, str, weakref.ref]] = deque(maxlen=_KEPT)
_recent_lock = threading.Lock()
_CLASS_IN_TEXT = re.compile(r"\b([A-Z][A-Za-z]+Error): ")
# a table function's error, as DataFusion quotes it: ``value: XError('message')``
_REPR_IN_TEXT = re.compile(
    r"value: ([A-Z][A-Za-z]+Error)\(('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\)"
)


def _key(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _remember(error: DuckLakeError) -> None:
    """Note ``error``, about to leave for DataFusion, for :func:`typed`."""
    with _recent_lock:
        _recent.append((_key(error), repr(error), weakref.ref(error)))


@contextlib.contextmanager
def remembered_for_datafusion() -> Iterator[None]:
    """Around our code whose errors DataFusion receives (a provider's scan, a table
    function, an insert's writer): ours are remembered, so that :func:`typed` finds the
    object DataFusion's exception quotes, and raised on unchanged."""
    try:
        yield
    except DuckLakeError as exc:
        _remember(exc)
        raise


def typed(exc: BaseException) -> DuckLakeError | None:
    """The error of this package that ``exc`` is, or that a DataFusion exception carries
    in its text; ``None`` when it carries none (a SQL error, for one).

    The object that was raised while this process noted it and something still holds it
    (the note is weak); otherwise a new instance of the class the text names, its message the text after the class name (which names
    the table, snapshot and file).
    """
    if isinstance(exc, DuckLakeError):
        return exc
    text = str(exc)
    with _recent_lock:
        recent = list(_recent)
    for key, shown, ref in reversed(recent):
        if key in text or shown in text:  # a table function's error: its repr
            error = ref()
            if error is not None:
                return error
    for match in _CLASS_IN_TEXT.finditer(text):
        found = globals().get(match.group(1))
        if isinstance(found, type) and issubclass(found, DuckLakeError):
            return found(text[match.end() :].strip())
    match = _REPR_IN_TEXT.search(text)
    if match is not None:
        found = globals().get(match.group(1))
        if isinstance(found, type) and issubclass(found, DuckLakeError):
            with contextlib.suppress(ValueError, SyntaxError):
                return found(ast.literal_eval(match.group(2)))
    if _UUID_BYTES_INTO_TEXT in text:
        return UnsupportedTypeError(
            f"{text.strip()}: a UUID column read from Parquet is 16 bytes "
            "(FixedSizeBinary(16)), and DataFusion has no cast from it to the text a lake's "
            "UUID column is in DataFusion; insert encode(column, 'hex') instead (the lake "
            "stores it as the same UUID), or append the Arrow data with table.append(...), "
            "which takes the 16 bytes as they are"
        )
    return None


# DataFusion's planning error for an INSERT of 16-byte UUIDs (a Parquet file's UUID column)
# into a lake's UUID column, which DataFusion sees as text: no error of ours, but the fix
# is ours to say (typed() makes it an UnsupportedTypeError that says how to cast).
_UUID_BYTES_INTO_TEXT = "Cannot automatically convert FixedSizeBinary(16) to Utf8"


@contextlib.contextmanager
def raised_as_ours() -> Iterator[None]:
    """Re-raise an exception that carries one of our errors as that error, so that
    ``except DataFileMissingError`` (or ``except DuckLakeError``) works around DataFusion
    calls::

        with errors.raised_as_ours():
            ctx.sql("SELECT * FROM lake.main.t").collect()

    The error keeps its own ``__cause__`` (DataFusion's exception is its context), or,
    rebuilt from the text, has DataFusion's exception as its cause. Anything else (a SQL
    error) propagates unchanged.
    """
    try:
        yield
    except DuckLakeError:
        raise
    except Exception as exc:
        ours = typed(exc)
        if ours is None:
            raise
        if ours.__cause__ is None:
            raise ours from exc
        raise ours  # its own cause stays; DataFusion's exception is the context
