"""``read_stream``: a lake's table as a Structured Streaming source, without configuring a
catalog first.

The stream is the package's Spark catalog's (``DuckLakeMicroBatchStream`` in the jar),
configured for this lake at runtime as ``write_table`` configures it (``_catalog_read``):
offsets are snapshot ids, and each micro-batch is planned by the planner process, exactly
as ``spark.readStream.table("lake.main.t")`` on a configured catalog.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InvalidOptionError
from ._catalog_read import runtime_identifier

__all__ = ["read_stream"]

# The stream's read options (DuckLakeMicroBatchStream), by their Python names.
_OPTIONS = {
    "starting_version": "startingVersion",
    "starting_timestamp": "startingTimestamp",
    "max_snapshots_per_trigger": "maxSnapshotsPerTrigger",
    "max_files_per_trigger": "maxFilesPerTrigger",
    "max_bytes_per_trigger": "maxBytesPerTrigger",
    "skip_change_commits": "skipChangeCommits",
}


def read_stream(
    spark,
    metadata: str,
    table: str,
    *,
    changes: bool = False,
    data_path: str | None = None,
    metadata_schema: str | None = None,
    storage_options: Mapping[str, object] | None = None,
    **options: object,
):
    """A streaming DataFrame of the rows new snapshots of ``schema.table`` insert.

    Args:
        spark: the session (classic or Spark Connect) with the package's jar.
        metadata: the catalog, as for ``read_table``.
        table: ``"schema.table"`` (or ``"table"`` in ``main``).
        changes: stream the change feed instead (every insert, delete and update, with
            ``_change_type``, ``_commit_snapshot_id``, ``_commit_timestamp``, ``_rowid``).
        starting_version / starting_timestamp: the first snapshot read (default: the ones
            after the latest when the query first starts).
        max_snapshots_per_trigger / max_files_per_trigger / max_bytes_per_trigger: how much
            one micro-batch admits (at least one snapshot).
        skip_change_commits: leave out snapshots that delete or update rows, instead of
            failing the stream on them (a stream of inserts only).

    Raises:
        InvalidOptionError: an unknown option.
        MissingDependencyError: the session lacks the package's jar.
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidOptionError(
            f"read_stream option(s) {unknown}; options are {', '.join(sorted(_OPTIONS))}"
        )
    ident = runtime_identifier(
        spark,
        "read_stream",
        metadata,
        table,
        data_path=data_path,
        metadata_schema=metadata_schema,
        storage_options=storage_options,
        suffix=("changes",) if changes else (),
    )
    reader = spark.readStream
    for key, value in options.items():
        if value is not None:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            reader = reader.option(_OPTIONS[key], text)
    return reader.table(ident)
