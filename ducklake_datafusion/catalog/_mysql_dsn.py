"""MySQL/MariaDB catalog connection strings -> driver keyword arguments, and their redaction.

DuckDB's ``ATTACH 'ducklake:mysql:...'`` takes the MySQL extension's spelling: space
separated ``key=value`` pairs (``host``, ``port``, ``user``, ``password``/``passwd``,
``database``/``db``, ``socket``, ``ssl_mode``, ``ssl_ca``, ...), each missing one taken from
the ``MYSQL_*`` environment variables as the extension does. A ``mysql://user:pass@host:port/db``
URL is accepted too. Parsing is kept apart from the backend so that the description of a
catalog (in every error message) is made from the parsed keys, with the password left out,
never from the text the user typed.
"""

from __future__ import annotations

import getpass
import os
import re
import urllib.parse
from dataclasses import dataclass

from ..errors import InvalidOptionError

__all__ = ["MySQLTarget", "parse_mysql"]

_ALIASES = {"passwd": "password", "db": "database", "dbname": "database"}
_KNOWN = {
    "host", "port", "user", "password", "database", "socket", "ssl_mode", "ssl_ca",
    "ssl_capath", "ssl_cert", "ssl_key", "ssl_cipher", "ssl_crl", "ssl_crlpath", "compress",
}  # fmt: skip
# The MySQL extension's fallbacks for keys the string leaves out (libmysqlclient's names).
_ENVIRONMENT = {
    "host": "MYSQL_HOST",
    "port": "MYSQL_TCP_PORT",
    "user": "MYSQL_USER",
    "password": "MYSQL_PWD",
    "database": "MYSQL_DATABASE",
    "socket": "MYSQL_UNIX_PORT",
}
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S*)")
_SSL_MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")


@dataclass(frozen=True)
class MySQLTarget:
    """Where a MySQL catalog is: the parsed keys (password included, never printed)."""

    keys: tuple[tuple[str, str], ...]

    def get(self, key: str, default: str | None = None) -> str | None:
        return dict(self.keys).get(key, default)

    @property
    def database(self) -> str | None:
        return self.get("database")

    def describe(self) -> str:
        """``host=... port=... user=... database=...``: what names the catalog in errors."""
        shown = [f"{k}={v}" for k, v in self.keys if k in ("host", "port", "socket", "user")]
        shown.append(f"database={self.database}")
        return " ".join(shown)

    def connect_kwargs(self) -> dict:
        """Keyword arguments of ``pymysql.connect`` (without session options)."""
        keys = dict(self.keys)
        kwargs: dict = {"user": keys.get("user") or getpass.getuser()}
        if keys.get("socket"):
            kwargs["unix_socket"] = keys["socket"]
        kwargs["host"] = keys.get("host") or "localhost"
        if keys.get("port"):
            kwargs["port"] = int(keys["port"])
        if keys.get("password") is not None:
            kwargs["password"] = keys["password"]
        kwargs["database"] = keys["database"]
        if keys.get("compress", "").lower() in ("1", "true"):
            kwargs["compress"] = True
        mode = (keys.get("ssl_mode") or "preferred").lower()
        ssl = {
            k[4:]: keys[k]
            for k in ("ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_cipher")
            if keys.get(k)
        }
        if mode == "disabled":
            kwargs["ssl_disabled"] = True
        elif mode != "preferred" or ssl:
            ssl["check_hostname"] = mode == "verify_identity"
            if mode in ("verify_ca", "verify_identity") and "ca" not in ssl and "capath" not in ssl:
                ssl["verify_mode"] = "required"  # the system's certificate authorities
            kwargs["ssl"] = ssl
        return kwargs


def parse_mysql(text: str) -> MySQLTarget:
    """Parse ``host=... database=...`` (DuckDB's spelling) or a ``mysql://`` URL."""
    keys: dict[str, str] = {}
    if text.lower().startswith(("mysql://", "mariadb://")):
        url = urllib.parse.urlsplit(text)
        try:
            port = url.port
        except ValueError:
            raise InvalidOptionError(
                _bad(url.netloc.rpartition("@")[2], "the port is not a number")
            ) from None
        if url.hostname:
            keys["host"] = url.hostname
        if port:
            keys["port"] = str(port)
        if url.username:
            keys["user"] = urllib.parse.unquote(url.username)
        if url.password is not None:
            keys["password"] = urllib.parse.unquote(url.password)
        if url.path.strip("/"):
            keys["database"] = urllib.parse.unquote(url.path.strip("/"))
        for key, value in urllib.parse.parse_qsl(url.query):
            keys[_ALIASES.get(key.lower(), key.lower())] = value
    else:
        rest = text.strip()
        while rest:
            match = _PAIR.match(rest)
            if match is None:
                raise InvalidOptionError(_bad(_safe(rest), "expected key=value pairs"))
            key, value = match.group(1).lower(), match.group(2)
            if value[:1] in ("'", '"') and len(value) > 1 and value[-1] == value[0]:
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            keys[_ALIASES.get(key, key)] = value
            rest = rest[match.end() :].lstrip()
    unknown = sorted(set(keys) - _KNOWN)
    if unknown:
        raise InvalidOptionError(
            _bad(
                _describe_keys(keys),
                f"unknown keys {unknown}; DuckDB's MySQL keys are {sorted(_KNOWN)}",
            )
        )
    for key, variable in _ENVIRONMENT.items():
        if key not in keys and os.environ.get(variable):
            keys[key] = os.environ[variable]
    if not keys.get("database"):
        raise InvalidOptionError(
            _bad(_describe_keys(keys), "no database: add database=<the catalog's database>")
        )
    if keys.get("port") and not keys["port"].isdigit():
        raise InvalidOptionError(_bad(_describe_keys(keys), "the port is not a number"))
    if (keys.get("ssl_mode") or "preferred").lower() not in _SSL_MODES:
        raise InvalidOptionError(
            _bad(_describe_keys(keys), f"ssl_mode must be one of {_SSL_MODES}")
        )
    return MySQLTarget(tuple(keys.items()))


def _describe_keys(keys: dict[str, str]) -> str:
    return " ".join(f"{k}={'***' if k == 'password' else v}" for k, v in keys.items())


def _safe(text: str) -> str:
    """Unparsed text with anything after a password key hidden."""
    return re.sub(r"(passw(?:or)?d\s*=).*", r"\1***", text, flags=re.IGNORECASE)


def _bad(shown: str, why: str) -> str:
    return (
        f"MySQL catalog 'mysql:{shown}': {why} (DuckDB's spelling: 'mysql:host=... port=... "
        "user=... password=... database=...', or 'mysql://user:password@host:port/database')"
    )
