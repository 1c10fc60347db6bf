"""The Rust extension's object store for files at a URL: the options ``object_store`` takes.

The extension builds its own store (``rust/src/stores.rs``) from these options: local
files, one S3 or GCS bucket, or one Azure container, each with explicit credentials.
They are spelled from the store's access value (:func:`storage_access`), which made every
choice (region, endpoint, addressing, credential); the user's options are not read here.
Anything it would authenticate differently from pyarrow (ambient credentials, anonymous
S3, service principals), several stores, or paths object-store paths spell differently
give ``None``: those files are read by pyarrow instead. The Rust scan (``provider``) and a
compaction's source reads (``maintain``) both ask here.
"""

from __future__ import annotations

import re

from ._access import AzureAccess, Endpoint, GcsAccess, S3Access, storage_access
from ._location import StorageLocation, parse_location

__all__ = [
    "PLAIN_PATH",
    "object_path",
    "plain_location",
    "store_for",
    "store_kind",
    "store_options_of",
]

# A path object-store paths spell as it is (no percent-encoding, no empty segment).
PLAIN_PATH = re.compile(r"^/[A-Za-z0-9._/=+@,-]+$")


def plain_location(url: str) -> bool:
    """Whether object-store paths spell ``url``'s path as it is (``PLAIN_PATH``)."""
    return bool(PLAIN_PATH.match("/" + parse_location(url).path.lstrip("/")))


def store_for(urls, storage) -> dict[str, str] | None:
    """The one store holding every file of ``urls`` (as :func:`store_options_of`), or
    ``None``: several stores, or a path object-store paths spell differently."""
    locations = {}
    for url in urls:
        if not plain_location(url):
            return None
        location = parse_location(url)
        locations.setdefault((location.scheme, location.authority, location.account), location)
    return store_options_of(list(locations.values()), storage)


def store_kind(url: str, storage) -> dict[str, str] | None:
    """The store for files under ``url`` (as :func:`store_options_of`)."""
    return store_options_of([parse_location(url)], storage)


def store_options_of(locations: list[StorageLocation], storage) -> dict[str, str] | None:
    """Store options for files at ``locations`` (one per scheme, bucket or container and
    account); ``None`` where the Rust store would not authenticate as the exact path does
    (ambient credentials, anonymous S3, service principals): those tables take the next
    path."""
    if all(location.scheme == "file" for location in locations):
        return {"kind": "local"}
    if len(locations) != 1:
        return None
    access = storage_access(locations[0], storage)
    if isinstance(access, S3Access):
        return _s3_options(access)
    if isinstance(access, GcsAccess):
        return _gcs_options(access)
    if isinstance(access, AzureAccess):
        return _azure_options(access)
    return None


def _endpoint(endpoint: Endpoint, url: str | None = None) -> dict[str, str]:
    options = {"endpoint": url or endpoint.url}
    if endpoint.http:
        options["allow_http"] = "true"
    return options


def _s3_options(access: S3Access) -> dict[str, str] | None:
    if access.credential != "keys" or access.addressing == "vhost":
        return None  # ambient or anonymous: the exact path resolves them as pyarrow does
    options = {"kind": "s3", "bucket": access.bucket, "region": access.effective_region}
    if access.endpoint is not None:
        options.update(_endpoint(access.endpoint))
    elif access.scheme == "http":
        return None
    options["access_key_id"] = access.access_key_id
    options["secret_access_key"] = access.secret_access_key
    if access.session_token:
        options["session_token"] = access.session_token
    return options


def _gcs_options(access: GcsAccess) -> dict[str, str] | None:
    options = {"kind": "gcs", "bucket": access.bucket}
    if access.credential == "token":
        options["token"] = access.token
    elif access.credential == "anonymous":
        options["anonymous"] = "true"
    else:
        return None  # ambient credentials: the exact path resolves them as pyarrow does
    if access.endpoint is not None:
        options.update(_endpoint(access.endpoint))
    return options


def _azure_options(access: AzureAccess) -> dict[str, str] | None:
    options = {"kind": "azure", "container": access.container, "account": access.account}
    if access.credential == "account_key":
        options["access_key"] = access.account_key
    elif access.credential == "sas_token":
        options["sas_token"] = access.sas_token
    else:
        return None  # service principals, managed identities: the exact path
    if access.endpoint is not None:
        options.update(_endpoint(access.endpoint, access.blob_url))
    return options


def object_path(url: str) -> str:
    """The file's path in the provider's store: the local path without its leading
    slash, or the key within the bucket."""
    location = parse_location(url)
    if location.scheme in ("s3", "gs", "az"):
        return location.path[len(location.authority) + 1 :]
    return location.path.lstrip("/")
