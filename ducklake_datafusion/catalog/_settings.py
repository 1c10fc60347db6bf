"""Step 0 of the read path: a catalog's global settings, checked for a format it reads.

Every read starts here, so that a database that is no DuckLake catalog, or a catalog of a
format version this reader does not know, is refused with what to do about it before
anything is misread. The validated settings are kept in the backend's cache for a while:
they change only when the catalog is migrated.
"""

from __future__ import annotations

import time

from ..errors import NotADuckLakeCatalogError, UnsupportedVersionError
from ._backend import MetadataSession
from ._format import NEWEST_VERSION, READ_VERSIONS

__all__ = ["SETTINGS_TTL_SECONDS", "SUPPORTED_VERSIONS", "read_settings"]

SUPPORTED_VERSIONS = READ_VERSIONS
SETTINGS_TTL_SECONDS = 60.0


def read_settings(session: MetadataSession, description: str) -> dict[str, str]:
    """Step 0: global settings; checks the format version.

    The validated settings are kept in the backend's cache for ``SETTINGS_TTL_SECONDS``:
    they change only when the catalog is migrated, and re-reading them would cost two
    queries on every schema, table and scan look-up.
    """
    cached = session.cache.get("settings")
    if cached is not None and time.monotonic() - cached[0] < SETTINGS_TTL_SECONDS:
        return cached[1]
    settings = _read_settings(session, description)
    session.cache["settings"] = (time.monotonic(), settings)
    return settings


def _read_settings(session: MetadataSession, description: str) -> dict[str, str]:
    if not session.has_table("ducklake_metadata"):
        raise NotADuckLakeCatalogError(
            f"{description} has no ducklake_metadata table, so it is not a DuckLake catalog; "
            "pass the catalog database that DuckDB's ATTACH 'ducklake:...' created (and, if "
            "it was attached with METADATA_SCHEMA, the same schema as metadata_schema=)"
        )
    rows = session.rows("SELECT key, value FROM ducklake_metadata WHERE scope IS NULL")
    settings = {key: value for key, value in rows}
    version = settings.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(_version_message(description, version))
    return settings


def _version_message(description: str, version: object) -> str:
    """What to do about a catalog of another format version."""
    supported = ", ".join(SUPPORTED_VERSIONS)
    head = (
        f"{description} uses DuckLake format version {version!r}; this reader reads "
        f"{supported} catalogs and never migrates (it opens catalogs read-only). "
    )
    text = str(version or "")
    if text.startswith("0."):
        return head + (
            "DuckDB migrates older catalogs when it attaches them read-write: back the "
            "catalog up, then run ATTACH 'ducklake:<catalog>' AS lake (AUTOMATIC_MIGRATION "
            "true) in DuckDB 1.5 with its ducklake extension, which rewrites it as 1.0"
        )
    return head + (
        f"The newest format it reads is {NEWEST_VERSION}; a newer one may store what this "
        "reader would misread: upgrade ducklake-datafusion, or keep writers on a format it "
        f"reads (DuckDB: DUCKLAKE_VERSION '{NEWEST_VERSION}' when creating the catalog)"
    )
