"""Where a Rust provider reads its files: the object_store options of one store.

The Rust scan builds its own store (``rust/src/stores.rs``) from these options: local
files, one S3 or GCS bucket, or one Azure container, each with explicit credentials.
Anything it would authenticate differently from the exact path (ambient credentials,
anonymous S3, service principals), several stores, or paths object-store paths spell
differently gives ``None``: those files are read by the exact path instead.
"""

from __future__ import annotations

from ..pathres import StorageLocation, azure_kwargs, gcs_kwargs, parse_location, s3_kwargs
from ..scan import DataFileTask, ScanPlan
from ._file_layouts import SAFE_PATH

__all__ = ["object_path", "plain_location", "store_kind", "store_options", "store_readable"]


def store_options(files, plan: ScanPlan) -> dict[str, str] | None:
    """The provider's store: local files, or one bucket of S3 or GCS, or one Azure
    container; ``None`` if several, or a file the provider does not read (encrypted,
    name-mapped)."""
    locations = set()
    for task in files:
        if not store_readable(task):
            return None
        location = parse_location(task.file.url)
        locations.add((location.scheme, location.authority, location.account))
    return _options(locations, plan.storage)


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
    location = parse_location(url)
    return _options({(location.scheme, location.authority, location.account)}, storage)


def _options(locations: set, storage) -> dict[str, str] | None:
    """Store options for files at ``locations`` (scheme, bucket or container, account);
    ``None`` where the Rust store would not authenticate as the exact path does (ambient
    credentials, anonymous S3, service principals): those tables take the next path."""
    schemes = {scheme for scheme, _, _ in locations}
    if not schemes or schemes == {"file"}:
        return {"kind": "local"}
    if len(locations) != 1:
        return None
    scheme, bucket, account = next(iter(locations))
    if scheme == "s3":
        return _s3_options(bucket, storage)
    if scheme == "gs":
        return _gcs_options(bucket, storage)
    if scheme == "az":
        return _azure_options(bucket, account, storage)
    return None


def _s3_options(bucket: str, storage) -> dict[str, str] | None:
    kwargs = s3_kwargs(storage)
    if kwargs.get("anonymous") or kwargs.get("force_virtual_addressing"):
        return None
    if not kwargs.get("access_key"):
        return None  # ambient credentials: the exact path resolves them as pyarrow does
    options = {"kind": "s3", "bucket": bucket, "region": kwargs["region"]}
    if "endpoint_override" in kwargs:
        options["endpoint"] = f"{kwargs['scheme']}://{kwargs['endpoint_override']}"
        if kwargs["scheme"] == "http":
            options["allow_http"] = "true"
    elif kwargs.get("scheme") == "http":
        return None
    for ours, theirs in (
        ("access_key_id", "access_key"),
        ("secret_access_key", "secret_key"),
        ("session_token", "session_token"),
    ):
        if kwargs.get(theirs):
            options[ours] = kwargs[theirs]
    return options


def _gcs_options(bucket: str, storage) -> dict[str, str] | None:
    kwargs = gcs_kwargs(storage)
    options = {"kind": "gcs", "bucket": bucket}
    if kwargs.get("access_token"):
        options["token"] = kwargs["access_token"]
    elif kwargs.get("anonymous"):
        options["anonymous"] = "true"
    else:
        return None  # ambient credentials: the exact path resolves them as pyarrow does
    if "endpoint_override" in kwargs:
        options["endpoint"] = f"{kwargs['scheme']}://{kwargs['endpoint_override']}"
        if kwargs["scheme"] == "http":
            options["allow_http"] = "true"
    return options


def _azure_options(container: str, account: str, storage) -> dict[str, str] | None:
    location = StorageLocation("az", container, container, f"az://{container}", account)
    kwargs = azure_kwargs(location, storage)
    options = {"kind": "azure", "container": container, "account": kwargs["account_name"]}
    if kwargs.get("account_key"):
        options["access_key"] = kwargs["account_key"]
    elif kwargs.get("sas_token"):
        options["sas_token"] = kwargs["sas_token"]
    else:
        return None  # service principals, managed identities: the exact path
    if "blob_storage_authority" in kwargs:
        scheme, host = kwargs["blob_storage_scheme"], kwargs["blob_storage_authority"]
        account_name = options["account"]
        # an emulator (Azurite) names the account in the path; a cloud endpoint in the host
        path_style = not host.startswith(account_name + ".")
        options["endpoint"] = f"{scheme}://{host}" + (f"/{account_name}" if path_style else "")
        if scheme == "http":
            options["allow_http"] = "true"
    return options


def object_path(url: str) -> str:
    """The file's path in the provider's store: the local path without its leading
    slash, or the key within the bucket."""
    location = parse_location(url)
    if location.scheme in ("s3", "gs", "az"):
        return location.path[len(location.authority) + 1 :]
    return location.path.lstrip("/")
