"""What one execution asks of the readers: the columns, the filter and the row ids.

Its own module because every reader takes it (``_reader``, ``_file_columns``,
``_encrypted``) and ``_reader`` dispatches to the others: the request sits below them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from ..catalog import ColumnSpec
from ..pathres import StorageOptions

__all__ = ["FILE_ID", "POSITION", "ROW_ID", "ReadRequest"]

# The name of the row-id column the change feed asks for (``ReadRequest.with_row_ids``).
ROW_ID = "rowid"
# The columns a row change asks for (``with_positions``): each row's data file and its
# physical position there (both null for a row inlined in the catalog).
POSITION = "__ducklake_position"
FILE_ID = "__ducklake_file_id"


@dataclass(frozen=True)
class ReadRequest:
    """What one execution wants from its tasks.

    Attributes:
        columns: table columns to materialise (output plus filter columns).
        output: output column names in order (may be empty, e.g. for ``count(*)``).
        filter: applied exactly after deletes; ``None`` for no filter.
        filter_columns: top-level column names the filter reads.
        with_row_ids: append a ``rowid`` column (for the change feed).
        with_positions: append each row's physical position in its data file and the
            file's id (after ``rowid``): what a delete or update names its rows by.
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
    with_positions: bool = False
    batch_size: int = 131_072
    table_columns: tuple[ColumnSpec, ...] = ()
