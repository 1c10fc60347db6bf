"""Which pyspark releases this subpackage runs on, and what each of them can do.

Two paths read a table (see ``parquet`` and ``source``):

* *Spark's own Parquet reader*, with deletes applied inside it (the package's jar, one
  build per Scala version) or by a join of bit masks, needs row
  positions (``_metadata.row_index``, Spark 3.4+) and reads field ids (3.3+): it runs on
  every supported release, 3.5 to 4.3;
* the ``ducklake`` *Python data source* (``pyspark.sql.datasource``) needs pyspark 4.1+:
  the API exists since 4.0, but filter pushdown, which the reader's scan guard relies on,
  and ``TimeType`` came with 4.1.

On 3.5 and 4.0 a read that would need the data source raises
:class:`UnsupportedFeatureError` naming the table, the reason and the release that reads
it (``require_data_source``); on anything older than 3.5 importing the subpackage raises
:class:`MissingDependencyError`.
"""

from __future__ import annotations

import functools
import re

from ...errors import MissingDependencyError, UnsupportedFeatureError

__all__ = [
    "DATA_SOURCE_PYSPARK",
    "OLDEST_PYSPARK",
    "has_data_source",
    "is_connect",
    "pyspark_at_least",
    "pyspark_version",
    "require_data_source",
    "require_supported_pyspark",
]

OLDEST_PYSPARK = (3, 5)
DATA_SOURCE_PYSPARK = (4, 1)


def _parsed(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string."""
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    return (found + (0, 0))[:2]


@functools.cache
def pyspark_version() -> str:
    """The installed pyspark's version string."""
    import pyspark

    return pyspark.__version__


def pyspark_at_least(major: int, minor: int, version: str | None = None) -> bool:
    """Whether pyspark (``version``, default the installed one) is ``major.minor`` or newer."""
    version = pyspark_version() if version is None else version
    return _parsed(version) >= (major, minor)


def require_supported_pyspark(version: str | None = None) -> None:
    """Raise :class:`MissingDependencyError` on a pyspark older than 3.5.

    Args:
        version: the version to check (default: the installed pyspark's).
    """
    version = pyspark_version() if version is None else version
    if _parsed(version) < OLDEST_PYSPARK:
        raise MissingDependencyError(
            f"ducklake_datafusion.spark needs pyspark >= 3.5 (Spark's _metadata.row_index); "
            f"pyspark {version} is installed. Install a supported release with: "
            "pip install 'ducklake-datafusion[spark]' (pyspark 3.5 to 4.3)"
        )


def has_data_source(version: str | None = None) -> bool:
    """Whether the ``ducklake`` Python data source runs on this pyspark (4.1+)."""
    return pyspark_at_least(*DATA_SOURCE_PYSPARK, version)


def require_data_source(what: str, why: str | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` unless the data source runs here.

    Args:
        what: what needs it, naming the table (``"reading table main.t (snapshot 4)"``).
        why: why Spark's Parquet reader cannot do it (``"2 files are encrypted"``).
    """
    if has_data_source():
        return
    reason = f" ({why})" if why else ""
    raise UnsupportedFeatureError(
        f"{what} needs the ducklake Python data source{reason}, which needs pyspark >= 4.1; "
        f"pyspark {pyspark_version()} reads only what Spark's own Parquet reader reads "
        "exactly. Run this read on pyspark 4.1 to 4.3 (pip install 'pyspark>=4.1,<4.4')"
    )


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session: no JVM on this side, so nothing of
    ``sparkContext``, ``_jvm`` or ``_jdf`` (the server's catalog, ``DuckLakeCatalog``,
    reads everything natively there)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
