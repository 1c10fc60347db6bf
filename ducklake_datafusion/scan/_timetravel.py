"""Time travel by table name: ``lake.main."orders@v12"`` and ``"orders@2024-05-01T12:00:00"``.

DataFusion's SQL parser has no ``AT``/``AS OF`` clause, so the snapshot rides in the
table name, as Delta Lake allows for paths. A name is only read as ``table@snapshot``
when no table of that literal name exists, so tables whose names contain ``@`` stay
readable. Every failure raises a typed error that says which part was wrong, because a
``None`` from ``SchemaProvider.table`` would only give DataFusion's bare "table not found".

Snapshot semantics are DuckDB's ``AT (VERSION => n)`` / ``AT (TIMESTAMP => ts)``: the id
must exist (expired ids are an error), a time selects the latest snapshot taken at or
before it, and a time without a timezone is UTC.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from ..catalog import MetadataSession, SnapshotInfo, metadata
from ..errors import SnapshotNotFoundError

__all__ = [
    "SUFFIX_HELP",
    "SnapshotRef",
    "parse_snapshot_ref",
    "parse_time",
    "resolve_snapshot_ref",
    "snapshot_bounds",
    "split_table_suffix",
]

_VERSION = re.compile(r"^[vV](\d+)$")
SUFFIX_HELP = (
    "after '@' write v<snapshot id> (orders@v12) or an ISO timestamp "
    "(orders@2024-05-01T12:00:00, UTC unless it carries an offset)"
)


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A snapshot named by id or by time (exactly one is set)."""

    snapshot_id: int | None = None
    time: _dt.datetime | None = None

    def __str__(self) -> str:
        return f"v{self.snapshot_id}" if self.time is None else self.time.isoformat()


def parse_time(text: str) -> _dt.datetime | None:
    """An ISO date or date-time as an aware UTC-based datetime; ``None`` if not ISO.

    Accepts ``T`` or a space between date and time, a fraction, ``Z`` or a ``+hh:mm``
    offset. A time without offset is UTC, like DuckDB's TIMESTAMPTZ cast in a UTC session.
    """
    text = text.strip()
    if not re.match(r"^\d{4}-\d{2}-\d{2}", text):
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.timezone.utc)


def parse_snapshot_ref(text: str) -> SnapshotRef | None:
    """``v12`` -> id 12; an ISO timestamp -> that time; anything else -> ``None``."""
    match = _VERSION.match(text.strip())
    if match:
        return SnapshotRef(snapshot_id=int(match.group(1)))
    when = parse_time(text)
    return SnapshotRef(time=when) if when is not None else None


def split_table_suffix(name: str) -> tuple[str, SnapshotRef | None] | None:
    """``orders@v12`` -> ``('orders', ref)``; ``None`` when the name has no ``@`` suffix.

    The reference is ``None`` when the text after the last ``@`` is neither form.
    """
    base, sep, tail = name.rpartition("@")
    if not sep or not base:
        return None
    return base, parse_snapshot_ref(tail)


def snapshot_bounds(session: MetadataSession) -> str:
    """Which snapshots exist, for error messages about ones that do not."""
    snapshots = metadata.list_snapshots(session)
    if not snapshots:
        return "the catalog has no snapshots"
    first, last = snapshots[0], snapshots[-1]
    gaps = last.snapshot_id - first.snapshot_id + 1 != len(snapshots)
    return (
        f"existing snapshots run from {first.snapshot_id} ({first.snapshot_time.isoformat()}) "
        f"to {last.snapshot_id} ({last.snapshot_time.isoformat()})"
        + (", with gaps where snapshots were expired" if gaps else "")
        + "; list them with ducklake_snapshots()"
    )


def resolve_snapshot_ref(
    session: MetadataSession, ref: SnapshotRef, description: str
) -> SnapshotInfo:
    """The snapshot ``ref`` names; raises SnapshotNotFoundError saying what exists."""
    if ref.time is None:
        found = metadata.snapshot_by_id(session, int(ref.snapshot_id))
        if found is None:
            raise SnapshotNotFoundError(
                f"{description} has no snapshot {ref.snapshot_id} (never written, or expired "
                f"by ducklake_expire_snapshots); {snapshot_bounds(session)}"
            )
        return found
    found = metadata.snapshot_at_time(session, ref.time)
    if found is None:
        raise SnapshotNotFoundError(
            f"{description} has no snapshot at or before {ref.time.isoformat()} (that is "
            f"before the first snapshot kept); {snapshot_bounds(session)}"
        )
    return found
