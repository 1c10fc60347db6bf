"""Types of the Rust extension ``ducklake_datafusion._rust`` (``rust/src``).

``tests/provider/test_rust_contract.py`` checks that this stub and the built module name the same
things, with the same parameters.
"""

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypedDict

import pyarrow as pa
from typing_extensions import Self

from .provider._rust_contract import ProviderSpec

DATAFUSION_VERSION: Final[str]
"""The datafusion release whose crates the extension is built with."""

PLAN_VERSION: Final[str]
"""The plan export's form version the extension reads (``read.PLAN_VERSION``)."""

PROVIDER_SPEC_FIELDS: Final[tuple[str, ...]]
"""The attributes of a ``ProviderSpec`` that ``LakeProvider`` reads, in order."""

LOCATION_COLUMNS: Final[tuple[str, ...]]
"""The columns a locating provider (``ProviderSpec.row_id_starts``) has after the table's:
the row id, the data file id and the position (``rust/src/locations.rs``)."""

ERROR_CLASSES: Final[tuple[str, ...]]
"""Every class of ``ducklake_datafusion.errors`` the extension names in a query error
(``"ClassName: message"``; ``rust/src/errors.rs``)."""

class StoreConfigError(ValueError):
    """The storage options do not configure the provider's object store."""

class ContractError(ValueError):
    """A value handed to the extension does not have the shape it expects (names the table
    and the column)."""

class _BoundarySchemas(TypedDict):
    files: pa.Schema
    bounds: pa.Schema
    inlined: pa.Schema
    defaults: pa.Schema

def boundary_schemas(schema: pa.Schema) -> _BoundarySchemas:
    """The shapes a provider of a table of ``schema`` expects: the file table, every column
    a bounds table may have, the inlined rows and the defaults."""

class _ScanReport(TypedDict):
    files_total: int
    files_kept: int
    files_with_deletes: int
    rows_skipped: int
    files_read_whole: int
    rows_dropped: int
    filters: int
    partitions: int
    from_catalog: bool
    decoder_filters: int
    files_split: int
    files_read_exactly: int

_Kind: TypeAlias = Literal["cmp", "between", "in", "null", "not_null"]
_Comparison: TypeAlias = Literal["==", "!=", "<", "<=", ">", ">="]

class Predicate:
    """One conjunct of a lazy scan's filters (frozen): ``cmp`` (``column op value``),
    ``between`` (low, high), ``in`` (values), ``null``, ``not_null`` (no values); values
    are one-element pyarrow arrays of the literal's type."""

    KINDS: ClassVar[tuple[_Kind, ...]]
    COMPARISONS: ClassVar[tuple[_Comparison, ...]]
    def __new__(
        cls,
        kind: _Kind,
        column: str,
        values: Sequence[pa.Array],
        op: _Comparison | None = None,
    ) -> Self: ...
    @property
    def kind(self) -> _Kind: ...
    @property
    def column(self) -> str: ...
    @property
    def op(self) -> _Comparison | None: ...
    @property
    def values(self) -> tuple[pa.Array, ...]: ...

class LakeProvider:
    """A DuckLake table at one snapshot, as DataFusion scans it (frozen)."""

    def __new__(cls, spec: ProviderSpec) -> Self: ...
    def __datafusion_table_provider__(self, session: Any) -> Any:
        """The ``FFI_TableProvider`` capsule (``session``: a ``SessionContext`` or a logical
        extension codec capsule)."""
    def table_provider_with_writer(
        self, session: Any, writer: Callable[[pa.RecordBatchReader, bool], int]
    ) -> Any:
        """The capsule of a provider that also takes ``INSERT INTO``: the rows go to
        ``writer(reader, overwrite)``, which returns the count written."""
    def last_scan(self) -> _ScanReport: ...

class LazyProvider:
    """A provider whose files come with the query's filters: ``resolver(predicates,
    count_only)`` answers each scan with a ``LakeProvider`` or (for ``count(*)``) a row
    count."""

    def __new__(
        cls,
        table: str,
        schema: pa.Schema,
        resolver: Callable[[list[Predicate | tuple[Predicate, ...]], bool], LakeProvider | int],
    ) -> Self: ...
    def __datafusion_table_provider__(self, session: Any) -> Any: ...
    def table_provider_with_writer(
        self, session: Any, writer: Callable[[pa.RecordBatchReader, bool], int]
    ) -> Any: ...
    def last_scan(self) -> _ScanReport: ...

class ExactProvider:
    """A provider over the exact reader (``provider/_exact_scan.py``): ``scan(predicates,
    columns, limit)`` returns one callable per partition, each giving a
    ``pyarrow.RecordBatchReader`` of the table's (projected) schema."""

    def __new__(
        cls,
        table: str,
        schema: pa.Schema,
        scan: Callable[
            [list[Predicate | tuple[Predicate, ...]], list[str] | None, int | None],
            list[Callable[[], pa.RecordBatchReader]],
        ],
    ) -> Self: ...
    def __datafusion_table_provider__(self, session: Any) -> Any: ...
    def table_provider_with_writer(
        self, session: Any, writer: Callable[[pa.RecordBatchReader, bool], int]
    ) -> Any: ...

def murmur3_32(array: pa.Array) -> pa.Array:
    """Murmur3 (x86, 32 bits, seed 0) of every value of an int64, float64, string or
    binary array, as int32 (nulls stay null): the hash of ``bucket(N)`` partitions."""

def read_whole_files(
    paths: list[str], storage: dict[str, str], concurrency: int
) -> tuple[list[tuple[pa.RecordBatch, list[int]]], tuple[int, str, str] | None]:
    """Whole Parquet files (object-store paths in the store of ``storage``), read
    ``concurrency`` at a time off the GIL (a compaction's sources): consecutive files of the
    same columns as one batch with each file's row count, and ``None``; or, when a file
    cannot be read, the groups before it and ``(its index, error class, reason)``."""
