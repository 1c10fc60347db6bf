"""The ``.option(...)`` strings of ``spark.read.format("ducklake")``, validated once.

Spark hands a data source its options as a case-insensitive mapping of strings. Unknown
keys are errors (a mistyped credential would otherwise surface much later as "access
denied"): a key is either one of :data:`SOURCE_KEYS` or a storage option accepted by
:class:`~ducklake_datafusion.pathres.StorageOptions` (same names as the ``storage_options``
of ``DuckLakeCatalog``).

One more key is not an option for users: ``read_table`` tells the data source which
files and rows Spark's own Parquet reader already reads beside it (:class:`AlreadyRead`)
under :data:`ALREADY_READ_OPTION`. Spark passes a data source nothing but its options, so
the hand-over travels as one; it is never listed among the options, and its value is
read only as ``read_table`` writes it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import InvalidOptionError
from ...pathres import ACCEPTED_KEYS, StorageOptions
from ...scan import Lake
from ._option_values import (
    DEFAULT_PARTITION_BYTES,
    count_option,
    flag_option,
    option_text,
    quoted_table_name,
    size_option,
    snapshot_option,
    snapshot_time_option,
    split_table_name,
    split_time_travel,
)

if TYPE_CHECKING:
    from ...scan import LakeTable

__all__ = [
    "ALREADY_READ_OPTION",
    "CHANGE_KEYS",
    "DEFAULT_PARTITION_BYTES",
    "GUARD_COLUMN",
    "GUARD_OPTION",
    "SOURCE_KEYS",
    "AlreadyRead",
    "OpenTable",
    "SourceOptions",
    "guard_field",
    "option_text",
    "quoted_table_name",
    "snapshot_option",
    "snapshot_time_option",
    "split_table_name",
]

GUARD_OPTION = "scan_guard"  # set by read_table(); see source/_table_reader.py
GUARD_COLUMN = "__ducklake_scan_guard"
SOURCE_KEYS = (
    "path",
    "table",
    "metadata",
    "snapshot",
    "snapshot_time",
    "data_path",
    "metadata_schema",
    "partition_bytes",
    "min_partitions",
    "pushdown",
    "read_changes",
    "changes_start",
    "changes_end",
    GUARD_OPTION,
)
CHANGE_KEYS = ("read_changes", "changes_start", "changes_end")
# read_table -> data source only (see the module docstring); not one of SOURCE_KEYS.
ALREADY_READ_OPTION = "__ducklake_internal_already_read"


def guard_field():
    """The constant guard column (always true) that ``read_table`` filters on and drops."""
    from pyspark.sql.types import BooleanType, StructField

    return StructField(GUARD_COLUMN, BooleanType(), nullable=False)


@dataclass(frozen=True)
class AlreadyRead:
    """What ``read_table``'s Spark Parquet part reads beside the data source, which skips it.

    Attributes:
        data_file_ids: the data files Spark's own reader reads.
        inlined: the inlined rows are read too (as a local DataFrame).
    """

    data_file_ids: frozenset[int] = frozenset()
    inlined: bool = False

    def __bool__(self) -> bool:
        return bool(self.data_file_ids) or self.inlined

    def option(self) -> dict[str, str]:
        """The option that hands this to the data source."""
        value = {"data_file_ids": sorted(self.data_file_ids), "inlined": self.inlined}
        return {ALREADY_READ_OPTION: json.dumps(value, separators=(",", ":"))}

    @classmethod
    def from_option(cls, text: str | None) -> AlreadyRead:
        """Read the option back (absent: nothing is read beside the source).

        Raises:
            InvalidOptionError: a value ``option()`` did not write.
        """
        if text is None:
            return cls()
        try:
            value = json.loads(str(text))
            ids = frozenset(int(i) for i in value["data_file_ids"])
            inlined = value["inlined"]
            if not isinstance(inlined, bool):
                raise TypeError(inlined)
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidOptionError(
                f"{ALREADY_READ_OPTION!r} is internal to read_table, not an option of format "
                f"'ducklake'; got {text!r}"
            ) from exc
        return cls(ids, inlined)


@dataclass(frozen=True)
class SourceOptions:
    """What one ``load()`` reads: which lake, table and snapshot, and how to split it.

    Plain, picklable data: it travels inside the data source and reader objects that
    Spark pickles between its Python workers.
    """

    metadata: str
    schema_name: str
    table_name: str
    snapshot: int | None = None
    snapshot_time: _dt.datetime | None = None
    data_path: str | None = None
    metadata_schema: str | None = None
    already_read: AlreadyRead = dataclasses.field(default_factory=AlreadyRead)  # read_table
    storage: StorageOptions = dataclasses.field(default_factory=StorageOptions)
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    min_partitions: int = 1
    pushdown: bool = False
    guard: bool = False
    changes_start: str | None = None
    changes_end: str | None = None  # None: the latest snapshot

    @classmethod
    def parse(cls, options: Mapping[str, object]) -> SourceOptions:
        """Validate Spark's option strings, or ``read_table``'s arguments as they are
        typed (ints, bools, datetimes: never turned into text and back).

        Raises:
            InvalidOptionError: a missing or malformed option, or an unknown key.
        """
        values = _without_table_properties(
            {str(k).lower(): v for k, v in options.items() if v is not None}
        )
        already_read = AlreadyRead.from_option(values.pop(ALREADY_READ_OPTION, None))
        storage = {k: v for k, v in values.items() if k not in SOURCE_KEYS}
        unknown = [k for k in storage if k not in ACCEPTED_KEYS]
        if unknown:
            raise InvalidOptionError(
                f"unknown option(s) {unknown} for format 'ducklake'; options are "
                f"{', '.join(SOURCE_KEYS)} and the storage options {', '.join(ACCEPTED_KEYS)}"
            )
        metadata = values.get("metadata")
        if not metadata:
            hint = ""
            if not options:  # pyspark hands a table created USING ducklake none at read time
                hint = (
                    "; it received no options at all, as pyspark reads a table created with "
                    "CREATE TABLE ... USING ducklake: for SQL, configure the lake as a catalog "
                    "instead (spark.sql.catalog.lake = io.ducklake_datafusion.spark."
                    "DuckLakeCatalog, spark.sql.catalog.lake.metadata = <catalog>)"
                )
            raise InvalidOptionError(
                "format 'ducklake' needs .option('metadata', <catalog>), e.g. 'lake.ducklake', "
                "'sqlite:lake.sqlite' or 'postgres:dbname=lake host=...'" + hint
            )
        name, suffix = split_time_travel(_table_option(values))
        schema_name, table_name = split_table_name(name)
        snapshot = snapshot_option(values.get("snapshot"))
        snapshot_time = snapshot_time_option(values.get("snapshot_time"))
        if suffix is not None:
            if snapshot is not None or snapshot_time is not None:
                raise InvalidOptionError(
                    f"table {_table_option(values)!r} already names a snapshot after '@'; "
                    "do not also pass 'snapshot' or 'snapshot_time'"
                )
            snapshot, snapshot_time = suffix.snapshot_id, suffix.time
        if snapshot is not None and snapshot_time is not None:
            raise InvalidOptionError("pass either the 'snapshot' or the 'snapshot_time' option")
        changes_start, changes_end = _change_bounds(values)
        if changes_start is not None and (snapshot is not None or snapshot_time is not None):
            raise InvalidOptionError(
                "the change feed (read_changes / changes_start / changes_end) reads a range of "
                "snapshots; it cannot be combined with 'snapshot' or 'snapshot_time'"
            )
        return cls(
            metadata=metadata,
            schema_name=schema_name,
            table_name=table_name,
            snapshot=snapshot,
            snapshot_time=snapshot_time,
            data_path=values.get("data_path") or None,
            metadata_schema=values.get("metadata_schema") or None,
            already_read=already_read,
            storage=StorageOptions.from_user(storage),
            partition_bytes=size_option(values.get("partition_bytes")),
            min_partitions=count_option(values.get("min_partitions")),
            pushdown=flag_option(values, "pushdown"),
            guard=flag_option(values, GUARD_OPTION),
            changes_start=changes_start,
            changes_end=changes_end,
        )

    def as_options(self) -> dict[str, str]:
        """The option strings that :meth:`parse` reads back as this value: what
        ``read_table`` hands the data source, the one edge where they must be text."""
        options = {
            "metadata": self.metadata,
            "path": quoted_table_name(self.schema_name, self.table_name),
            "partition_bytes": str(self.partition_bytes),
            "min_partitions": str(self.min_partitions),
            "pushdown": option_text(self.pushdown),
            GUARD_OPTION: option_text(self.guard),
        }
        named = {
            "snapshot": self.snapshot,
            "snapshot_time": self.snapshot_time,
            "data_path": self.data_path,
            "metadata_schema": self.metadata_schema,
            "changes_start": self.changes_start,
            "changes_end": self.changes_end,
        }
        for name in (f.name for f in dataclasses.fields(self.storage)):
            named[name] = getattr(self.storage, name)
        options.update((k, option_text(v)) for k, v in named.items() if v is not None)
        if self.already_read:
            options.update(self.already_read.option())
        return options

    @property
    def table_label(self) -> str:
        return f"{self.schema_name}.{self.table_name}"

    @property
    def changes(self) -> bool:
        """True when this load reads the change feed instead of a table state."""
        return self.changes_start is not None

    def pinned(self, snapshot_id: int) -> SourceOptions:
        """The same read, fixed to one snapshot id (so later plans see the same table)."""
        return dataclasses.replace(self, snapshot=snapshot_id, snapshot_time=None)

    def pinned_changes(self, first: int, last: int) -> SourceOptions:
        """The same change feed, its bounds fixed to the snapshot ids they resolved to."""
        return dataclasses.replace(self, changes_start=str(first), changes_end=str(last))

    def lake(self) -> Lake:
        """The lake (pinned if ``snapshot``/``snapshot_time`` are set); see :meth:`open_lake`."""
        return Lake.open(
            self.metadata,
            data_path=self.data_path,
            snapshot=self.snapshot,
            snapshot_time=self.snapshot_time,
            storage_options=self.storage,
            metadata_schema=self.metadata_schema,
        )

    def resolve(self) -> OpenTable:
        """Resolve the table in the catalog; release the handle with ``close()``.

        Only the Spark driver's planning workers call this; executors never do.
        """
        lake = self.lake()
        try:
            return OpenTable(lake.table(self.schema_name, self.table_name), lake)
        except BaseException:
            lake.close()
            raise

    @contextmanager
    def open_lake(self) -> Iterator:
        """:meth:`lake` as a context manager: yields it, then releases its handle."""
        lake = self.lake()
        try:
            yield lake
        finally:
            lake.close()

    @contextmanager
    def open_table(self) -> Iterator:
        """:meth:`resolve` as a context manager: yields the table, then releases the handle."""
        opened = self.resolve()
        try:
            yield opened.table
        finally:
            opened.close()


@dataclass
class OpenTable:
    """A resolved ``scan.LakeTable`` and the lake whose database handle it uses."""

    table: LakeTable | None
    lake: Lake

    def close(self) -> None:
        """Release the catalog database now (a DuckDB file would stay locked a while)."""
        self.lake.close()


# What Spark adds to the options of a table created ``USING ducklake OPTIONS (...)``: the
# table's properties, and each option again as ``option.<key>``.
_TABLE_PROPERTIES = frozenset(["location", "owner", "provider", "external", "is_managed_location"])


def _without_table_properties(values: dict[str, str]) -> dict[str, str]:
    """``values`` without the properties Spark adds for a ``CREATE TABLE ... USING
    ducklake`` (an ``option.<key>`` stands for ``<key>`` where that is not given)."""
    found = {k: v for k, v in values.items() if k not in _TABLE_PROPERTIES}
    for key in [k for k in found if k.startswith("option.")]:
        value = found.pop(key)
        found.setdefault(key[len("option.") :], value)
    return found


def _table_option(values: Mapping[str, str]) -> str:
    path, table = values.get("path"), values.get("table")
    if path and table and path != table:
        raise InvalidOptionError(
            f"load({path!r}) and .option('table', {table!r}) name different tables; pass one"
        )
    name = path or table
    if not name:
        raise InvalidOptionError(
            "format 'ducklake' needs a table: .load('main.orders') or .option('table', ...)"
        )
    return name


def _change_bounds(values: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``read_changes`` / ``changes_start`` / ``changes_end`` -> (start, end) texts.

    ``read_changes`` is ``"start,end"``, or ``"true"`` with the bounds in ``changes_start``
    and ``changes_end``; ``changes_start`` alone also turns the mode on. The bounds are
    checked by the core when they are resolved (``table_changes``' errors).
    """
    mode = str(values.get("read_changes", "")).strip()
    start = str(values.get("changes_start", "")).strip() or None
    end = str(values.get("changes_end", "")).strip() or None
    if mode.lower() in ("", "true", "false"):
        if mode.lower() == "false":
            if start or end:
                raise InvalidOptionError(
                    "option 'read_changes' is 'false' but 'changes_start'/'changes_end' are set"
                )
            return None, None
        if start is None and (end is not None or mode.lower() == "true"):
            raise InvalidOptionError(
                "the change feed needs a start: .option('changes_start', <snapshot id or ISO "
                "time>) (optionally 'changes_end'), or .option('read_changes', '<start>,<end>')"
            )
        return start, end
    if start is not None or end is not None:
        raise InvalidOptionError(
            f"option 'read_changes' ({mode!r}) already gives both bounds; do not also pass "
            "'changes_start' / 'changes_end'"
        )
    parts = [p.strip() for p in mode.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(
            f"option 'read_changes' must be '<start>,<end>' (snapshot ids or ISO timestamps, "
            f"e.g. '3,7' or '2024-05-01T00:00:00,2024-05-02T00:00:00'), got {mode!r}"
        )
    return parts[0], parts[1]
