"""DataFusion's ``INSERT INTO`` / ``INSERT OVERWRITE`` into a lake table.

The Rust provider of a table at the latest snapshot is handed to DataFusion with a writer
(``_rust`` ``table_provider_with_writer``; ``rust/src/sink.rs``); a table the native scan
does not read gets a Rust provider over the exact reader (``_exact_scan``) to carry the
writer. DataFusion's inserted
rows reach :class:`InsertWriter` as a ``pyarrow.RecordBatchReader``, batch after batch,
and go through the engine-neutral writer (``write.append``: Parquet files as DuckDB
writes them, one commit). A table read at an older snapshot (``"t@v3"``, a pinned
catalog) is never writable: an insert into it fails in DataFusion ("read-only").
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from ..errors import remembered_for_datafusion

__all__ = ["InsertWriter", "WritableProvider"]


class InsertWriter:
    """``(reader, overwrite) -> rows written``: one insert into one table, one commit."""

    def __init__(self, table) -> None:
        self._table = table  # the DuckLakeTable the insert names (its table id is checked)

    def __call__(self, reader: pa.RecordBatchReader, overwrite: bool) -> int:
        from ..write import append

        counted = _Counted(reader)
        # DataFusion receives our errors as text: remembered for errors.typed()
        with remembered_for_datafusion():
            append(
                self._table.lake,
                self._table.entry.schema_name,
                self._table.entry.table_name,
                counted.reader(),
                overwrite=overwrite,
                expected_table_id=self._table.entry.table_id,
            )
        return counted.rows


class _Counted:
    def __init__(self, reader: pa.RecordBatchReader) -> None:
        self._reader = reader
        self.rows = 0

    def _batches(self) -> Iterator[pa.RecordBatch]:
        for batch in self._reader:
            self.rows += batch.num_rows
            yield batch

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self._reader.schema, self._batches())


class WritableProvider:
    """A Rust provider that DataFusion may also insert into (through ``writer``)."""

    def __init__(self, provider, writer: InsertWriter) -> None:
        self._provider = provider
        self._writer = writer

    def __datafusion_table_provider__(self, session):
        return self._provider.table_provider_with_writer(session, self._writer)
