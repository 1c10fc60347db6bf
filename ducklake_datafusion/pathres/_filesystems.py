"""Build (and cache) the pyarrow filesystem for a :class:`StorageLocation`.

Building an S3, GCS or Azure filesystem initialises an SDK client and credential chain,
which is far too slow to repeat per file, so built filesystems are kept in a small
process-wide cache keyed by (scheme, bucket/container, account, options). The cache
lives here, not on :class:`StorageOptions`, so options stay trivially picklable.

The option -> constructor-argument mapping is done by pure functions (``s3_kwargs``,
``gcs_kwargs``, ``azure_kwargs``) so it can be tested without network access.
"""

from __future__ import annotations

import atexit
import os
import threading
from datetime import datetime, timezone
from typing import Any

import pyarrow.fs as pafs

from ..errors import InvalidOptionError
from ._errors import redact, translate_storage_error
from ._location import StorageLocation
from ._options import StorageOptions

__all__ = ["clear_filesystem_cache", "filesystem_for"]

_MAX_CACHED = 64
_CACHE: dict[tuple[Any, ...], pafs.FileSystem] = {}
_LOCK = threading.Lock()
# pyarrow insists on an expiry for a bare OAuth token, but cannot refresh it either way;
# the server rejects an expired token, which surfaces as an access-denied StorageError.
_TOKEN_EXPIRY = datetime(2200, 1, 1, tzinfo=timezone.utc)


def endpoint_parts(
    value: str, option: str, allow_http: bool | None, use_ssl: bool | None = None
) -> tuple[str, str]:
    """``http://host:9000/`` -> (``'http'``, ``'host:9000'``); schemeless uses the flags."""
    scheme, sep, host = value.partition("://")
    if not sep:
        scheme, host = ("http" if allow_http or use_ssl is False else "https"), value
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidOptionError(
            f"storage option {option!r} must be host:port or an http(s):// URL, got {value!r}"
        )
    if scheme == "http" and allow_http is False:
        raise InvalidOptionError(
            f"storage option {option!r} is a plain-http endpoint ({value!r}) but allow_http "
            "is false; use https or set allow_http true"
        )
    return scheme, host.rstrip("/")


def s3_kwargs(options: StorageOptions) -> dict[str, Any]:
    """StorageOptions -> ``pyarrow.fs.S3FileSystem`` keyword arguments."""
    region = (
        options.region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )
    kwargs: dict[str, Any] = {"region": region}
    endpoint = options.s3_endpoint or options.endpoint
    if endpoint:
        option = "s3_endpoint" if options.s3_endpoint else "endpoint"
        scheme, host = endpoint_parts(endpoint, option, options.allow_http, options.use_ssl)
        kwargs.update(endpoint_override=host, scheme=scheme)
    elif options.use_ssl is False:
        kwargs["scheme"] = "http"
    if bool(options.access_key_id) != bool(options.secret_access_key):
        raise InvalidOptionError(
            "storage options access_key_id and secret_access_key must be given together "
            "(or neither, to use the AWS environment / profile credentials)"
        )
    if options.session_token and not options.access_key_id:
        raise InvalidOptionError(
            "storage option session_token needs access_key_id and secret_access_key too"
        )
    if options.access_key_id:
        kwargs.update(access_key=options.access_key_id, secret_key=options.secret_access_key)
        if options.session_token:
            kwargs["session_token"] = options.session_token
    if options.anonymous:
        kwargs["anonymous"] = True
    # Path style (pyarrow's default) is what MinIO, moto and most S3 clones need.
    kwargs["force_virtual_addressing"] = options.url_style == "vhost"
    return kwargs


def gcs_kwargs(options: StorageOptions) -> dict[str, Any]:
    """StorageOptions -> ``pyarrow.fs.GcsFileSystem`` keyword arguments."""
    kwargs: dict[str, Any] = {}
    if options.anonymous:
        kwargs["anonymous"] = True
    if options.google_service_account_token:
        kwargs.update(
            access_token=options.google_service_account_token,
            credential_token_expiration=_TOKEN_EXPIRY,
        )
    endpoint = options.gcs_endpoint or options.endpoint
    if endpoint:
        option = "gcs_endpoint" if options.gcs_endpoint else "endpoint"
        scheme, host = endpoint_parts(endpoint, option, options.allow_http)
        kwargs.update(endpoint_override=host, scheme=scheme)
    if options.project_id:
        kwargs["project_id"] = options.project_id
    return kwargs


def azure_kwargs(location: StorageLocation, options: StorageOptions) -> dict[str, Any]:
    """StorageLocation + StorageOptions -> ``pyarrow.fs.AzureFileSystem`` keyword arguments."""
    account = location.account or options.account_name
    if location.account and options.account_name and location.account != options.account_name:
        raise InvalidOptionError(
            f"{location.url!r} names storage account {location.account!r} but the "
            f"account_name option is {options.account_name!r}; drop one of them"
        )
    account = account or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")
    if not account:
        raise InvalidOptionError(
            f"reading {location.url!r} needs the Azure storage account: set the account_name "
            "option (or AZURE_STORAGE_ACCOUNT_NAME), or use an "
            "abfss://container@ACCOUNT.dfs.core.windows.net/ path"
        )
    if options.account_key and options.sas_token:
        raise InvalidOptionError("storage options account_key and sas_token exclude each other")
    if (options.client_secret or options.tenant_id) and not (
        options.client_id and options.tenant_id and options.client_secret
    ):
        raise InvalidOptionError(
            "storage options client_id, tenant_id and client_secret must be given together "
            "(client_id alone selects a user-assigned managed identity)"
        )
    kwargs: dict[str, Any] = {"account_name": account}
    for name in ("account_key", "sas_token", "client_id", "tenant_id", "client_secret"):
        if getattr(options, name):
            kwargs[name] = getattr(options, name)
    endpoint = options.blob_storage_authority or options.endpoint
    if endpoint:
        option = "blob_storage_authority" if options.blob_storage_authority else "endpoint"
        scheme, host = endpoint_parts(endpoint, option, options.allow_http)
        # An emulator (Azurite) serves both APIs on one host; a sovereign cloud suffix
        # such as .blob.core.chinacloudapi.cn has a matching .dfs. host.
        dfs_host = host.replace(".blob.", ".dfs.")
        kwargs.update(
            blob_storage_authority=host,
            blob_storage_scheme=scheme,
            dfs_storage_authority=dfs_host,
            dfs_storage_scheme=scheme,
        )
    return kwargs


# Credentials that only one kind of store understands. Given for a lake on another kind
# they would be silently ignored (and the read would run with other credentials).
_CREDENTIALS = {
    "S3": ("access_key_id", "secret_access_key", "session_token"),
    "GCS": ("google_service_account_token",),
    "Azure": ("account_key", "sas_token", "client_id", "tenant_id", "client_secret"),
}
_STORE_OF_SCHEME = {"s3": "S3", "gs": "GCS", "az": "Azure"}


def _refuse_foreign_credentials(location: StorageLocation, options: StorageOptions) -> None:
    store = _STORE_OF_SCHEME.get(location.scheme)
    if store is None:
        return
    for other, names in _CREDENTIALS.items():
        given = [n for n in names if other != store and getattr(options, n)]
        if given:
            raise InvalidOptionError(
                f"storage option(s) {', '.join(given)} are {other} credentials, but "
                f"{location.url!r} is on {store}; drop them or give {store} credentials"
            )


def _build(location: StorageLocation, options: StorageOptions) -> pafs.FileSystem:
    _refuse_foreign_credentials(location, options)
    if location.scheme == "file":
        return pafs.LocalFileSystem()
    if location.scheme == "s3":
        return pafs.S3FileSystem(**s3_kwargs(options))
    if location.scheme == "gs":
        return pafs.GcsFileSystem(**gcs_kwargs(options))
    if location.scheme == "az":
        return pafs.AzureFileSystem(**azure_kwargs(location, options))
    raise InvalidOptionError(f"unsupported storage scheme {location.scheme!r} in {location.url!r}")


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
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        try:
            filesystem = _build(location, options)
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
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = filesystem
        return filesystem


def clear_filesystem_cache() -> None:
    """Forget built filesystems, e.g. after rotating credentials held in the environment."""
    with _LOCK:
        _CACHE.clear()


# Release S3 filesystems before pyarrow finalises its S3 subsystem at exit (atexit runs
# the last-registered handler first; pyarrow.fs registered its own on import, above).
atexit.register(clear_filesystem_cache)
