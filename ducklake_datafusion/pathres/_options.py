"""Object storage options: one normalised, immutable, secret-safe value.

People copy option names from DuckDB secrets, AWS/Azure environment variables, boto3,
object_store and Spark, so several spellings are accepted for each setting. Keys are
case-insensitive; a ``None`` value means "not given". Unknown keys are rejected rather
than ignored, because a silently ignored credential shows up much later as "access
denied". Unset settings fall back to the provider's own defaults (for S3 the standard
AWS chain: environment, ``~/.aws`` profiles, instance metadata).

Secret values are marked (S) and never shown by ``repr``/``str``.

=================================  =====================================  =======================
canonical key                      accepted aliases                       mirrors env var
=================================  =====================================  =======================
*any store*
endpoint                           (for stores without their own)
allow_http (bool)                  aws_allow_http                         AWS_ALLOW_HTTP
anonymous (bool, S3 and GCS)
*S3 and S3-compatible (MinIO)*
s3_endpoint                        endpoint_url, aws_endpoint_url,        AWS_ENDPOINT_URL
                                   aws_endpoint
region                             aws_region, s3_region,                 AWS_REGION
                                   aws_default_region
access_key_id (S)                  aws_access_key_id, key_id,             AWS_ACCESS_KEY_ID
                                   s3_access_key_id
secret_access_key (S)              aws_secret_access_key, secret,         AWS_SECRET_ACCESS_KEY
                                   s3_secret_access_key
session_token (S)                  aws_session_token, s3_session_token    AWS_SESSION_TOKEN
url_style ('path' | 'vhost')       s3_url_style; bools force_path_style,  AWS_VIRTUAL_HOSTED_
                                   (aws_)virtual_hosted_style_request     STYLE_REQUEST
use_ssl (bool, false = http)       s3_use_ssl
*Google Cloud Storage*
google_service_account_token (S)   access_token, gcs_access_token
gcs_endpoint                       google_endpoint                        STORAGE_EMULATOR_HOST
project_id                         google_project_id, gcs_project_id      GOOGLE_CLOUD_PROJECT
*Azure Blob Storage / ADLS Gen2*
account_name                       azure_storage_account_name,            AZURE_STORAGE_
                                   azure_account_name                     ACCOUNT_NAME
account_key (S)                    azure_storage_account_key,             AZURE_STORAGE_
                                   azure_account_key                      ACCOUNT_KEY
sas_token (S)                      azure_storage_sas_token                AZURE_STORAGE_SAS_TOKEN
client_id                          azure_client_id                        AZURE_CLIENT_ID
tenant_id                          azure_tenant_id                        AZURE_TENANT_ID
client_secret (S)                  azure_client_secret                    AZURE_CLIENT_SECRET
blob_storage_authority             azure_endpoint (host:port or URL)
=================================  =====================================  =======================

This package itself reads only ``AWS_REGION``/``AWS_DEFAULT_REGION`` (the region when
none is given; S3 clients that must name one then use ``us-east-1``) and
``AZURE_STORAGE_ACCOUNT_NAME`` (pyarrow needs the account explicitly), both in
:mod:`._access`; the other variables are read, if at all, by the storage SDKs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..common import remember_secret
from ..errors import InvalidOptionError

__all__ = ["ACCEPTED_KEYS", "SECRET_FIELDS", "StorageOptions"]

_BOOLS = {"allow_http", "anonymous", "use_ssl"}
_SECRETS = {
    "access_key_id",
    "secret_access_key",
    "session_token",
    "google_service_account_token",
    "account_key",
    "sas_token",
    "client_secret",
}
SECRET_FIELDS: tuple[str, ...] = tuple(sorted(_SECRETS))
_ALIASES: dict[str, str] = {
    "aws_allow_http": "allow_http",
    "endpoint_url": "s3_endpoint",
    "aws_endpoint_url": "s3_endpoint",
    "aws_endpoint": "s3_endpoint",
    "aws_region": "region",
    "s3_region": "region",
    "aws_default_region": "region",
    "aws_access_key_id": "access_key_id",
    "key_id": "access_key_id",
    "s3_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "secret": "secret_access_key",
    "s3_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
    "s3_session_token": "session_token",
    "s3_url_style": "url_style",
    "s3_use_ssl": "use_ssl",
    "access_token": "google_service_account_token",
    "gcs_access_token": "google_service_account_token",
    "google_endpoint": "gcs_endpoint",
    "google_project_id": "project_id",
    "gcs_project_id": "project_id",
    "azure_storage_account_name": "account_name",
    "azure_account_name": "account_name",
    "azure_storage_account_key": "account_key",
    "azure_account_key": "account_key",
    "azure_storage_sas_token": "sas_token",
    "azure_client_id": "client_id",
    "azure_tenant_id": "tenant_id",
    "azure_client_secret": "client_secret",
    "azure_endpoint": "blob_storage_authority",
}
# Bool spellings of url_style: key -> url_style when the value is true / false.
_STYLE_BOOLS = {
    "force_path_style": ("path", "vhost"),
    "virtual_hosted_style_request": ("vhost", "path"),
    "aws_virtual_hosted_style_request": ("vhost", "path"),
}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class StorageOptions:
    """Normalised storage options; build with :meth:`from_user`.

    Frozen and made of plain strings and bools so it can be hashed (filesystem cache
    key), pickled (sent to worker processes) and compared. ``repr``/``str`` replace
    secret values with ``'***'`` so options can be logged and shown in errors.
    """

    endpoint: str | None = None
    allow_http: bool | None = None
    anonymous: bool | None = None
    s3_endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    url_style: str | None = None
    use_ssl: bool | None = None
    google_service_account_token: str | None = None
    gcs_endpoint: str | None = None
    project_id: str | None = None
    account_name: str | None = None
    account_key: str | None = None
    sas_token: str | None = None
    client_id: str | None = None
    tenant_id: str | None = None
    client_secret: str | None = None
    blob_storage_authority: str | None = None

    @classmethod
    def from_user(cls, options: Mapping[str, Any] | StorageOptions | None) -> StorageOptions:
        """Validate and normalise what the user passed.

        Args:
            options: a mapping using any accepted spelling (see the module docstring),
                an existing :class:`StorageOptions` (returned as is), or ``None``.

        Raises:
            InvalidOptionError: an unknown key, a value of the wrong type, two spellings
                of one setting with different values, or a bad ``url_style``.
        """
        if options is None:
            return cls()
        if isinstance(options, StorageOptions):
            return options
        if not isinstance(options, Mapping):
            raise InvalidOptionError(
                f"storage options must be a mapping of option name to value, "
                f"not {type(options).__name__}"
            )
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for raw_key, raw_value in options.items():
            if raw_value is None:
                continue
            key = str(raw_key).strip().lower()
            name, value = _normalise(raw_key, key, raw_value)
            if name in values and values[name] != value:
                shown = "" if name in _SECRETS else f" ({values[name]!r} and {value!r})"
                raise InvalidOptionError(
                    f"storage options {sources[name]!r} and {raw_key!r} both set "
                    f"{name!r} to different values{shown}; pass only one of them"
                )
            values[name] = value
            sources[name] = str(raw_key)
        return cls(**values)

    def __post_init__(self) -> None:
        # Remembered so that no error message of this process can quote them (_secrets).
        for name in SECRET_FIELDS:
            remember_secret(getattr(self, name))

    def __reduce__(self):
        # Unpickling (Spark workers) goes through __init__, so workers scrub them too.
        return (_rebuild, (tuple((f.name, getattr(self, f.name)) for f in fields(self)),))

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                shown = "***" if f.name in _SECRETS else value
                parts.append(f"{f.name}={shown!r}")
        return f"StorageOptions({', '.join(parts)})"

    __str__ = __repr__


def _rebuild(items: tuple[tuple[str, Any], ...]) -> StorageOptions:
    return StorageOptions(**dict(items))


_CANONICAL = tuple(f.name for f in fields(StorageOptions))
ACCEPTED_KEYS: tuple[str, ...] = tuple(sorted({*_CANONICAL, *_ALIASES, *_STYLE_BOOLS}))


def _to_bool(raw_key: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InvalidOptionError(
        f"storage option {raw_key!r} must be true or false (a bool or 'true'/'false'), "
        f"got {value!r}"
    )


def _normalise(raw_key: Any, key: str, value: Any) -> tuple[str, Any]:
    if key in _STYLE_BOOLS:
        when_true, when_false = _STYLE_BOOLS[key]
        return "url_style", when_true if _to_bool(raw_key, value) else when_false
    name = _ALIASES.get(key, key)
    if name not in _CANONICAL:
        raise InvalidOptionError(
            f"unknown storage option {raw_key!r}; accepted options are: {', '.join(ACCEPTED_KEYS)}"
        )
    if name in _BOOLS:
        return name, _to_bool(raw_key, value)
    if not isinstance(value, str):
        shown = "" if name in _SECRETS else f", got {type(value).__name__}"
        raise InvalidOptionError(f"storage option {raw_key!r} must be a string{shown}")
    if name == "url_style":
        value = value.strip().lower()
        if value not in ("path", "vhost"):
            raise InvalidOptionError(
                f"storage option {raw_key!r} must be 'path' or 'vhost', got {value!r}"
            )
    return name, value
