"""How to reach one store: the storage options resolved once, for every reader.

Three clients read a lake's files: pyarrow (the exact path, ``_filesystems``), the Rust
scan's object_store (``provider``) and Spark's Hadoop connectors (``spark``). Each used to
interpret the user's :class:`StorageOptions` on its own, and they drifted apart (one
took ``allow_http`` as "use http", another made the Azure endpoint host style where a
third made it path style). Here the options, and the location, become one frozen value
per store (:class:`S3Access`, :class:`GcsAccess`, :class:`AzureAccess`) holding every
decision: the region, the endpoint's scheme and host, path or virtual-host addressing,
which credential is used. Every default, environment variable, validation and error
message lives here; the adapters only spell these values in their client's terms.

Secrets (keys, tokens) are fields of these values, so their ``repr`` shows ``'***'``
instead, as :class:`StorageOptions` does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Literal

from ..errors import InvalidOptionError
from ._location import StorageLocation
from ._options import SECRET_FIELDS, StorageOptions

__all__ = [
    "DEFAULT_S3_REGION",
    "AzureAccess",
    "Endpoint",
    "GcsAccess",
    "LocalAccess",
    "S3Access",
    "StorageAccess",
    "azure_access",
    "gcs_access",
    "s3_access",
    "storage_access",
]

DEFAULT_S3_REGION = "us-east-1"  # no region option, AWS_REGION or AWS_DEFAULT_REGION
# Fields of the access values that hold secrets (``GcsAccess.token`` beside the options').
_SECRETS = frozenset({*SECRET_FIELDS, "token"})


def _secret_safe_repr(self) -> str:
    parts = []
    for f in fields(self):
        value = getattr(self, f.name)
        if value is None or value is False or value == "":
            continue
        shown = "***" if f.name in _SECRETS else value
        parts.append(f"{f.name}={shown!r}")
    return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True)
class Endpoint:
    """A service endpoint: ``scheme`` is ``'http'`` or ``'https'``, ``host`` is
    ``host[:port]`` (no trailing slash)."""

    scheme: str
    host: str

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}"

    @property
    def http(self) -> bool:
        return self.scheme == "http"


@dataclass(frozen=True)
class LocalAccess:
    """Local files: nothing to configure."""


@dataclass(frozen=True, repr=False)
class S3Access:
    """An S3 (or S3-compatible) bucket.

    Attributes:
        bucket: the bucket, ``''`` when not known (options checked on their own).
        region: the configured region (option, else ``AWS_REGION``, else
            ``AWS_DEFAULT_REGION``); ``None`` if none is: clients that must name one use
            :attr:`effective_region`.
        endpoint: a custom endpoint (MinIO, moto, a region's host), else ``None`` (AWS).
        scheme: ``'https'``, or ``'http'`` for a plain-http endpoint or ``use_ssl`` false.
        addressing: ``'path'`` or ``'vhost'``; ``None`` leaves it to the client on AWS
            (a custom endpoint without ``url_style`` is ``'path'``, as DuckDB assumes).
        anonymous: unsigned requests.
        access_key_id, secret_access_key, session_token: static credentials (all
            ``None``: the AWS chain of environment, profiles and instance metadata).
    """

    bucket: str = ""
    region: str | None = None
    endpoint: Endpoint | None = None
    scheme: str = "https"
    addressing: str | None = None
    anonymous: bool = False
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None

    __repr__ = __str__ = _secret_safe_repr

    @property
    def effective_region(self) -> str:
        return self.region or DEFAULT_S3_REGION

    @property
    def credential(self) -> Literal["keys", "anonymous", "ambient"]:
        return _credential("keys", self.access_key_id, self.anonymous)


@dataclass(frozen=True, repr=False)
class GcsAccess:
    """A Google Cloud Storage bucket.

    Attributes:
        bucket: the bucket, ``''`` when not known.
        endpoint: a custom endpoint (fake-gcs-server), else ``None``.
        project_id: the project, if given.
        token: a bare OAuth access token (it cannot be refreshed).
        anonymous: unauthenticated requests. Neither: Google's default credentials.
    """

    bucket: str = ""
    endpoint: Endpoint | None = None
    project_id: str | None = None
    token: str | None = None
    anonymous: bool = False

    __repr__ = __str__ = _secret_safe_repr

    @property
    def credential(self) -> Literal["token", "anonymous", "ambient"]:
        return _credential("token", self.token, self.anonymous)


@dataclass(frozen=True, repr=False)
class AzureAccess:
    """An Azure Blob Storage / ADLS Gen2 container.

    Attributes:
        container: the container, ``''`` when not known.
        account: the storage account (from the URL, the ``account_name`` option or
            ``AZURE_STORAGE_ACCOUNT_NAME``).
        endpoint: the Blob endpoint as given (scheme and host), else ``None`` (Azure's
            public cloud). A host starting with ``.`` is a cloud's suffix
            (``.blob.core.chinacloudapi.cn``).
        path_style: the endpoint names the account in the path, not in the host (an
            emulator such as Azurite): a host that is neither a suffix nor the
            account's own (``ACCOUNT.blob...``).
        account_key, sas_token: shared key or SAS credentials (at most one).
        client_id, tenant_id, client_secret: a service principal (all three), or a
            user-assigned managed identity (``client_id`` alone).
    """

    container: str = ""
    account: str = ""
    endpoint: Endpoint | None = None
    path_style: bool = False
    account_key: str | None = None
    sas_token: str | None = None
    client_id: str | None = None
    tenant_id: str | None = None
    client_secret: str | None = None

    __repr__ = __str__ = _secret_safe_repr

    @property
    def credential(
        self,
    ) -> Literal["account_key", "sas_token", "service_principal", "managed_identity", "ambient"]:
        if self.account_key:
            return "account_key"
        if self.sas_token:
            return "sas_token"
        if self.client_secret:
            return "service_principal"
        return "managed_identity" if self.client_id else "ambient"

    @property
    def blob_suffix(self) -> str | None:
        """The host-style endpoint's host without the account (``.blob.core.windows.net``),
        ``None`` for a path-style endpoint or none."""
        if self.endpoint is None or self.path_style:
            return None
        host = self.endpoint.host
        return host if host.startswith(".") else host[len(self.account) :]

    @property
    def blob_url(self) -> str | None:
        """The account's Blob service URL for the endpoint: ``scheme://host/ACCOUNT`` (path
        style) or ``scheme://ACCOUNT.suffix``; ``None`` without an endpoint."""
        if self.endpoint is None:
            return None
        if self.path_style:
            return f"{self.endpoint.url}/{self.account}"
        return f"{self.endpoint.scheme}://{self.account}{self.blob_suffix}"


StorageAccess = LocalAccess | S3Access | GcsAccess | AzureAccess


def _credential(kind: str, secret: str | None, anonymous: bool):
    """``kind`` when its secret is given, else unauthenticated or the ambient chain."""
    if secret:
        return kind
    return "anonymous" if anonymous else "ambient"


def endpoint_of(
    value: str, option: str, allow_http: bool | None, use_ssl: bool | None = None
) -> Endpoint:
    """``http://host:9000/`` -> ``Endpoint('http', 'host:9000')``; a schemeless value is
    http if ``allow_http`` is true or ``use_ssl`` false, else https."""
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
    return Endpoint(scheme, host.rstrip("/"))


def _endpoint(options: StorageOptions, option: str, use_ssl: bool | None = None):
    """The endpoint of the store's own ``option``, else of ``endpoint``; ``None``: neither
    is given (the store's public service)."""
    own = getattr(options, option)
    value = own or options.endpoint
    if not value:
        return None
    return endpoint_of(value, option if own else "endpoint", options.allow_http, use_ssl)


def s3_access(options: StorageOptions, bucket: str = "") -> S3Access:
    """The :class:`S3Access` the options describe."""
    region = options.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    endpoint = _endpoint(options, "s3_endpoint", options.use_ssl)
    if endpoint is not None:
        scheme = endpoint.scheme
    else:
        scheme = "http" if options.use_ssl is False else "https"
    if bool(options.access_key_id) != bool(options.secret_access_key):
        raise InvalidOptionError(
            "storage options access_key_id and secret_access_key must be given together "
            "(or neither, to use the AWS environment / profile credentials)"
        )
    if options.session_token and not options.access_key_id:
        raise InvalidOptionError(
            "storage option session_token needs access_key_id and secret_access_key too"
        )
    if options.anonymous and options.access_key_id:
        raise InvalidOptionError(
            "storage option anonymous excludes access_key_id and secret_access_key"
        )
    # A custom endpoint (MinIO, moto) serves paths unless url_style says otherwise.
    addressing = options.url_style or ("path" if endpoint is not None else None)
    return S3Access(
        bucket=bucket,
        region=region or None,
        endpoint=endpoint,
        scheme=scheme,
        addressing=addressing,
        anonymous=bool(options.anonymous),
        access_key_id=options.access_key_id,
        secret_access_key=options.secret_access_key,
        session_token=options.session_token if options.access_key_id else None,
    )


def gcs_access(options: StorageOptions, bucket: str = "") -> GcsAccess:
    """The :class:`GcsAccess` the options describe."""
    endpoint = _endpoint(options, "gcs_endpoint")
    if options.anonymous and options.google_service_account_token:
        raise InvalidOptionError("storage option anonymous excludes google_service_account_token")
    return GcsAccess(
        bucket=bucket,
        endpoint=endpoint,
        project_id=options.project_id,
        token=options.google_service_account_token,
        anonymous=bool(options.anonymous),
    )


def azure_access(location: StorageLocation, options: StorageOptions) -> AzureAccess:
    """The :class:`AzureAccess` for ``location``'s container."""
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
    endpoint = _endpoint(options, "blob_storage_authority")
    # an emulator (Azurite) names the account in the path; a cloud in the host
    path_style = endpoint is not None and not (
        endpoint.host.startswith(".") or endpoint.host.startswith(account + ".")
    )
    return AzureAccess(
        container=location.authority,
        account=account,
        endpoint=endpoint,
        path_style=path_style,
        account_key=options.account_key,
        sas_token=options.sas_token,
        client_id=options.client_id,
        tenant_id=options.tenant_id,
        client_secret=options.client_secret,
    )


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


def storage_access(location: StorageLocation, options: StorageOptions | None) -> StorageAccess:
    """How to reach ``location``'s store with ``options``, every choice made.

    Raises:
        InvalidOptionError: the options cannot configure this store (credentials of
            another store, only one of access key / secret, no Azure account, a bad
            endpoint, ...).
    """
    options = StorageOptions.from_user(options)
    _refuse_foreign_credentials(location, options)
    if location.scheme == "s3":
        return s3_access(options, location.authority)
    if location.scheme == "gs":
        return gcs_access(options, location.authority)
    if location.scheme == "az":
        return azure_access(location, options)
    if location.scheme == "file":
        return LocalAccess()
    raise InvalidOptionError(f"unsupported storage scheme {location.scheme!r} in {location.url!r}")
