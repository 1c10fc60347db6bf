"""Arrow batches -> Parquet data files as DuckDB writes them, and each file's facts.

One :class:`DataFileWriter` writes the files of one commit into a table's directory: named
``ducklake-<uuid v7>.parquet`` (DuckDB's names), field ids = column ids, row groups of
DuckDB's default 122,880 rows, a new file once one reaches the lake's
``target_file_size``. It takes batches as they come (a reader of any size streams through
it), and for every file it closes returns a :class:`WrittenFile`: the path, sizes, row
count and the per-column statistics the catalog needs, computed from the values written.

Nothing here touches the catalog. A commit that fails deletes the files (``discard``).
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from ..catalog import ColumnSpec, FileColumnStats, NewDataFile
from ..errors import InternalError
from ..pathres import filesystem_for, join_path, parse_location, translate_storage_error
from ._footer_stats import FooterSink
from ._partitions import PartitionSpec, split
from ._stats import ColumnBounds, measure
from ._thrift import ThriftError
from ._types import dictionary_columns, file_schema, leaf_columns

__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "ROW_ID_FIELD",
    "SNAPSHOT_ID_FIELD",
    "DataFileWriter",
    "WrittenFile",
    "uuid7",
]

ROW_GROUP_ROWS = 122_880  # DuckDB's default row group size
DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024  # DuckLake's default target_file_size
IN_FLIGHT = 2  # row groups queued for the encoding thread (bounds the memory held)
# An updated row's own row id, kept in its new file (DuckDB's column and field id).
ROW_ID_FIELD = pa.field(
    "_ducklake_internal_row_id", pa.int64(), metadata={b"PARQUET:field_id": b"2147483540"}
)
# Each row's snapshot, kept in a merged file (DuckDB's column and field id).
SNAPSHOT_ID_FIELD = pa.field(
    "_ducklake_internal_snapshot_id", pa.int64(), metadata={b"PARQUET:field_id": b"2147483539"}
)


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A data file written and closed: where it is (a local path or an object-store URL,
    to delete it if the commit fails) and what the catalog records of it (its path
    relative to the table's directory, sizes, rows, column statistics, partition
    values)."""

    url: str
    data_file: NewDataFile


def uuid7() -> uuid.UUID:
    """A time-ordered UUID (version 7), as DuckDB names tables and files."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    return uuid.UUID(int=value)


class DataFileWriter:
    """Writes one commit's data files for a table into its directory.

    Args:
        directory: the table's directory (local path or URL), ending with ``/``.
        columns: the table's columns at the snapshot written to.
        storage_options: the lake's storage options (object-store credentials).
        target_file_size: start a new file once one has this many bytes.
        description: names the table in errors.
        partitioning: the table's partition spec (``_partitions``), or ``None``: each
            partition's rows then go to files of their own, in its directory.
        with_row_ids: the rows carry their row ids in a column
            ``_ducklake_internal_row_id`` (field id 2147483540), as DuckDB writes an
            update's new rows: the rows keep the ids of the rows they replace.
        with_snapshot_ids: the rows carry their snapshots in a last column
            ``_ducklake_internal_snapshot_id`` (field id 2147483539), as DuckDB writes a
            merged file.
        subdirectory: the files go to this directory below ``directory`` (ending with
            ``/``): a merge of one partition's files, written where they were.
    """

    def __init__(
        self,
        directory: str,
        columns: Sequence[ColumnSpec],
        storage_options,
        *,
        target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        description: str,
        partitioning: PartitionSpec | None = None,
        with_row_ids: bool = False,
        with_snapshot_ids: bool = False,
        subdirectory: str = "",
    ) -> None:
        self.directory = directory
        self.schema_of_table = file_schema(columns)  # what ``_types.conform`` casts rows to
        self.schema = self.schema_of_table
        if with_row_ids:
            self.schema = self.schema.append(ROW_ID_FIELD)
        if with_snapshot_ids:
            self.schema = self.schema.append(SNAPSHOT_ID_FIELD)
        self.subdirectory = subdirectory
        self.leaves = leaf_columns(columns)
        self.dictionary = dictionary_columns(columns)
        self.storage_options = storage_options
        self.target_file_size = max(int(target_file_size), 1)
        self.description = description
        self.partitioning = partitioning
        self.written: list[WrittenFile] = []
        self._streams: dict[tuple, _PartitionStream] = {}
        # Row groups are encoded and written on one thread of their own (Parquet encoding
        # releases the GIL), in order, while this one reads and casts the next rows: the
        # two overlap on a second core. At most IN_FLIGHT row groups wait for it.
        self._encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ducklake-write")
        self._in_flight: deque[Future] = deque()

    def write(self, table: pa.Table) -> None:
        """Write rows already conformed to :attr:`schema` (``_types.conform``)."""
        if table.num_rows == 0:
            return
        if self.partitioning is None:
            self._stream((), self.subdirectory).write(table)
            return
        for part in split(table, self.partitioning):
            self._stream(part.values, part.directory).write(part.rows)

    def _stream(self, values: tuple, directory: str) -> _PartitionStream:
        stream = self._streams.get(values)
        if stream is None:
            stream = self._streams[values] = _PartitionStream(self, values, directory)
        return stream

    def submit(self, task) -> None:
        """Run ``task`` (a row group's write) on the encoding thread, after those before."""
        while len(self._in_flight) >= IN_FLIGHT:
            self._in_flight.popleft().result()  # raises the encoding thread's error here
        self._in_flight.append(self._encoder.submit(task))

    def _drain(self) -> None:
        while self._in_flight:
            self._in_flight.popleft().result()

    def close(self) -> list[WrittenFile]:
        """Write what is left and close the last files; returns every file written."""
        for stream in self._streams.values():
            stream.flush_rest()
        self._drain()
        for stream in self._streams.values():
            stream.close()
        self._encoder.shutdown()
        return list(self.written)

    def discard(self) -> list[str]:
        """Delete every file written (after a failed commit); returns the URLs that could
        not be deleted (left as orphans, for the caller to report)."""
        for future in self._in_flight:
            future.cancel()
        self._encoder.shutdown(wait=True)
        self._in_flight.clear()
        urls = [f.url for f in self.written]
        for stream in self._streams.values():
            urls.extend(stream.abandon())
        self.written = []
        self._streams = {}
        return delete_files(urls, self.storage_options)


class _PartitionStream:
    """The rows of one partition (the whole table when unpartitioned): pending rows, cut
    into row groups of ``ROW_GROUP_ROWS``, and the file being written."""

    def __init__(self, owner: DataFileWriter, values: tuple, directory: str) -> None:
        self.owner = owner
        self.values = values
        self.directory = directory
        self._open: _OpenFile | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows == 0:
                continue
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            while self._pending_rows >= ROW_GROUP_ROWS:
                self.flush(ROW_GROUP_ROWS)

    def flush(self, rows: int) -> None:
        """Write ``rows`` pending rows as one row group (on the encoding thread)."""
        table = pa.Table.from_batches(self._pending, schema=self.owner.schema)
        group, rest = table.slice(0, rows), table.slice(rows)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        # one contiguous array per column: measuring and encoding many small chunks (a
        # merge's small sources, a stream's batches) cost more than copying them once
        group = group.combine_chunks()
        measured = [
            measure(_leaf_values(group, path), spec.type_name in ("float32", "float64"))
            for path, spec in self.owner.leaves
        ]
        self.owner.submit(lambda: self._write_group(group, measured))

    def _write_group(self, group: pa.Table, measured: list) -> None:
        """(On the encoding thread.) One row group into the open file, a new file once
        the open one reached the target size."""
        if self._open is None:
            self._open = _OpenFile(self.owner, self.directory, self.values)
        self._open.write(group, measured)
        if self._open.size() >= self.owner.target_file_size:
            self.owner.written.append(self._open.close())
            self._open = None

    def flush_rest(self) -> None:
        if self._pending_rows:
            self.flush(self._pending_rows)

    def close(self) -> None:
        """(Once every row group is written.) Close the open file."""
        if self._open is not None:
            self.owner.written.append(self._open.close())
            self._open = None

    def abandon(self) -> list[str]:
        """Stop writing; the URL of the file left open, to delete."""
        if self._open is None:
            return []
        url = self._open.url
        self._open.abandon()
        self._open = None
        return [url]


class _OpenFile:
    """One data file being written: its stream, writer and running statistics."""

    def __init__(self, owner: DataFileWriter, directory: str, values: tuple) -> None:
        self.owner = owner
        self.values = values
        self.name = f"{directory}ducklake-{uuid7()}.parquet"
        self.url = join_path(owner.directory, self.name, True)
        location = parse_location(self.url)
        self.filesystem = filesystem_for(location, owner.storage_options)
        self.path = location.path
        try:
            if location.scheme == "file":
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.stream = self.filesystem.open_output_stream(self.path)
        except OSError as exc:
            raise _storage_error(exc, self.url, self.owner) from exc
        # the footer passes through a sink that can edit it (``_footer_stats``)
        self.sink = FooterSink(self.stream)
        self.writer = pq.ParquetWriter(
            self.sink,
            owner.schema,
            compression="snappy",
            use_dictionary=owner.dictionary,
            store_schema=False,
            store_decimal_as_integer=True,
            write_statistics=True,
            write_page_index=False,
        )
        self.rows = 0
        self.row_groups = 0
        self.nan_leaves: set[int] = set()  # the float leaves NaN was written to
        self.bounds = [ColumnBounds(spec) for _, spec in owner.leaves]

    def write(self, group: pa.Table, measured: list) -> None:
        """One row group, and its columns' bounds (``_stats.measure``, leaf by leaf)."""
        try:
            self.writer.write_table(group, row_group_size=len(group))
        except OSError as exc:
            raise _storage_error(exc, self.url, self.owner) from exc
        self.rows += group.num_rows
        for leaf, (bounds, group_bounds) in enumerate(zip(self.bounds, measured)):
            bounds.add(group_bounds)
            if group_bounds[1]:
                self.nan_leaves.add(leaf)
        self.row_groups += 1

    def size(self) -> int:
        return self.stream.tell()

    def close(self) -> WrittenFile:
        try:
            # every row group is on the stream already: what close() adds is the footer
            # (its Thrift metadata, a 4-byte length and the magic)
            footer_start = self.stream.tell()
            self.sink.hold_footer()
            self.writer.close()
            try:
                self.sink.release_footer(self._chunks_without_bounds())
            except ThriftError as exc:
                raise InternalError(
                    f"{self.owner.description}: the footer pyarrow wrote for data file "
                    f"{self.url} cannot be edited ({exc}); nothing was committed"
                ) from exc
            size = self.stream.tell()
            self.stream.close()
        except OSError as exc:
            raise _storage_error(exc, self.url, self.owner) from exc
        # the file footer, known once closed (its statistics as pyarrow wrote them, before
        # the edit: only its counts and sizes are read here)
        metadata = self.writer.writer.metadata
        if metadata.num_row_groups != self.row_groups:
            raise InternalError(
                f"{self.owner.description}: data file {self.url} has "
                f"{metadata.num_row_groups} row groups, {self.row_groups} were written"
            )
        columns = []
        for index, ((_path, spec), bounds) in enumerate(zip(self.owner.leaves, self.bounds)):
            values = nulls = chunk_bytes = 0
            for group in range(metadata.num_row_groups):
                chunk = metadata.row_group(group).column(index)
                stats = chunk.statistics
                null_count = stats.null_count if stats is not None and stats.has_null_count else 0
                values += chunk.num_values - null_count
                nulls += null_count
                chunk_bytes += chunk.total_compressed_size
            low, high, low_exact, high_exact = bounds.encoded()
            columns.append(
                FileColumnStats(
                    column_id=spec.column_id,
                    column_size_bytes=chunk_bytes,
                    value_count=values,
                    null_count=nulls,
                    min_value=low,
                    max_value=high,
                    contains_nan=bounds.contains_nan(),
                    min_exact=low_exact,
                    max_exact=high_exact,
                )
            )
        return WrittenFile(
            self.url,
            NewDataFile(
                path=self.name,
                record_count=self.rows,
                file_size_bytes=size,
                footer_size=size - footer_start - 8,
                row_group_count=metadata.num_row_groups,
                columns=tuple(columns),
                partition_values=self.values,
            ),
        )

    def _chunks_without_bounds(self) -> list[tuple[int, int]]:
        """The chunks ``(row group, leaf)`` whose min/max the footer leaves out: every
        chunk of a float leaf that NaN was written to, in any row group of the file.

        Only the NaN chunks themselves would do for DuckDB, but DataFusion's reader also
        prunes whole files by bounds it merges over their row groups, where a chunk
        without bounds counts as none: a file whose NaN chunk lost its bounds while the
        next chunk of the column kept 5.0 / 6.0 is skipped for ``f > 1990`` (measured,
        datafusion 55). So a float column holding NaN anywhere in a file has no min/max
        in that file; every other column, and every float column without NaN, keeps
        its own."""
        return [(g, leaf) for leaf in sorted(self.nan_leaves) for g in range(self.row_groups)]

    def abandon(self) -> None:
        try:
            self.writer.close()
            self.stream.close()
        except Exception:  # noqa: BLE001, S110 - the file is deleted next either way
            pass


def _leaf_values(table: pa.Table, path: tuple[str, ...]) -> pa.Array:
    """The values of one leaf column, nested levels flattened (NULL parents drop out)."""
    values = table.column(path[0]).combine_chunks()
    for name in path[1:]:
        kind = values.type
        if pa.types.is_struct(kind):
            values = values.flatten()[kind.get_field_index(name)]  # parents' NULLs kept
        elif pa.types.is_list(kind):
            values = values.flatten()
        elif pa.types.is_map(kind):
            values = values.keys if name == "key" else values.items
    return values


def _storage_error(exc: OSError, url: str, owner: DataFileWriter):
    return translate_storage_error(
        exc, what=f"data file {url} of {owner.description}", options=owner.storage_options
    )


def delete_files(urls: Sequence[str], storage_options) -> list[str]:
    """Delete files by URL; returns those that could not be deleted."""
    left = []
    for url in urls:
        location = parse_location(url)
        try:
            filesystem_for(location, storage_options).delete_file(location.path)
        except FileNotFoundError:
            continue
        except OSError:
            left.append(url)
    return left
