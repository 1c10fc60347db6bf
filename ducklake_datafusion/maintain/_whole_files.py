"""A compaction's sources read by the Rust extension, off the GIL (``rust/src/whole_files.rs``).

At thousands of small sources a merge's time goes per file: read from Python, each file
holds the GIL for its open, footer and decode, so two cores read no faster than one. The
extension reads a chunk of them concurrently on its I/O runtime, each small file in one
request, and hands back each file's Arrow table in order; what the file holds is checked
by ``_sources`` as for a file pyarrow read. The store is the one the Rust scan reads with
(``pathres.store_kind``): local files, or one bucket or container with explicit credentials;
sources elsewhere (ambient credentials, paths object-store paths spell differently) are
read by pyarrow. ``ENABLED`` off reads every source by pyarrow (the tests compare both).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from .. import errors
from ..pathres import object_path, store_for
from ..scan import DataFileTask

__all__ = ["ENABLED", "read_whole", "store_of"]

ENABLED = True


def store_of(tasks: Sequence[DataFileTask], storage) -> dict[str, str] | None:
    """The extension's store options for every one of ``tasks``' files, or ``None`` when it
    does not read them all (switched off, not built, several stores, a store it would
    authenticate differently, an encrypted file, a path it spells differently)."""
    if not ENABLED or not tasks:
        return None
    try:
        from .._rust import read_whole_files  # noqa: F401
    except ImportError:  # an install without the extension: pyarrow reads them
        return None
    if any(task.encryption_key is not None for task in tasks):
        return None
    return store_for([task.file.url for task in tasks], storage)


def read_whole(
    tasks: Sequence[DataFileTask], store: dict[str, str], what: str, concurrency: int
) -> list[tuple[pa.Table, list[int]]]:
    """The tasks' files, whole, in order, from ``store`` (:func:`store_of`): consecutive
    files of the same columns as one table, with each file's row count. A file that cannot
    be read raises the package's typed error naming it and ``what`` (the table and
    snapshot); storage options the extension cannot use raise ``InvalidOptionError``."""
    from .._rust import StoreConfigError, read_whole_files

    paths = [object_path(t.file.url) for t in tasks]
    try:
        groups, failed = read_whole_files(paths, store, concurrency)
    except StoreConfigError as exc:  # (the message names no option value)
        raise errors.InvalidOptionError(
            f"{what}: {exc}; check the lake's storage options (an access key id needs its "
            "secret key, an Azure account key is base64 text)"
        ) from None
    if failed is not None:
        index, kind, reason = failed
        raise getattr(errors, kind)(f"data file {tasks[index].file.url} of {what} {reason}")
    return [(pa.Table.from_batches([batch]), rows) for batch, rows in groups]
