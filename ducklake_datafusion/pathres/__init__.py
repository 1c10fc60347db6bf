"""Where a lake's files are and how to open them.

* :mod:`._paths`: DuckLake's path rules (data_path -> schema -> table -> file), pure
  string functions.
* :mod:`._location`: split a resolved path or URL into scheme, bucket and key.
* :mod:`._options`: user storage options, normalised, hashable and secret-safe.
* :mod:`._access`: the options resolved for one store (:func:`storage_access`): region,
  endpoint, addressing, credential; what every reader (pyarrow here, the Rust scan's
  object_store, Spark's Hadoop connectors) translates, never the options themselves.
* :mod:`._filesystems`: the cached pyarrow filesystem for a location.
* :mod:`._object_store`: the same access as the Rust extension's ``object_store`` options.
* :mod:`._errors`: storage ``OSError`` -> this package's errors with a hint.
"""

from __future__ import annotations

from ._access import (
    DEFAULT_S3_REGION,
    AzureAccess,
    Endpoint,
    GcsAccess,
    LocalAccess,
    S3Access,
    StorageAccess,
    storage_access,
)
from ._errors import translate_storage_error
from ._filesystems import clear_filesystem_cache, filesystem_for
from ._location import SUPPORTED_SCHEMES, StorageLocation, parse_location
from ._object_store import (
    PLAIN_PATH,
    object_path,
    plain_location,
    store_for,
    store_kind,
    store_options_of,
)
from ._options import ACCEPTED_KEYS, SECRET_FIELDS, StorageOptions
from ._paths import join_path, resolve_data_path, resolve_file_path

__all__ = [
    "ACCEPTED_KEYS",
    "DEFAULT_S3_REGION",
    "PLAIN_PATH",
    "SECRET_FIELDS",
    "SUPPORTED_SCHEMES",
    "AzureAccess",
    "Endpoint",
    "GcsAccess",
    "LocalAccess",
    "S3Access",
    "StorageAccess",
    "StorageLocation",
    "StorageOptions",
    "clear_filesystem_cache",
    "filesystem_for",
    "join_path",
    "object_path",
    "parse_location",
    "plain_location",
    "resolve_data_path",
    "resolve_file_path",
    "storage_access",
    "store_for",
    "store_kind",
    "store_options_of",
    "translate_storage_error",
]
