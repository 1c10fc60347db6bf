"""Which of a scan's files the Rust provider reads with its own object store, and that
store's options (spelled by ``pathres`` from the store's access, as a compaction's source
reads spell them): local files, one S3 or GCS bucket, or one Azure container. An encrypted
or name-mapped file, several stores, or a store the extension would authenticate
differently from the exact path give ``None``: those tables take the exact path.
"""

from __future__ import annotations

from ..pathres import object_path, plain_location, store_for, store_kind
from ..scan import DataFileTask, ScanPlan

__all__ = ["object_path", "plain_location", "store_kind", "store_options", "store_readable"]


def store_options(files, plan: ScanPlan) -> dict[str, str] | None:
    """The provider's store: local files, or one bucket of S3 or GCS, or one Azure
    container; ``None`` if several, or a file the provider does not read (encrypted,
    name-mapped)."""
    if not all(store_readable(task) for task in files):
        return None
    return store_for([task.file.url for task in files], plan.storage)


def store_readable(task: DataFileTask) -> bool:
    """Whether the Rust store reads the file as it is: not encrypted, not name-mapped, at
    a path object-store paths spell as it is."""
    if task.encryption_key is not None or task.name_mapping is not None:
        return False
    return plain_location(task.file.url)
