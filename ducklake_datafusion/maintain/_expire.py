"""Snapshot expiry and file cleanup: ``expire_snapshots``, ``cleanup_old_files`` and
``delete_orphaned_files``, with DuckDB 1.5's arguments, defaults and refusals.

* ``expire_snapshots`` removes snapshots (never the latest) and, in the same catalog
  transaction, every row only they read (``catalog.expire_snapshot_rows``); their files
  are scheduled for deletion, none is deleted here, and no snapshot is written.
* ``cleanup_old_files`` deletes the files scheduled before ``older_than`` (default: the
  lake's ``delete_older_than``, 2 days) and then forgets the ones it deleted.
* ``delete_orphaned_files`` deletes the ``.parquet`` files under the data path that no
  catalog row names and that were last written before ``older_than`` (the same default: a
  file a commit is writing right now is younger, so it is never taken for an orphan).

Each returns what it did (or, with ``dry_run``, would do).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence

import pyarrow.fs as pafs

from ..catalog import (
    SnapshotRecord,
    expire_snapshot_rows,
    forget_scheduled,
    known_files,
    list_snapshot_records,
    metadata,
    scheduled_files,
)
from ..errors import DuckLakeError, InvalidOptionError
from ..pathres import filesystem_for, join_path, parse_location, translate_storage_error
from ..scan import Lake
from ..write import delete_files, require_writable

__all__ = ["cleanup_old_files", "delete_orphaned_files", "expire_snapshots"]

_UNITS = {
    "microsecond": 1e-6,
    "us": 1e-6,
    "millisecond": 1e-3,
    "ms": 1e-3,
    "second": 1,
    "s": 1,
    "minute": 60,
    "min": 60,
    "m": 60,
    "hour": 3600,
    "h": 3600,
    "day": 86400,
    "d": 86400,
    "week": 7 * 86400,
    "w": 7 * 86400,
    "month": 30 * 86400,
    "year": 365 * 86400,
}
_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+?)s?(?=\s|$|\d)", re.IGNORECASE)
_CLOCK = re.compile(r"^\s*(\d+):(\d{2}):(\d{2}(?:\.\d+)?)\s*$")


def interval(text: str, option: str) -> _dt.timedelta:
    """A DuckDB interval as the lake's options spell it (``2 days``, ``1 week 3 hours``,
    ``00:30:00``)."""
    clock = _CLOCK.match(text)
    if clock:
        hours, minutes, seconds = clock.groups()
        return _dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))
    parts = _PART.findall(text.strip().lower())
    rest = _PART.sub("", text.strip().lower()).strip()
    if not parts or rest or any(unit not in _UNITS for _, unit in parts):
        raise InvalidOptionError(
            f"the lake's option {option} is {text!r}, not an interval this package reads "
            "(e.g. '2 days', '1 week', '12 hours', '00:30:00'); set it again with DuckDB's "
            f"CALL <lake>.set_option('{option}', '2 days'), or pass older_than="
        )
    return _dt.timedelta(seconds=sum(float(n) * _UNITS[unit] for n, unit in parts))


def _aware(when: _dt.datetime, name: str) -> _dt.datetime:
    if not isinstance(when, _dt.datetime):
        raise InvalidOptionError(f"{name} must be a datetime, got {type(when).__name__}")
    return when if when.tzinfo is not None else when.replace(tzinfo=_dt.timezone.utc)


def _global_option(lake: Lake, key: str) -> str | None:
    with lake.backend.session() as session:
        return metadata.read_settings(session, lake.description).get(key)


def expire_snapshots(
    lake: Lake,
    *,
    older_than: _dt.datetime | None = None,
    versions: Sequence[int] | None = None,
    dry_run: bool = False,
) -> list[SnapshotRecord]:
    """Expire the snapshots taken before ``older_than`` or named in ``versions`` (neither:
    before now minus the lake's ``expire_older_than``, and none when that is unset); the
    latest snapshot always stays. Returns the snapshots expired (or that would be)."""
    require_writable(lake)
    if older_than is not None and versions is not None:
        raise InvalidOptionError("expire_snapshots takes older_than= or versions=, not both")
    wanted = None if versions is None else {int(v) for v in versions}
    if older_than is None and wanted is None:
        setting = _global_option(lake, "expire_older_than")
        if not setting:
            return []
        older_than = _dt.datetime.now(_dt.timezone.utc) - interval(setting, "expire_older_than")
    cutoff = None if older_than is None else _aware(older_than, "older_than")
    with lake.backend.write_session() as session:
        records = list_snapshot_records(session)
        latest = max(r.snapshot_id for r in records)
        expired = [
            r
            for r in records
            if r.snapshot_id != latest
            and (
                (wanted is not None and r.snapshot_id in wanted)
                or (cutoff is not None and r.snapshot_time < cutoff)
            )
        ]
        if expired and not dry_run:
            expire_snapshot_rows(session, [r.snapshot_id for r in expired])
    return expired


def _cleanup_start(lake: Lake, older_than, cleanup_all: bool) -> tuple[_dt.datetime | None, str]:
    """A cleanup's cut-off (``older_than``; none with ``cleanup_all``; else now minus the
    lake's ``delete_older_than``, 2 days unless set) and the lake's data path, read in one
    catalog session."""
    require_writable(lake)
    if cleanup_all and older_than is not None:
        raise InvalidOptionError("cleanup_all=True and older_than= cannot go together")
    with lake.backend.session() as session:
        settings = metadata.read_settings(session, lake.description)
    cutoff = None
    if older_than is not None:
        cutoff = _aware(older_than, "older_than")
    elif not cleanup_all:
        setting = settings.get("delete_older_than") or "2 days"
        cutoff = _dt.datetime.now(_dt.timezone.utc) - interval(setting, "delete_older_than")
    return cutoff, lake.data_path(settings)


def _not_deleted(lake: Lake, left, total: int, files: str, advice: str) -> DuckLakeError:
    return DuckLakeError(
        f"{lake.description}: {len(left)} of the {total} {files} could not be deleted "
        f"({', '.join(sorted(left)[:5])}); {advice}"
    )


def cleanup_old_files(
    lake: Lake,
    *,
    older_than: _dt.datetime | None = None,
    cleanup_all: bool = False,
    dry_run: bool = False,
) -> list[str]:
    """Delete the files scheduled for deletion before ``older_than`` (every one with
    ``cleanup_all``); their URLs (with ``dry_run``: the ones it would delete)."""
    cutoff, data_path = _cleanup_start(lake, older_than, cleanup_all)
    with lake.backend.session() as session:
        files = scheduled_files(session, cutoff)
    urls = [join_path(data_path, f.path, f.path_is_relative) for f in files]
    if dry_run or not files:
        return urls
    left = set(delete_files(urls, lake.storage))
    deleted = [f.data_file_id for f, url in zip(files, urls) if url not in left]
    with lake.backend.write_session() as session:
        forget_scheduled(session, deleted)
    if left:
        raise _not_deleted(
            lake,
            left,
            len(urls),
            "files scheduled for deletion",
            "the others were. Check the store's permissions and run cleanup_old_files again",
        )
    return urls


def delete_orphaned_files(
    lake: Lake,
    *,
    older_than: _dt.datetime | None = None,
    cleanup_all: bool = False,
    dry_run: bool = False,
) -> list[str]:
    """Delete the ``.parquet`` files under the data path that no catalog row names and
    that were last written before ``older_than`` (any age with ``cleanup_all``); their
    URLs (with ``dry_run``: the ones it would delete)."""
    cutoff, data_path = _cleanup_start(lake, older_than, cleanup_all)
    with lake.backend.session() as session:
        known = {
            parse_location(join_path(data_path, f.path, f.path_is_relative)).path
            for f in known_files(session)
        }
    root = parse_location(data_path)
    filesystem = filesystem_for(root, lake.storage)
    try:
        listed = filesystem.get_file_info(
            pafs.FileSelector(root.path.rstrip("/"), recursive=True, allow_not_found=True)
        )
    except OSError as exc:
        raise translate_storage_error(exc, what=f"the data path {data_path}") from exc
    base = root.path.rstrip("/") + "/"
    orphans = [
        info
        for info in listed
        if info.type == pafs.FileType.File
        and info.path.endswith(".parquet")
        and info.path not in known
        and info.path.startswith(base)
        and (cutoff is None or info.mtime is None or _aware(info.mtime, "mtime") < cutoff)
    ]
    # (a listed path in the data path's own spelling: its URL, or a local path)
    stem = data_path if data_path.endswith("/") else data_path + "/"
    urls = [stem + info.path[len(base) :] for info in orphans]
    if dry_run or not urls:
        return urls
    left = delete_files(urls, lake.storage)
    if left:
        raise _not_deleted(lake, left, len(urls), "orphaned files", "check the store's permissions")
    return urls
