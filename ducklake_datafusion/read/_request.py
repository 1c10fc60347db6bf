"""What one execution asks of the readers: the columns, the filter and the row ids.

Its own module because every reader takes it (``_reader``, ``_file_columns``,
``_encrypted``) and ``_reader`` dispatches to the others: the request sits below them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from ..catalog import ColumnSpec
from ..pathres import StorageOptions

__all__ = ["ROW_ID", "ReadRequest"]

# The name of the row-id column the change feed asks for (``ReadRequest.with_row_ids``).
ROW_ID = "rowid"


@dataclass(frozen=True)
class ReadRequest:
    """What one execution wants from its tasks.

    Attributes:
        columns: table columns to materialise (output plus filter columns).
        output: output column names in order (may be empty, e.g. for ``count(*)``).
        filter: applied exactly after deletes; ``None`` for no filter.
        filter_columns: top-level column names the filter reads.
        with_row_ids: append a ``rowid`` column (for the change feed).
        table_columns: every column of the table at the snapshot, in table order: how a
            file that DuckDB reads by position maps (``_file_checks.legacy_positional``).
    """

    table: str
    snapshot: int
    columns: tuple[ColumnSpec, ...]
    output: tuple[str, ...]
    filter: pc.Expression | None
    filter_columns: frozenset[str]
    storage: StorageOptions
    with_row_ids: bool = False
    batch_size: int = 131_072
    table_columns: tuple[ColumnSpec, ...] = ()
