"""A table named in one string, as the Python API takes it (``"schema.table"``)."""

from __future__ import annotations

from ..errors import InvalidOptionError

__all__ = ["split_table_name"]


def split_table_name(name: str) -> tuple[str, str]:
    """``"schema.table"`` -> ``("schema", "table")``; ``"table"`` -> ``("main", "table")``."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise InvalidOptionError(f"a table name must be 'schema.table' or 'table', got {name!r}")
    parts = name.split(".")
    if len(parts) == 1:
        return "main", parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise InvalidOptionError(
        f"table name {name!r}: give 'schema.table' or 'table' (names with dots are not "
        "supported here)"
    )
