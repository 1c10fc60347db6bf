"""One data file checked against the catalog from its footer, and its layout mapped.

Both engines' native scans (DataFusion's Rust scan, Spark's Parquet reader) take a file
only after the checks every path makes (``_file_checks``: row count, field ids; a
regular file: ``_footers``), from its footer parsed once per process, so that a damaged
or missing file raises our typed error before the engine sees it. Then each needs the
same two facts: how the file's columns map onto the table's by field id (``_layouts``)
and whether a by-name scan of the table's columns reads it as it is. That is done here,
once, for both; each engine keeps only its own decision (which types and layouts its
reader decodes exactly: ``provider/_file_layouts``, ``spark/parquet/_projection``).

The DataFusion scan re-plans the files of every new lake version, so with a ``signature``
(the table's columns as a key) the result is kept per (file, size, rows, columns): a known
file needs no footer, only a ``stat`` of a local file (a file removed or replaced by a
FIFO since raises the typed error, a file of another size than the catalog's is left to
the exact path's checks).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..common import LRUCache
from ..pathres import parse_location
from ..scan import field_id
from ._file_checks import check_data_file, reads_by_name
from ._file_columns import ROW_ID_FIELD_ID
from ._footers import parsed_fragment, require_regular_file
from ._layouts import FileLayout, file_layout
from ._reader import parquet_format, read_error

__all__ = ["CheckedFile", "checked_file"]


@dataclass(frozen=True)
class CheckedFile:
    """A data file that passed the catalog's checks, and how a by-name reader maps it.

    Attributes:
        layout: its columns mapped onto the table's by field id (exact widenings,
            defaults, per-row snapshots), or ``None`` where no exact mapping exists.
        by_name: a by-name scan of the table's columns reads the file as it is (each
            name holds the field of the column's id).
        row_ids: the file carries each row's id (written by an UPDATE), instead of
            ``row_id_start`` plus the row's position.
    """

    layout: FileLayout | None
    by_name: bool
    row_ids: bool = False


# Results per (file, size, rows, columns) when a signature is given: the footer is cached
# too, but resolving it against the columns again on every query is work per file. Least
# recently used first out: a table of more files than this re-reads the footers of the
# rest on every new lake version. Equal results are one shared object (_SHARED, the 4096
# most recently used), so an entry costs ~0.4 KB (measured: 1.2 KB with a layout object
# each; the LRU order adds ~50 bytes to a plain dict's).
_CHECKED_MAX = 1 << 18
_CHECKED: LRUCache[tuple, CheckedFile] = LRUCache(_CHECKED_MAX)
_SHARED: LRUCache[CheckedFile, CheckedFile] = LRUCache(4096)
_MISSING = object()


def checked_file(task, storage, columns, what: str, *, signature=None) -> CheckedFile | None:
    """Check ``task``'s data file against the catalog (raises our typed error, naming
    ``what``, if it is damaged or missing) and map its columns onto ``columns``.

    Without ``signature`` the footer is parsed (cached per process) and checked on every
    call. With one, the result is kept per (file, size, rows, signature) and a local file
    is ``stat``-ed on every call instead; ``None`` then means its size is not the
    catalog's (not the file the catalog lists: the exact path's checks decide).
    """
    location = parse_location(task.file.url)
    key = None
    found = None
    try:
        if signature is not None:
            key = (task.file.url, task.file.size, task.record_count, task.layout_current, signature)
            found = os.stat(location.path) if location.scheme == "file" else None
            if found is not None and not stat.S_ISREG(found.st_mode):
                require_regular_file(location.path, task.file.url)  # raises, naming the kind
        checked = _CHECKED.get(key, _MISSING) if key is not None else _MISSING
        if checked is _MISSING:
            fragment = parsed_fragment(task.file, storage, parquet_format())
            physical = fragment.physical_schema
    except Exception as exc:  # translated as the exact reader does
        raise read_error(exc, what) from exc
    if found is not None and task.file.size is not None and found.st_size != task.file.size:
        return None  # not the file the catalog lists: the exact path's checks decide
    if checked is not _MISSING:
        return checked
    check_data_file(task, fragment.metadata, physical, columns, what)
    row_ids = any(field_id(f) == ROW_ID_FIELD_ID for f in physical)
    checked = CheckedFile(file_layout(physical, columns), reads_by_name(physical, columns), row_ids)
    if key is not None:
        fresh = checked
        checked = _SHARED.get_or_compute(fresh, lambda: fresh)
        _CHECKED.put(key, checked)
    return checked
