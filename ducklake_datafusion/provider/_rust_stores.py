"""Where a Rust provider reads its files: the object_store options of one store.

The Rust scan builds its own store (``rust/src/stores.rs``) from these options: local
files, one S3 or GCS bucket, or one Azure container, each with explicit credentials.
They are spelled from the store's access value (``pathres.storage_access``), which made
every choice (region, endpoint, addressing, credential); the user's options are not read
here.
Anything it would authenticate differently from the exact path (ambient credentials,
anonymous S3, service principals), several stores, or paths object-store paths spell
differently gives ``None``: those files are read by the exact path instead.
"""

from __future__ import annotations

from ..pathres import (
    AzureAccess,
    Endpoint,
    GcsAccess,
    S3Access,
    StorageLocation,
    parse_location,
    storage_access,
)
from ..scan import DataFileTask, ScanPlan
from ._file_layouts import SAFE_PATH

__all__ = ["object_path", "plain_location", "store_kind", "store_options", "store_readable"]


def store_options(files, plan: ScanPlan) -> dict[str, str] | None:
    """The provider's store: local files, or one bucket of S3 or GCS, or one Azure
    container; ``None`` if several, or a file the provider does not read (encrypted,
    name-mapped)."""
    locations = {}
    for task in files:
        if not store_readable(task):
            return None
        location = parse_location(task.file.url)
        locations.setdefault((location.scheme, location.authority, location.account), location)
    return _options(list(locations.values()), plan.storage)


def store_readable(task: DataFileTask) -> bool:
    """Whether the Rust store reads the file as it is: not encrypted, not name-mapped, at
    a path object-store paths spell as it is."""
    if task.encryption_key is not None or task.name_mapping is not None:
        return False
    return plain_location(task.file.url)


def plain_location(url: str) -> bool:
    """Whether object-store paths spell ``url``'s path as it is (``SAFE_PATH``)."""
    return bool(SAFE_PATH.match("/" + parse_location(url).path.lstrip("/")))


def store_kind(url: str, storage) -> dict[str, str] | None:
    """The provider's store for files under ``url`` (as :func:`store_options`)."""
    return _options([parse_location(url)], storage)


def _options(locations: list[StorageLocation], storage) -> dict[str, str] | None:
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
