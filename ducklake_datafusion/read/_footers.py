"""Parquet fragments with their footer parsed, kept per process, and checked on use.

The per-file reader needs a file's footer twice: for the row-group statistics it prunes
with, and for the row-group sizes that give physical positions. A fragment whose metadata
is complete serves both, so a file's footer is read once, and a later query of the same
file reads none (on object storage: one GET less per file and query). DuckLake never
rewrites a file in place, so ``(URL, size, storage options)`` identifies the bytes.

Bounded by the catalog's footer sizes (``FOOTER_CACHE_BYTES``); failures are not cached.
Local paths are checked to be regular files on every use, before anything opens them: a
FIFO or device in place of a data file would block the reader forever.
The footer-size hint itself is not used to read the footer: Arrow already reads the
last 64 KiB in one request, which holds any footer the hint could describe below that.
"""

from __future__ import annotations

import atexit
import os
import stat
from typing import TYPE_CHECKING

from ..common import LRUCache
from ..errors import DataFileCorruptError
from ..pathres import StorageOptions, filesystem_for, parse_location
from ..scan import FileRef

if TYPE_CHECKING:  # (pyarrow.dataset imports pandas: 0.2 s a planner process would pay)
    import pyarrow.dataset as ds

__all__ = ["FOOTER_CACHE_BYTES", "parsed_fragment", "parsed_fragments", "require_regular_file"]

FOOTER_CACHE_BYTES = 64 << 20
_UNKNOWN_FOOTER = 64 << 10  # charged when the catalog has no footer size


# by (URL, size, storage options), weighed by footer size; a fragment is put only once
# its footer parsed, so a failure is not cached
parsed_fragments: LRUCache[tuple, ds.ParquetFileFragment] = LRUCache(max_weight=FOOTER_CACHE_BYTES)
# Cached fragments hold their filesystems: drop them before pyarrow finalises S3 at exit
# (atexit runs handlers last-registered first, and pyarrow.fs registered its own earlier).
atexit.register(parsed_fragments.clear)


def parsed_fragment(
    ref: FileRef, storage: StorageOptions, file_format: ds.ParquetFileFormat
) -> ds.ParquetFileFragment:
    """A fragment of ``ref`` whose footer is parsed (read now unless cached)."""
    key = (ref.url, ref.size, storage)
    location = parse_location(ref.url)
    if location.scheme == "file":
        require_regular_file(location.path, ref.url)
    fragment = parsed_fragments.get(key)
    if fragment is None:
        filesystem = filesystem_for(location, storage)
        fragment = file_format.make_fragment(
            location.path, filesystem=filesystem, file_size=ref.size
        )
        fragment.ensure_complete_metadata()
        parsed_fragments.put(key, fragment, weight=ref.footer_size or _UNKNOWN_FOOTER)
    return fragment


def require_regular_file(path: str, url: str) -> None:
    """Refuse a local path that is not a regular file (FIFO, device, socket, directory).

    Opening a FIFO blocks until a writer appears, so it must be caught before any open.
    A missing file is left to the open, which reports it as missing.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "a device or socket"
        )  # fmt: skip
        raise DataFileCorruptError(
            f"{url} is {kind}, not a regular file; DuckLake data and delete files are plain "
            "Parquet files. Restore the file the catalog lists at that path"
        )
