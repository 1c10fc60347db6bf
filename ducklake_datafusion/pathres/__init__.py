"""Where a lake's files are and how to open them.

* :mod:`._paths`: DuckLake's path rules (data_path -> schema -> table -> file), pure
  string functions.
* :mod:`._location`: split a resolved path or URL into scheme, bucket and key.
* :mod:`._options`: user storage options, normalised, hashable and secret-safe.
* :mod:`._filesystems`: the cached pyarrow filesystem for a location.
* :mod:`._errors`: storage ``OSError`` -> this package's errors with a hint.
"""

from __future__ import annotations

from ._errors import translate_storage_error
from ._filesystems import (
    azure_kwargs,
    clear_filesystem_cache,
    endpoint_parts,
    filesystem_for,
    gcs_kwargs,
    s3_kwargs,
)
from ._location import SUPPORTED_SCHEMES, StorageLocation, parse_location
from ._options import ACCEPTED_KEYS, StorageOptions
from ._paths import join_path, resolve_data_path, resolve_file_path

__all__ = [
    "ACCEPTED_KEYS",
    "SUPPORTED_SCHEMES",
    "StorageLocation",
    "StorageOptions",
    "azure_kwargs",
    "clear_filesystem_cache",
    "endpoint_parts",
    "filesystem_for",
    "gcs_kwargs",
    "join_path",
    "parse_location",
    "resolve_data_path",
    "resolve_file_path",
    "s3_kwargs",
    "translate_storage_error",
]
