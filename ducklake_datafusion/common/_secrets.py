"""Secrets never leave the process in a message: one scrubber for every error we raise.

Storage SDKs quote requests in their error texts (an S3 403 body can echo the access key
id and the session token; Azure messages quote SAS-signed URLs). Passing the right
options to every place that formats such a text is easy to get wrong, so instead every
secret this process was given is remembered here, and :class:`~ducklake_datafusion.errors.DuckLakeError`
scrubs its own message on construction. Whatever path an error takes, it cannot carry a
credential onward.
"""

from __future__ import annotations

import os
import re
import threading

__all__ = ["remember_secret", "scrub"]

_MIN_LENGTH = 4  # shorter values would scrub ordinary words
_MAX_REMEMBERED = 1024
_known: set[str] = set()
_lock = threading.Lock()

# Secrets the storage SDKs read from the environment on their own.
_SECRET_ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET",
)  # fmt: skip

# Credentials that appear inside URLs and headers quoted by SDK messages.
_URL_SECRETS = re.compile(
    r"(?i)\b(sig|x-amz-signature|x-amz-credential|x-amz-security-token|access_token|"
    r"token|code|awsaccesskeyid|signature)=([^&\s'\"<]+)"
)
_XML_SECRETS = re.compile(
    r"(?i)<(AWSAccessKeyId|AccessKeyId|SecurityToken|SessionToken|SignatureProvided|"
    r"StringToSign|StringToSignBytes|CanonicalRequest|CanonicalRequestBytes)>[^<]*</\1>"
)


def remember_secret(value: object) -> None:
    """Scrub ``value`` from every later message of this process."""
    if isinstance(value, str) and len(value) >= _MIN_LENGTH:
        with _lock:
            if len(_known) < _MAX_REMEMBERED:
                _known.add(value)


def scrub(text: str) -> str:
    """``text`` without any remembered secret, secret environment value or URL credential."""
    with _lock:
        values = set(_known)
    values.update(
        v for v in (os.environ.get(k) for k in _SECRET_ENV) if v and len(v) >= _MIN_LENGTH
    )
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    text = _XML_SECRETS.sub(lambda m: f"<{m.group(1)}>***</{m.group(1)}>", text)
    return _URL_SECRETS.sub(lambda m: f"{m.group(1)}=***", text)
