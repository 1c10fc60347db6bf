"""Pure string rules that turn catalog paths into file locations.

DuckLake stores a root (``data_path``), then a path per schema, table and file, each
either relative to its parent or absolute (the specification's path rules). The writer joins them
by plain string concatenation and never URL-encodes them: the only ``%`` signs come from
hive partition directory names (``p=x%20y``), which are literal parts of the object key.
So nothing here percent-decodes or encodes; doing so would name a different object.

No function in this module touches storage, so every rule can be tested as a table.
"""

from __future__ import annotations

import os
import re

from ..errors import InvalidOptionError

__all__ = [
    "file_url_to_path",
    "has_scheme",
    "is_absolute_local",
    "join_path",
    "resolve_data_path",
    "resolve_file_path",
]

# RFC 3986 scheme followed by "://". A single letter is a Windows drive, never a scheme.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
_DRIVE = re.compile(r"^[A-Za-z]:[/\\]")


def has_scheme(path: str) -> bool:
    """Whether ``path`` is a URL such as ``s3://b/k`` (a Windows drive ``C:/`` is not)."""
    return _SCHEME.match(path) is not None


def is_absolute_local(path: str) -> bool:
    """Whether ``path`` is an absolute local path on any platform.

    Checked textually rather than with :func:`os.path.isabs` so that a catalog written
    on Windows (``C:/lake/``) is recognised as absolute on POSIX too, and vice versa.
    """
    return path.startswith(("/", "\\")) or _DRIVE.match(path) is not None


def file_url_to_path(url: str) -> str:
    """``file:///x/y`` -> ``/x/y`` without percent-decoding.

    DuckDB strips the ``file://`` prefix from local paths and keeps the rest verbatim, so
    ``file:///tmp/a%20b/`` names a directory literally called ``a%20b``. ``localhost`` as
    host and a Windows drive after the slash (``file:///C:/x``) are understood.
    """
    rest = url[len("file://") :] if url[:7].lower() == "file://" else url
    if rest.startswith("localhost/"):
        rest = rest[len("localhost") :]
    elif not rest.startswith("/"):
        raise InvalidOptionError(
            f"file URL {url!r} names a remote host; only local file URLs such as "
            "'file:///path/to/lake/' are supported"
        )
    if re.match(r"^/[A-Za-z]:/", rest):
        rest = rest[1:]
    return rest


def _ensure_slash(path: str) -> str:
    return path if path.endswith("/") else path + "/"


def join_path(parent: str, child: str | None, is_relative: bool | None) -> str:
    """Apply DuckLake's path rule for one level (schema, table or file).

    Args:
        parent: the directory of the level above, e.g. the resolved data path.
        child: the stored ``path`` column; ``None`` (SQL NULL) means "use the parent".
        is_relative: the stored ``path_is_relative`` column. ``None`` (should not occur)
            is inferred from the text: URLs and absolute local paths are absolute.

    Returns:
        ``parent + child`` for a relative child (plain concatenation, ``parent`` first
        normalised to end with ``/``), ``child`` itself for an absolute one. A child
        stored as absolute whose text is a relative local path (``ducklake_add_data_files
        ('lake', 't', 'data/f.parquet')`` stores it so) is resolved against the process
        working directory, as DuckDB opens it: resolving it here, while planning, gives
        Spark executors, whose working directory differs, the file the writer meant.
    """
    if child is None:
        return parent
    if is_relative is None:
        is_relative = not (has_scheme(child) or is_absolute_local(child))
    if not is_relative:
        if has_scheme(child) or is_absolute_local(child):
            return child
        return _from_working_directory(child)
    return _ensure_slash(parent) + child


def _from_working_directory(path: str, cwd: str | None = None) -> str:
    """A relative local path made absolute the way DuckDB opens it (``~`` expanded,
    then against the process working directory), with ``/`` separators."""
    if path.startswith("~"):
        path = os.path.expanduser(path)
    if not is_absolute_local(path):
        base = os.getcwd() if cwd is None else cwd
        path = os.path.normpath(os.path.join(base, path))
        if os.sep == "\\":  # DuckLake joins with "/", so keep one separator style.
            path = path.replace("\\", "/")
    return path


def resolve_data_path(
    stored: str | None, override: str | None = None, cwd: str | None = None
) -> str:
    """The root every relative schema path hangs off.

    Mirrors the extension: ``OVERRIDE_DATA_PATH`` replaces the stored root in memory
    only, and a relative root is resolved against the *process working directory* (not
    the catalog file), because that is where the writer put the files.

    Args:
        stored: ``ducklake_metadata.data_path`` as stored.
        override: a root given by the user; wins over ``stored`` when not ``None``.
        cwd: directory for resolving a relative local root; defaults to ``os.getcwd()``.

    Returns:
        The root, always ending with ``/``: URLs (``s3://``, ``gs://``, ``az://``,
        ``abfss://`` ...) unchanged, ``file://`` URLs as local absolute paths, relative
        local paths made absolute, ``~`` expanded like DuckDB does.

    Raises:
        InvalidOptionError: no usable root (empty override, or none stored and none given).
    """
    if override is not None:
        if not override.strip():
            raise InvalidOptionError("data_path override is empty; pass a directory or URL")
        root = override
    elif stored:
        root = stored
    else:
        raise InvalidOptionError(
            "the catalog stores no data_path; pass the lake's data directory or URL "
            "as the data_path override"
        )
    if root[:7].lower() == "file://":
        root = file_url_to_path(root)
    elif has_scheme(root):
        return _ensure_slash(root)
    return _ensure_slash(_from_working_directory(root, cwd))


def resolve_file_path(
    data_path: str,
    schema_path: str | None,
    schema_rel: bool | None,
    table_path: str | None,
    table_rel: bool | None,
    file_path: str | None,
    file_rel: bool | None,
) -> str:
    """data_path -> schema dir -> table dir -> file, by :func:`join_path` at each level.

    ``data_path`` should already be resolved (:func:`resolve_data_path`). Use the schema
    and table rows live at the snapshot being read: a renamed table keeps its old path.
    Data files and delete files both hang off the table directory.
    """
    schema_dir = join_path(data_path, schema_path, schema_rel)
    table_dir = join_path(schema_dir, table_path, table_rel)
    return join_path(table_dir, file_path, file_rel)
