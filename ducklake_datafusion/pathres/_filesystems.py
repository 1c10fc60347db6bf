"""Build (and cache) the pyarrow filesystem for a :class:`StorageLocation`.

Building an S3, GCS or Azure filesystem initialises an SDK client and credential chain,
which is far too slow to repeat per file, so built filesystems are kept in a small
process-wide cache (``_lru.LRUCache``: the 64 most recently used) keyed by (scheme,
bucket/container, account, options). The cache lives here, not on
:class:`StorageOptions`, so options stay trivially picklable.

The constructor arguments are spelled by pure functions (``s3_kwargs``, ``gcs_kwargs``,
``azure_kwargs``), testable without network access, from the store's access value
(:mod:`._access`), which makes every decision about the options; nothing here reads them.
"""

from __future__ import annotations

import atexit
import threading
from datetime import datetime, timezone
from typing import Any

import pyarrow.fs as pafs

from ..common import LRUCache
from ..errors import InvalidOptionError
from ._access import (
    AzureAccess,
    GcsAccess,
    S3Access,
    azure_access,
    gcs_access,
    s3_access,
    storage_access,
)
from ._errors import redact, translate_storage_error
from ._location import StorageLocation
from ._options import StorageOptions

__all__ = ["azure_kwargs", "clear_filesystem_cache", "filesystem_for", "gcs_kwargs", "s3_kwargs"]

_CACHE: LRUCache[tuple[Any, ...], pafs.FileSystem] = LRUCache(max_entries=64)
_BUILDING = threading.Lock()  # a filesystem is built once, even when threads race for it
# pyarrow insists on an expiry for a bare OAuth token, but cannot refresh it either way;
# the server rejects an expired token, which surfaces as an access-denied StorageError.
_TOKEN_EXPIRY = datetime(2200, 1, 1, tzinfo=timezone.utc)


def s3_kwargs(options: StorageOptions, bucket: str = "") -> dict[str, Any]:
    """StorageOptions -> ``pyarrow.fs.S3FileSystem`` keyword arguments."""
    return _s3_kwargs(s3_access(options, bucket))


def _s3_kwargs(access: S3Access) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"region": access.effective_region}
    if access.endpoint is not None:
        kwargs.update(endpoint_override=access.endpoint.host, scheme=access.endpoint.scheme)
    elif access.scheme == "http":
        kwargs["scheme"] = "http"
    if access.credential == "keys":
        kwargs.update(access_key=access.access_key_id, secret_key=access.secret_access_key)
        if access.session_token:
            kwargs["session_token"] = access.session_token
    if access.anonymous:
        kwargs["anonymous"] = True
    # pyarrow's default (False) is path style on a custom endpoint, its SDK's choice on AWS.
    kwargs["force_virtual_addressing"] = access.addressing == "vhost"
    return kwargs


def gcs_kwargs(options: StorageOptions, bucket: str = "") -> dict[str, Any]:
    """StorageOptions -> ``pyarrow.fs.GcsFileSystem`` keyword arguments."""
    return _gcs_kwargs(gcs_access(options, bucket))


def _gcs_kwargs(access: GcsAccess) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if access.anonymous:
        kwargs["anonymous"] = True
    if access.token:
        kwargs.update(access_token=access.token, credential_token_expiration=_TOKEN_EXPIRY)
    if access.endpoint is not None:
        kwargs.update(endpoint_override=access.endpoint.host, scheme=access.endpoint.scheme)
    if access.project_id:
        kwargs["project_id"] = access.project_id
    return kwargs


def azure_kwargs(location: StorageLocation, options: StorageOptions) -> dict[str, Any]:
    """StorageLocation + StorageOptions -> ``pyarrow.fs.AzureFileSystem`` keyword arguments."""
    return _azure_kwargs(azure_access(location, options))


def _azure_kwargs(access: AzureAccess) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"account_name": access.account}
    for name in ("account_key", "sas_token", "client_id", "tenant_id", "client_secret"):
        if getattr(access, name):
            kwargs[name] = getattr(access, name)
    if access.endpoint is not None:
        # pyarrow puts the account in front of an authority starting with '.' (a cloud's
        # suffix), else in the path (an emulator); an emulator (Azurite) serves both APIs
        # on one host, and a cloud suffix such as .blob.core.chinacloudapi.cn has a
        # matching .dfs. one.
        host = access.blob_suffix or access.endpoint.host
        scheme = access.endpoint.scheme
        kwargs.update(
            blob_storage_authority=host,
            blob_storage_scheme=scheme,
            dfs_storage_authority=host.replace(".blob.", ".dfs."),
            dfs_storage_scheme=scheme,
        )
    return kwargs


def _build(location: StorageLocation, options: StorageOptions) -> pafs.FileSystem:
    access = storage_access(location, options)
    if isinstance(access, S3Access):
        return pafs.S3FileSystem(**_s3_kwargs(access))
    if isinstance(access, GcsAccess):
        return pafs.GcsFileSystem(**_gcs_kwargs(access))
    if isinstance(access, AzureAccess):
        return pafs.AzureFileSystem(**_azure_kwargs(access))
    return pafs.LocalFileSystem()


def _cache_key(location: StorageLocation, options: StorageOptions) -> tuple[Any, ...]:
    if location.scheme == "file":
        return ("file",)
    return (location.scheme, location.authority, location.account, options)


def filesystem_for(
    location: StorageLocation, options: StorageOptions | None = None
) -> pafs.FileSystem:
    """The pyarrow filesystem that can open ``location.path``, built once per process.

    Args:
        location: from :func:`parse_location`.
        options: credentials and endpoints; ``None`` means defaults (ambient credentials).

    Raises:
        InvalidOptionError: the options cannot configure this store (e.g. only one of
            access key / secret, no Azure account).
        StorageError: the storage SDK failed while initialising.
    """
    options = StorageOptions.from_user(options)
    key = _cache_key(location, options)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    with _BUILDING:
        return _CACHE.get_or_compute(key, lambda: _built(location, options))


def _built(location: StorageLocation, options: StorageOptions) -> pafs.FileSystem:
    """:func:`_build`, its failures as our typed errors."""
    try:
        return _build(location, options)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, InvalidOptionError):
            raise
        raise InvalidOptionError(
            f"cannot configure {location.scheme} storage for {location.url!r} from "
            f"{options!r}: {redact(str(exc), options)}"
        ) from exc
    except OSError as exc:
        raise translate_storage_error(
            exc, what=f"storage for {location.url}", options=options
        ) from exc


def clear_filesystem_cache() -> None:
    """Forget built filesystems, e.g. after rotating credentials held in the environment."""
    _CACHE.clear()


# Release S3 filesystems before pyarrow finalises its S3 subsystem at exit (atexit runs
# the last-registered handler first; pyarrow.fs registered its own on import, above).
atexit.register(clear_filesystem_cache)
