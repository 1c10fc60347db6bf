"""Which pyspark releases this subpackage runs on, checked before anything imports them.

The reader is a Python data source (``pyspark.sql.datasource``, pyspark 4.0+) with filter
pushdown (4.1+), returns TIME columns as ``TimeType`` (4.1+) and is tested on 4.1 and 4.3.
On an older pyspark the imports below would fail with a bare ``ModuleNotFoundError``
naming a pyspark module; this says what to install instead.
"""

from __future__ import annotations

import re

from ..errors import MissingDependencyError

__all__ = ["OLDEST_PYSPARK", "require_supported_pyspark"]

OLDEST_PYSPARK = (4, 1)


def require_supported_pyspark(version: str | None = None) -> None:
    """Raise :class:`MissingDependencyError` on a pyspark older than 4.1.

    Args:
        version: the version to check (default: the installed pyspark's).
    """
    if version is None:
        import pyspark

        version = pyspark.__version__
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if found < OLDEST_PYSPARK:
        raise MissingDependencyError(
            f"ducklake_datafusion.spark needs pyspark >= 4.1 (its Python data source API "
            f"with filter pushdown); pyspark {version} is installed. Install a supported "
            "release with: pip install 'ducklake-datafusion[spark]' (pyspark 4.1 to 4.3)"
        )
