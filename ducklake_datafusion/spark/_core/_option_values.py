"""The values of the data source's options: each read from Spark's option text or, for
``read_table``, from the typed argument itself, and written back as text where the options
leave the process (``SourceOptions.as_options``).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping

from ...errors import InvalidOptionError
from ...scan import SnapshotRef, parse_snapshot_ref

__all__ = [
    "DEFAULT_PARTITION_BYTES",
    "count_option",
    "flag_option",
    "option_text",
    "quoted_table_name",
    "size_option",
    "snapshot_option",
    "snapshot_time_option",
    "split_table_name",
    "split_time_travel",
]

DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")


def split_time_travel(text: str) -> tuple[str, SnapshotRef | None]:
    """``main.orders@v12`` / ``orders@2024-05-01T12:00:00`` -> (name, snapshot reference).

    The same time-travel suffix as in DataFusion SQL. A name whose text after the last
    ``@`` is neither form, or that ends in a quote (``"main"."a@v1"``), has no suffix.
    """
    stripped = text.strip()
    base, sep, tail = stripped.rpartition("@")
    if not sep or not base or stripped.endswith('"'):
        return text, None
    ref = parse_snapshot_ref(tail)
    return (base, ref) if ref is not None else (text, None)


def split_table_name(text: str) -> tuple[str, str]:
    """``schema.table`` (or ``table`` in ``main``) -> (schema, table).

    Parts may be double-quoted to contain dots or spaces: ``"my schema"."a.b"``.
    """
    text = text.strip()
    parts: list[str] = []
    current, quoted, i = "", False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"' and text[i + 1 : i + 2] == '"':
                current += '"'
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current += ch
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    if quoted or len(parts) > 2 or not all(parts):
        raise InvalidOptionError(
            f"table name {text!r} must be 'schema.table' or 'table' (quote parts containing "
            'dots with double quotes: \'"my schema"."my.table"\')'
        )
    return ("main", parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def quoted_table_name(schema: str, table: str) -> str:
    """``"schema"."table"``, as :func:`split_table_name` reads it back (quotes doubled)."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, table))


def option_text(value: object) -> str:
    """An option's value as Spark's option text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    return str(value)


def snapshot_option(text: str | int | None) -> int | None:
    if text is None or str(text).strip() == "":
        return None
    if isinstance(text, bool):
        value = -1
    elif isinstance(text, int):
        value = text
    else:
        try:
            value = int(str(text).strip())
        except ValueError:
            value = -1
    if value < 0:
        raise InvalidOptionError(
            f"option 'snapshot' must be a snapshot id (an integer), got {text!r}"
        )
    return value


def snapshot_time_option(text: str | _dt.date | None) -> _dt.datetime | None:
    if isinstance(text, _dt.datetime):
        return text
    if isinstance(text, _dt.date):
        return _dt.datetime.combine(text, _dt.time())
    if text is None or str(text).strip() == "":
        return None
    try:
        return _dt.datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidOptionError(
            f"option 'snapshot_time' must be an ISO timestamp such as "
            f"'2024-05-01T12:00:00+00:00' (no offset means UTC), got {text!r}"
        ) from None


def count_option(text: str | int | None) -> int:
    if text is None or str(text).strip() == "":
        return 1
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        try:
            value = int(str(text).strip())
        except ValueError:
            value = 0
    if value < 1:
        raise InvalidOptionError(
            f"option 'min_partitions' must be a positive integer, got {text!r}"
        )
    return value


def flag_option(values: Mapping[str, object], key: str) -> bool:
    value = values.get(key, False)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} must be 'true' or 'false', got {text!r}")
    return text == "true"


def size_option(text: str | int | None) -> int:
    if text is None or str(text).strip() == "":
        return DEFAULT_PARTITION_BYTES
    if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
        return text
    match = _SIZE.match(str(text).lower())
    if not match or match.group(2) not in _UNITS or int(match.group(1)) < 1:
        raise InvalidOptionError(
            f"option 'partition_bytes' must be a positive size such as 134217728, '64m' or "
            f"'1g', got {text!r}"
        )
    return int(match.group(1)) * _UNITS[match.group(2)]
