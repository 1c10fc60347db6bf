"""The Spark entry points: ``register_spark``, ``read_table`` and ``read_changes``.

They run on every supported pyspark (3.5 to 4.3, ``_versions``): the part of a read done
by Spark's own Parquet reader (``parquet``) needs nothing newer, and the ``ducklake``
Python data source (``source``) is imported and registered only when a read needs it,
which on pyspark 3.5 and 4.0 raises :class:`UnsupportedFeatureError` naming the table and
why.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from ..errors import InvalidOptionError
from . import _workers
from ._catalog_read import catalog_frame
from ._core import (
    CHANGE_KEYS,
    GUARD_COLUMN,
    GUARD_OPTION,
    AlreadyRead,
    SourceOptions,
    guard_field,
    has_data_source,
    option_text,
    require_data_source,
)
from .changes import driver_changes_frame, read_changes_frame
from .parquet import parquet_scan, pruning_filter

__all__ = ["PUSHDOWN_CONF", "read_changes", "read_table", "register_spark"]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
FORMAT = "ducklake"
# The sessions the format is registered in: a registration pickles the data source's class
# to the JVM (~65 ms), and every read through the data source asks for one.
_REGISTERED: weakref.WeakSet = weakref.WeakSet()


def register_spark(spark, *, check_workers: bool = True) -> None:
    """Register the ``ducklake`` format in ``spark`` and enable Python filter pushdown.

    pyspark 4.1 refuses to run a data source that implements ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is off, so this turns it on for the session.

    Args:
        check_workers: once per Spark application, run one tiny task to check that the
            Python workers can import this package in the driver's version, and raise
            :class:`MissingDependencyError` saying what to set up if not (see
            ``_workers``).
    """
    require_data_source('the "ducklake" format (spark.read.format("ducklake"))')
    from .source import DuckLakeDataSource  # pyspark 4.1+: the data source API

    spark.conf.set(PUSHDOWN_CONF, "true")
    if spark not in _REGISTERED:
        spark.dataSource.register(DuckLakeDataSource)
        _REGISTERED.add(spark)
    if check_workers:
        _workers.check_workers(spark)


def read_table(
    spark,
    metadata: str,
    table: str,
    *,
    snapshot: int | None = None,
    snapshot_time: _dt.datetime | str | None = None,
    data_path: str | None = None,
    partition_bytes: int | str | None = None,
    storage_options: Mapping[str, object] | None = None,
    schema: StructType | str | None = None,
    pushdown: bool = True,
    min_partitions: int | None = None,
    native: bool = True,
    where: str | None = None,
    catalog_scan: bool = True,
    **options: object,
):
    """Read ``schema.table`` of a lake into a Spark DataFrame (registers the format).

    When the package's jar is on the session's classpath (also on a Spark Connect
    server), the DataFrame is the catalog's scan (``DuckLakeCatalog``, configured for this
    lake at runtime under a private name: ``_catalog_read``): filters on it, such as
    ``read_table(...).where("k BETWEEN 1 AND 9")``, prune files by catalog statistics
    before Spark opens any, and every table reads, on pyspark 3.5 too (what Spark's reader
    cannot return exactly, the catalog's planner reads). The catalog is not used, and the
    table is read as below, with ``catalog_scan=False``, when ``schema`` or
    ``partition_bytes`` or ``min_partitions`` is passed, with ``native=False`` or
    ``pushdown=False``, when the session's ``spark.redaction.regex`` would not hide a
    secret storage option, or when the catalog cannot load the table (logged why).
    Without the catalog, filters on the DataFrame are pushed down to the data source part
    (files pruned with catalog statistics) and stay correct when the DataFrame is reused
    across queries, thanks to the scan guard; the native part prunes files only with
    ``where=``.

    Args:
        spark: the ``SparkSession``.
        metadata: the catalog, as for ``DuckLakeCatalog``.
        table: ``"schema.table"`` (or ``"table"`` in ``main``).
        snapshot / snapshot_time: time travel (an id, or a datetime / ISO string).
        data_path: override the catalog's data path.
        partition_bytes: target bytes per Spark input partition (default 128 MiB).
        min_partitions: split the scan into at least this many partitions (as far as it
            has files); default: Spark's default parallelism, so small tables still use
            every core.
        storage_options: storage options as for ``DuckLakeCatalog``; may also be passed
            as keyword arguments.
        schema: a Spark schema (``StructType`` or DDL) selecting the columns to read.
        pushdown: push filters down to the scan (default true).
        native: read the data files with Spark's own Parquet reader (older layouts by
            field id, deletes applied inside that reader by the package's jar or by a
            broadcast join of bit masks), inlined rows as a local DataFrame, and the rest
            (name-mapped or encrypted files, stores without a connector, types Spark's
            reader would change) through the data source, unioned (see ``parquet``). On by
            default: Spark's reader is faster than the data source (README, Spark
            performance). ``False`` reads everything through the data source. Only
            without ``schema`` (a schema reads through the data source).
        where: a Spark SQL condition on the table's columns, applied to the rows and,
            before Spark lists any file, used to leave out the files whose catalog
            statistics show they cannot match (``parquet/_where``). On the catalog's scan
            this is the same as a filter on the returned DataFrame; without it, such a
            filter prunes row groups only in Spark's Parquet reader (Spark opens every
            file it is given), and files too on the data source.
        catalog_scan: read through the catalog's scan where the jar allows it (default);
            ``False`` hands Spark the table's files listed up front, as without the jar
            (no planner process; a filter on the DataFrame then prunes no files).

    Raises:
        InvalidOptionError: a change-feed option was passed (use :func:`read_changes`), or
            ``where`` is not a Spark SQL condition on the table's columns.
        UnsupportedFeatureError: without the catalog's scan, on pyspark 3.5 or 4.0, part
            of the table needs the data source (the message says which part and why).
        MissingDependencyError: without the catalog's scan, part of the table needs the
            data source and Spark's Python workers cannot run this package. A table read
            wholly by Spark's Parquet reader needs nothing of ours on the executors, only
            Spark; nor does the catalog's scan.
    """
    arguments = dict(locals())  # the keyword arguments above, as TableRead.of takes them
    for positional in ("spark", "metadata", "table", "options"):
        del arguments[positional]
    read = TableRead.of(spark, metadata, table, options=options, **arguments)
    frame = catalog_frame(spark, read.source) if read.by_catalog else None
    if frame is None:  # without the catalog: Spark's reader, the data source, or both
        frame = _native_frame(spark, read) if read.by_parquet else _source_frame(spark, read)
    return _filtered(frame, read)


@dataclass(frozen=True)
class TableRead:
    """``read_table``'s arguments, checked once: what to read and by which route.

    Attributes:
        source: the lake, table, snapshot and storage, as the data source reads them.
        name: the table as the caller named it (for messages).
        schema: the Spark schema passed, if any (read through the data source).
        where: the condition passed, if any.
        by_catalog: try the catalog's scan first (``catalog_scan``, ``native`` and
            ``pushdown``, and nothing the catalog does not take: ``schema``,
            ``partition_bytes``, ``min_partitions``).
        by_parquet: otherwise read what Spark's own Parquet reader can (``native`` and no
            ``schema``), the data source the rest.
    """

    source: SourceOptions
    name: str
    schema: StructType | str | None = None
    where: str | None = None
    by_catalog: bool = False
    by_parquet: bool = False

    @classmethod
    def of(cls, spark, metadata: str, table: str, *, options: Mapping[str, object], **kw):
        """Check ``read_table``'s arguments (typed errors), keeping their types.

        Raises:
            InvalidOptionError: a change-feed option, or a malformed or unknown option.
        """
        passed = sorted(k for k, v in options.items() if k.lower() in CHANGE_KEYS and v is not None)
        if passed:
            raise InvalidOptionError(
                f"read_table reads a table state; for the change feed ({', '.join(passed)}) "
                "use read_changes(spark, metadata, table, start, end)"
            )
        typed = {  # parsed as they are
            "snapshot": kw["snapshot"],
            "snapshot_time": kw["snapshot_time"],
            "partition_bytes": kw["partition_bytes"],
            "pushdown": kw["pushdown"],
            "min_partitions": kw["min_partitions"] or _default_parallelism(spark),
            GUARD_OPTION: True,
        }
        named = {  # paths, names and storage options: as their option text would be
            "metadata": metadata,
            "data_path": kw["data_path"],
            **(kw["storage_options"] or {}),
            **options,
            "path": table,
        }
        values = {**typed, **{k: _text(v) for k, v in named.items() if v is not None}}
        source = SourceOptions.parse(values)
        native, schema = kw["native"], kw["schema"]
        catalog_fits = schema is None and kw["partition_bytes"] is None and not kw["min_partitions"]
        return cls(
            source=source,
            name=table,
            schema=schema,
            where=kw["where"],
            by_catalog=kw["catalog_scan"] and native and kw["pushdown"] and catalog_fits,
            by_parquet=native and schema is None,
        )

    @property
    def why_not_parquet(self) -> str:
        return "native=False was passed" if self.schema is None else "a schema was passed"


def _native_frame(spark, read: TableRead):
    """The files Spark's own Parquet reader reads exactly (pruned with ``where``), and the
    rest through the data source, told what Spark reads beside it."""
    with read.source.open_lake() as lake:
        resolved = lake.table(read.source.schema_name, read.source.table_name)
        prune = None if read.where is None else pruning_filter(resolved, read.where)
        scan = parquet_scan(spark, resolved, read.source.storage, prune)
    pinned = read.source.pinned(resolved.snapshot_id)
    if scan.complete:  # every file and inlined row read by Spark: no data source part
        return scan.frame
    if scan.frame is not None:  # the source reads exactly what Spark's reader does not
        already = AlreadyRead(frozenset(scan.data_file_ids), scan.inlined_tasks > 0)
        pinned = dataclasses.replace(pinned, already_read=already)
    source = _source_frame(spark, read, pinned, "; ".join(scan.left_over))
    return source if scan.frame is None else scan.frame.unionByName(source)


def _source_frame(spark, read: TableRead, source: SourceOptions | None = None, why=None):
    """The table (or what Spark's reader leaves of it) through the data source."""
    source = source or read.source
    pinned = source.snapshot if source.snapshot is not None else "latest"
    require_data_source(  # pyspark 3.5 / 4.0
        f"reading table {read.name} (snapshot {pinned})", why or read.why_not_parquet
    )
    register_spark(spark, check_workers=False)  # the workers are checked just below
    # The data source's executors run our reader: their Python needs this package (a read
    # wholly by Spark's Parquet reader needs nothing but Spark there).
    _workers.check_workers(spark, needed_for=f"reading table {read.name} through the data source")
    options = source.as_options()  # the edge: Spark hands a data source text
    path = options.pop("path")
    reader = spark.read.format(FORMAT).options(**options)
    if isinstance(read.schema, str):
        reader = reader.schema(f"{read.schema}, {GUARD_COLUMN} BOOLEAN NOT NULL")
    elif read.schema is not None:
        reader = reader.schema(StructType([*read.schema.fields, guard_field()]))
    from pyspark.sql import functions as F

    return reader.load(path).where(F.col(GUARD_COLUMN)).drop(GUARD_COLUMN)


def _filtered(frame, read: TableRead):
    """``frame.where(where)``; a condition Spark cannot parse or resolve is ours to name."""
    if read.where is None:
        return frame
    from pyspark.errors import AnalysisException

    try:
        return frame.where(read.where)
    except AnalysisException as exc:
        raise InvalidOptionError(
            f"where={read.where!r} for table {read.name} is not a Spark SQL condition on its "
            f"columns ({', '.join(frame.columns)}): {exc}"
        ) from exc


def read_changes(
    spark,
    metadata: str,
    table: str,
    start: int | _dt.datetime | _dt.date | str,
    end: int | _dt.datetime | _dt.date | str | None = None,
    *,
    data_path: str | None = None,
    partition_bytes: int | str | None = None,
    min_partitions: int | None = None,
    storage_options: Mapping[str, object] | None = None,
    schema: StructType | str | None = None,
    **options: object,
):
    """The change feed of ``schema.table`` from ``start`` through ``end`` as a DataFrame.

    The rows and columns of ``ducklake_table_changes`` / ``functions.table_changes``:
    ``snapshot_id`` (bigint), ``rowid`` (bigint), ``change_type`` (string: ``insert``,
    ``delete``, ``update_preimage``, ``update_postimage``), then the table's columns as of
    the end snapshot, in ``table_changes``' order. Spark computes it: the executors read
    the states that differ, Spark joins them on rowid and classifies the rows (see
    ``changes/_feed``); the driver reads only metadata, so the feed may exceed its memory.
    Filters are applied by Spark on top (no pushdown). (The format's ``read_changes``
    option instead computes the feed in the planning worker: a data source cannot hold a
    join.) On pyspark 3.5 and 4.0, which lack the data source API, the driver computes
    the feed with the core's ``table_changes`` and hands it to Spark as a local DataFrame
    (``changes/_driver_feed``): it must fit in the driver's memory, and only tables whose
    columns Spark's own reader returns exactly are taken.

    Args:
        spark: the ``SparkSession``.
        metadata: the catalog, as for ``DuckLakeCatalog``.
        table: ``"schema.table"`` (or ``"table"`` in ``main``).
        start / end: inclusive bounds: snapshot ids, or times (datetime, date or ISO text;
            no zone means UTC). A start time selects the first snapshot at or after it, an
            end time the last at or before it. ``end=None``: the latest snapshot now. Both
            are resolved once, here, so later actions on the DataFrame read the same range.
        data_path, partition_bytes, storage_options: as for :func:`read_table`.
        min_partitions: split each side's reads into at least this many partitions (as
            far as there are files to read); default: Spark's default parallelism.
        schema: a Spark schema (``StructType`` or DDL) selecting feed columns by name (and
            re-typing them); rows still follow every table column.

    Raises:
        SnapshotNotFoundError, InvalidOptionError, TableNotFoundError: bad bounds, options
            or table (raised here, from the catalog, before any Spark job).
        UnsupportedFeatureError: pyspark 3.5 or 4.0, and a column type the driver's feed
            does not take.
    """
    if start is None:
        raise InvalidOptionError("read_changes needs a start snapshot id or time")
    values: dict[str, object] = {
        "metadata": metadata,
        "changes_start": start,
        "changes_end": end,
        "data_path": data_path,
        "partition_bytes": partition_bytes,
        "min_partitions": min_partitions or _default_parallelism(spark),
    }
    merged = {**values, **(storage_options or {}), **options}
    texts = {k: option_text(v) for k, v in merged.items() if v is not None}
    if not has_data_source():  # pyspark 3.5 / 4.0: computed on the driver
        return driver_changes_frame(spark, table, texts, schema)
    register_spark(spark)
    return read_changes_frame(spark, table, texts, schema)


def _default_parallelism(spark) -> int | None:
    """``spark.sparkContext.defaultParallelism`` (None on Spark Connect, which has none)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except (AttributeError, NotImplementedError):  # Spark Connect: no SparkContext
        return None


def _text(value: object) -> object:
    """A value that is text in the data source's options, as its option text."""
    return value if isinstance(value, str) else option_text(value)
