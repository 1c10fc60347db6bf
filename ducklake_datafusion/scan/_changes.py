"""Change planning, the plain-data part: feed schema, range bounds and the compared steps.

The change feed (``read/_changes.py``) compares table states keyed by rowid; what it
compares is decided here from catalog records only: which snapshot ids the bounds name
(``resolve_bound``, shared with Spark's driver), which ``(predecessor, snapshot)`` pairs
touched the table (``change_steps``), and the frozen ``ChangePlan``/``ChangeStep`` that
carry the narrowed scan plans to an executor (DataFusion's, or Spark's).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..catalog import ROW_CHANGE_KINDS, ColumnSpec, SnapshotRecord, arrow_schema
from ..errors import InvalidOptionError, SnapshotNotFoundError
from ._plan import ScanPlan
from ._timetravel import parse_snapshot_ref

__all__ = [
    "CHANGE_TYPES",
    "ChangePlan",
    "ChangeStep",
    "change_schema",
    "change_steps",
    "resolve_bound",
]

CHANGE_TYPES = ("delete", "update_preimage", "update_postimage", "insert")


def change_schema(columns: Sequence[ColumnSpec]) -> pa.Schema:
    """The output schema: the three change columns, then the table columns."""
    head = [("snapshot_id", pa.int64()), ("rowid", pa.int64()), ("change_type", pa.string())]
    return pa.schema([pa.field(n, t) for n, t in head] + list(arrow_schema(columns)))


# -- range bounds -----------------------------------------------------------------------------


def resolve_bound(
    records: Sequence[SnapshotRecord],
    value: object,
    *,
    lower: bool,
    description: str,
    bounds: Callable[[], str] = lambda: "",
) -> int:
    """A range bound (snapshot id, datetime or text of either) -> an existing snapshot id.

    Ids must exist, like in DuckDB. A time selects the first snapshot at or after it for
    the lower bound and the last at or before it for the upper bound; naive times are UTC.
    """
    which = "start" if lower else "end"
    if isinstance(value, str):
        text = value.strip()
        ref = parse_snapshot_ref(text if not text.isdigit() else f"v{text}")
        if ref is None:
            raise InvalidOptionError(
                f"change feed {which} {value!r} is neither a snapshot id nor an ISO timestamp"
            )
        value = ref.snapshot_id if ref.time is None else ref.time
    if isinstance(value, bool) or value is None:
        raise InvalidOptionError(f"change feed {which} must be a snapshot id or a timestamp")
    if isinstance(value, (int, np.integer)):
        wanted = int(value)
        if any(r.snapshot_id == wanted for r in records):
            return wanted
        raise SnapshotNotFoundError(
            f"{description} has no snapshot {wanted} (never written, or expired by "
            f"ducklake_expire_snapshots), so it cannot be the change feed {which}; {bounds()}"
        )
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        value = _dt.datetime.combine(value, _dt.time())
    if not isinstance(value, _dt.datetime):
        raise InvalidOptionError(
            f"change feed {which} must be a snapshot id or a timestamp, got {value!r}"
        )
    when = value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    if lower:
        later = [r for r in records if r.snapshot_time >= when]
        found = min(later, key=lambda r: (r.snapshot_time, r.snapshot_id)) if later else None
    else:
        earlier = [r for r in records if r.snapshot_time <= when]
        found = max(earlier, key=lambda r: (r.snapshot_time, r.snapshot_id)) if earlier else None
    if found is None:
        side = "at or after" if lower else "at or before"
        raise SnapshotNotFoundError(
            f"{description} has no snapshot {side} {when.isoformat()} for the change feed "
            f"{which}; {bounds()}"
        )
    return found.snapshot_id


def change_steps(
    records: Sequence[SnapshotRecord],
    first: int,
    last: int,
    table_id: int,
    previous: int | None = None,
):
    """``(predecessor, snapshot)`` pairs whose states must be compared.

    ``previous``: the predecessor of ``first`` (default ``first - 1``); an earlier one folds
    the expired snapshots between them into ``first``, as expired ids inside the range are.
    """
    steps = []
    previous = first - 1 if previous is None else previous
    for record in (r for r in records if first <= r.snapshot_id <= last):
        expired_before = record.snapshot_id - previous > 1
        if expired_before or _touches(record, table_id):
            steps.append((previous, record.snapshot_id))
        previous = record.snapshot_id
    return steps


def _touches(record: SnapshotRecord, table_id: int) -> bool:
    if record.changes is None:
        return True  # no changes row: nothing known, so compare
    return any(t.kind in ROW_CHANGE_KINDS and t.table_id() == table_id for t in record.changes)


@dataclass(frozen=True)
class ChangeStep:
    """One compared pair of states: the feed rows of ``snapshot`` come from here.

    Attributes:
        previous: the predecessor snapshot (may be an expired id, see the module notes).
        snapshot: the feed's ``snapshot_id`` for this step.
        old / new: the table at ``previous`` / ``snapshot`` through the end snapshot's
            columns, narrowed to the data files that differ plus the inlined rows (None:
            the table did not exist then).
        shrunk: data file id -> positions deleted at ``snapshot`` only, for differing files
            in both states that only lost rows: the rows at those positions (read at
            ``previous``) are the file's whole difference.
    """

    previous: int
    snapshot: int
    old: ScanPlan | None
    new: ScanPlan | None
    shrunk: dict[int, np.ndarray] = dataclasses.field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ChangePlan:
    """Everything the change feed of one table over one range reads: metadata only.

    Attributes:
        table: ``schema.table`` as stored.
        where: what the feed is, for messages (table and catalog).
        first / last: the bounds, resolved to existing snapshot ids.
        columns: the table's columns at ``last`` (the feed's table columns).
        steps: the compared states, in snapshot order (none when ``first > last``).
    """

    table: str
    where: str
    first: int
    last: int
    columns: tuple[ColumnSpec, ...]
    steps: tuple[ChangeStep, ...]
