"""Turn pyarrow's storage ``OSError`` into this package's errors, with a hint.

pyarrow reports every storage failure as ``OSError`` with the SDK's text inside (``AWS
Error ACCESS_DENIED during HeadObject``, ``curlCode: 7``, ``Path does not exist``). A
user needs to know which of three things went wrong, because each has a different fix:
the file is gone (:class:`DataFileMissingError`: wrong data_path, or deleted outside
DuckLake), the credentials or bucket are wrong, or the endpoint cannot be reached
(:class:`StorageError`). Classification is by message text, so it is best effort; an
unrecognised message still becomes a :class:`StorageError` that quotes the original.
"""

from __future__ import annotations

import errno
import re

from ..common import remember_secret, scrub
from ..errors import DataFileMissingError, DuckLakeError, StorageError
from ._options import SECRET_FIELDS, StorageOptions

__all__ = ["redact", "translate_storage_error"]

_BUCKET = (
    "no_such_bucket",
    "nosuchbucket",
    "bucket does not exist",
    "containernotfound",
    "container_not_found",
    "specified container does not exist",
)
_DENIED = (
    "access_denied",
    "accessdenied",
    "access denied",
    "forbidden",
    "invalid_access_key_id",
    "invalidaccesskeyid",
    "signature_does_not_match",
    "signaturedoesnotmatch",
    "expired_token",
    "expiredtoken",
    "invalidtoken",
    "invalid_token",
    "unauthorized",
    "authorizationfailure",
    "authenticationfailed",
    "permission denied",
    "missing_authentication_token",
    "invalid_client_token_id",
    "status code: 403",
    "status code: 401",
    "no credentials",
    "credentials not found",
)
_REGION = (
    "permanent_redirect",
    "permanentredirect",
    "authorizationheadermalformed",
    "wrong region",
    "incorrect region",
    "region_mismatch",
)
_NETWORK = (
    "network_connection",
    "curlcode",
    "could not connect",
    "couldn't connect",
    "connection refused",
    "could not resolve",
    "couldn't resolve",
    "timed out",
    "timeout",
    "connection reset",
    "ssl",
    "tls",
    "name or service not known",
    "unreachable",
    "broken pipe",
    "host not found",
)
_MISSING = (
    "no_such_key",
    "nosuchkey",
    "does not exist",
    "not found",
    "no such file",
    "blobnotfound",
    "pathnotfound",
    "resource_not_found",
    "status code: 404",
)
_CREDENTIAL_HINTS = {
    "s3": "check the access key / secret (options access_key_id and secret_access_key, or "
    "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / the AWS profile), the session token if "
    "the keys are temporary, and that they may read this bucket",
    "gs": "check the credentials (option google_service_account_token, or "
    "GOOGLE_APPLICATION_CREDENTIALS) and that they may read this bucket",
    "az": "check the credentials (options account_key, sas_token, or client_id / tenant_id / "
    "client_secret) and that they may read this container",
    "file": "check that this process may read the file and its directories",
}
_SCHEME_IN_TEXT = re.compile(r"\b(s3a?|gcs|gs|az|azure|abfss?)://([^/\s@'\"]+@)?([^/\s'\"]+)")
_BUCKET_IN_TEXT = re.compile(r"(?:bucket|container) '([^']+)'")
_SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs"}


def redact(text: str, options: StorageOptions | None = None) -> str:
    """Remove secret option values and URL-embedded credentials from ``text``.

    SDK messages may quote request URLs (with SAS signatures) and the values that were
    configured (an S3 error body can echo the access key id); an error message must never
    carry them onward. Every ``StorageOptions`` remembers its secrets when it is made, so
    ``options`` only matters for values made some other way.
    """
    if options is not None:
        for name in SECRET_FIELDS:
            remember_secret(getattr(options, name))
    return scrub(text)


def _contains(message: str, needles: tuple[str, ...]) -> bool:
    return any(n in message for n in needles)


def _scheme_and_bucket(what: str, message: str) -> tuple[str | None, str | None]:
    found = _SCHEME_IN_TEXT.search(what) or _SCHEME_IN_TEXT.search(message)
    scheme = bucket = None
    if found:
        scheme = _SCHEMES.get(found.group(1).lower(), "az")
        bucket = (found.group(2) or "").rstrip("@") or found.group(3)
    named = _BUCKET_IN_TEXT.search(message)
    if named:
        bucket = named.group(1)
    return scheme, bucket


def translate_storage_error(
    exc: OSError, *, what: str, options: StorageOptions | None = None
) -> DuckLakeError:
    """Classify a storage ``OSError`` and return the error to raise (``raise ... from exc``).

    Args:
        exc: what pyarrow (or the OS) raised.
        what: a human description of the object, e.g. ``"data file s3://b/x.parquet of
            table main.t"``; it starts the message.
        options: the storage options in use, only to scrub their secrets from the text.

    Returns:
        :class:`DataFileMissingError` when the object does not exist, else
        :class:`StorageError` (missing bucket, credentials, region, network, other). An
        exception that already is a :class:`DuckLakeError` is returned unchanged.
    """
    if isinstance(exc, DuckLakeError):
        return exc
    detail = redact(str(exc), options)[:600]
    # The original error stays chained as the cause and is printed with tracebacks.
    exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)
    message = detail.lower()
    scheme, bucket = _scheme_and_bucket(what, detail)
    if scheme is None and (
        isinstance(exc, (PermissionError, FileNotFoundError)) or "local file" in message
    ):
        scheme = "file"
    if _contains(message, _BUCKET):
        return StorageError(
            f"cannot read {what}: bucket {bucket or '(unknown)'!r} does not exist (or is not "
            f"visible with these credentials). Check the bucket or container name in the "
            f"lake's data_path (or pass the data_path override) and the endpoint. [{detail}]"
        )
    if isinstance(exc, PermissionError) or _contains(message, _DENIED):
        hint = _CREDENTIAL_HINTS.get(scheme or "s3")
        return StorageError(f"access denied reading {what}: {hint}. [{detail}]")
    if _contains(message, _REGION):
        return StorageError(
            f"cannot read {what}: the bucket is in another region than the one configured; "
            f"set the region option (or AWS_REGION) to the bucket's region. [{detail}]"
        )
    if _contains(message, _NETWORK):
        return StorageError(
            f"could not reach storage for {what}: check the endpoint option (and allow_http "
            f"for a plain-http endpoint), the network and any proxy. [{detail}]"
        )
    if (
        isinstance(exc, FileNotFoundError)
        or exc.errno == errno.ENOENT
        or _contains(message, _MISSING)
    ):
        return DataFileMissingError(
            f"{what} does not exist on storage. It was deleted or moved outside DuckLake, "
            f"or the lake's data_path does not point at its files: check data_path (pass "
            f"the data_path override if the lake was moved) and that the bucket exists. "
            f"[{detail}]"
        )
    return StorageError(
        f"storage request failed for {what}; check the storage options and that the object "
        f"is readable. [{detail}]"
    )
