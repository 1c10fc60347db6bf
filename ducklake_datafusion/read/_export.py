"""A planned scan's facts as one versioned Arrow IPC stream, for engines outside Python.

Both engines outside Python read these bytes: the Rust provider (``provider/_rust_build``
hands them over; ``rust/src/plan.rs`` reads them) and the Spark catalog's JVM code
(``PlannedFiles.java``), each checking the version: one documented form instead of
ad-hoc lists. It holds what an engine needs to read the kept
files exactly without opening the catalog: the files with their sizes, footer sizes and
record counts, their deleted positions (delete files already decoded: ``_deletes``),
their layouts (``_layouts``: field-id mapping, defaults, the snapshot column of merged
files), and the inlined rows. No secret is exported (encrypted files are flagged only).

Form, version ``1`` (:data:`PLAN_SCHEMA`): an Arrow IPC *stream*, one row per data file:

* ``data_file_id`` int64: the catalog's id of the file;
* ``url`` string: the file's location as the catalog resolves it (``file:///...``,
  ``s3://bucket/key``, ...);
* ``size`` int64 (null: unknown), ``footer_size`` int64 (null: unknown),
  ``record_count`` int64: as the catalog records them;
* ``deleted`` list<int64>: the sorted unique deleted positions at the snapshot, null for
  none;
* ``encrypted`` bool: the file is encrypted (its key is not exported: read it another way);
* ``layout`` struct, null when the file's columns do not map onto the table's exactly
  (then read it with a converting reader): ``read_schema`` binary (an IPC-serialised
  Arrow schema: the physical fields a by-name scan reads, with their types),
  ``sources`` list<struct<column string, physical string, cast bool>> (per table column
  in order: the physical field holding it, null for the column's default; ``cast``: an
  exact widening to the table's type), ``snapshot_column`` string (per-row snapshot ids
  of a merged file: rows above ``snapshot`` are not the snapshot's; null: none),
  ``current`` bool (a plain by-name scan of the table's names and types).

Schema metadata (keys prefixed ``ducklake_datafusion.``; values UTF-8):

* ``plan_version``: ``"1"``; a reader refuses any other (:class:`PlanVersionError`);
* ``table``, ``catalog``: names for messages; ``snapshot``: the snapshot id, decimal;
* ``field_ids``: JSON object, table column name -> field id (files map by field id);
* ``table_schema``, ``defaults``, ``inlined``: base64 of Arrow IPC streams in the table's
  schema: none, one row (each column's initial default) and the inlined rows.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from ..errors import UnsupportedFeatureError
from ..scan import DataFileTask, InlinedRowsTask, ScanPlan, default_array
from ._checked import checked_file
from ._layouts import ColumnSource, FileLayout
from ._reader import deleted_positions_of

__all__ = [
    "PLAN_SCHEMA",
    "PLAN_VERSION",
    "PlanExport",
    "PlanVersionError",
    "export_bytes",
    "export_plan",
    "import_plan",
    "plan_export",
]

PLAN_VERSION = "1"
PREFIX = "ducklake_datafusion."
VERSION_KEY = (PREFIX + "plan_version").encode()

_SOURCE = pa.struct(
    [
        pa.field("column", pa.string(), nullable=False),
        pa.field("physical", pa.string()),
        pa.field("cast", pa.bool_(), nullable=False),
    ]
)
_LAYOUT = pa.struct(
    [
        pa.field("read_schema", pa.binary(), nullable=False),
        pa.field("sources", pa.list_(pa.field("item", _SOURCE, nullable=False)), nullable=False),
        pa.field("snapshot_column", pa.string()),
        pa.field("current", pa.bool_(), nullable=False),
    ]
)
PLAN_SCHEMA = pa.schema(
    [
        pa.field("data_file_id", pa.int64(), nullable=False),
        pa.field("url", pa.string(), nullable=False),
        pa.field("size", pa.int64()),
        pa.field("footer_size", pa.int64()),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("deleted", pa.list_(pa.int64())),
        pa.field("encrypted", pa.bool_(), nullable=False),
        pa.field("layout", _LAYOUT),
    ]
)


class PlanVersionError(UnsupportedFeatureError):
    """A plan export of a version this reader does not know (written by a newer one)."""


@dataclass(frozen=True)
class PlanExport:
    """A read export (:func:`import_plan`): the file rows and the table's parts."""

    table: str
    catalog: str
    snapshot_id: int
    schema: pa.Schema
    """The table's Arrow schema."""
    files: pa.RecordBatch
    """:data:`PLAN_SCHEMA`, one row per file."""
    field_ids: dict[str, int]
    defaults: pa.RecordBatch
    """One row of the table's schema: each column's initial default."""
    inlined: tuple[pa.RecordBatch, ...]
    """The inlined rows, in the table's schema."""

    @cached_property
    def layouts(self) -> tuple[FileLayout | None, ...]:
        """Each file's layout (the ``layout`` column decoded; each distinct one once)."""
        decoded: dict[tuple, FileLayout] = {}
        found = []
        for row in self.files.column("layout").to_pylist():
            if row is None:
                found.append(None)
                continue
            key = (
                row["read_schema"],
                tuple(tuple(s.values()) for s in row["sources"]),
                row["snapshot_column"],
            )
            if key not in decoded:
                decoded[key] = _layout_of_row(row)
            found.append(decoded[key])
        return tuple(found)


def export_plan(
    plan: ScanPlan,
    tasks: Sequence[DataFileTask] | None = None,
    *,
    layouts: Sequence[FileLayout | None] | None = None,
    signature: tuple | None = None,
) -> bytes:
    """The export of ``plan`` (form ``1``, see the module): ``tasks`` (default: all the
    plan's data files) with their deleted positions and layouts, and its inlined rows.

    ``layouts``: one per task, when the caller already checked the files
    (``checked_file``); otherwise each file is checked here against the catalog, from its
    footer (raising our typed error if damaged; ``signature``: keep the results as
    ``checked_file`` does).
    """
    return export_bytes(plan_export(plan, tasks, layouts=layouts, signature=signature))


def export_bytes(export: PlanExport) -> bytes:
    """``export`` in the export's form (the inverse of :func:`import_plan`)."""
    metadata = {
        "plan_version": PLAN_VERSION,
        "table": export.table,
        "catalog": export.catalog,
        "snapshot": str(export.snapshot_id),
        "field_ids": json.dumps(export.field_ids),
        "table_schema": _stream(export.schema, []),
        "defaults": _stream(export.schema, [export.defaults]),
        "inlined": _stream(export.schema, list(export.inlined)),
    }
    schema = PLAN_SCHEMA.with_metadata({PREFIX + k: v for k, v in metadata.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(export.files.replace_schema_metadata(schema.metadata))
    return sink.getvalue().to_pybytes()


def plan_export(
    plan: ScanPlan,
    tasks: Sequence[DataFileTask] | None = None,
    *,
    layouts: Sequence[FileLayout | None] | None = None,
    signature: tuple | None = None,
) -> PlanExport:
    """What :func:`export_plan` writes, in memory (as :func:`import_plan` reads it back):
    for a reader in this process, which need not serialise the export at all."""
    if tasks is None:
        tasks = [t for t in plan.tasks if isinstance(t, DataFileTask)]
    if layouts is None:
        layouts = [_layout_of(task, plan, signature) for task in tasks]
    if len(layouts) != len(tasks):
        raise ValueError(f"{len(layouts)} layouts for {len(tasks)} files")
    deleted = []
    for task in tasks:
        positions = None
        if task.deletes is not None:
            positions = deleted_positions_of(task, plan.table, plan.snapshot_id, plan.storage)
        deleted.append(positions if positions is not None and len(positions) else None)
    files = pa.RecordBatch.from_arrays(
        [
            pa.array([t.data_file_id for t in tasks], pa.int64()),
            pa.array([t.file.url for t in tasks], pa.string()),
            pa.array([t.file.size for t in tasks], pa.int64()),
            pa.array([t.file.footer_size for t in tasks], pa.int64()),
            pa.array([t.record_count for t in tasks], pa.int64()),
            pa.array(deleted, pa.list_(pa.int64())),
            pa.array([t.encryption_key is not None for t in tasks], pa.bool_()),
            _layout_array(layouts),
        ],
        schema=PLAN_SCHEMA,
    )
    table_schema = plan.table_schema
    names = table_schema.names
    inlined = []
    for task in plan.tasks:
        if isinstance(task, InlinedRowsTask):
            inlined.extend(task.rows.select(names).cast(table_schema).to_batches())
    defaults = pa.RecordBatch.from_arrays(
        [default_array(c, 1).cast(c.arrow_type) for c in plan.columns], schema=table_schema
    )
    return PlanExport(
        table=plan.table,
        catalog=plan.catalog,
        snapshot_id=plan.snapshot_id,
        schema=table_schema,
        files=files,
        field_ids={c.name: c.column_id for c in plan.columns},
        defaults=defaults,
        inlined=tuple(inlined),
    )


def import_plan(data: bytes) -> PlanExport:
    """Read an export of :func:`export_plan`.

    Raises:
        PlanVersionError: the export is of another form version than ``1`` (or says none).
    """
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    meta = reader.schema.metadata or {}
    version = meta.get(VERSION_KEY)
    if version != PLAN_VERSION.encode():
        found = "none" if version is None else repr(version.decode(errors="replace"))
        raise PlanVersionError(
            f"a plan export of version {found}, but this reader reads version "
            f"{PLAN_VERSION} only; upgrade ducklake-datafusion to read it"
        )
    table = reader.read_all()
    text = {k.decode()[len(PREFIX) :]: v.decode() for k, v in meta.items()}
    files = (
        table.combine_chunks().to_batches()[0]
        if table.num_rows
        else pa.RecordBatch.from_pylist([], schema=reader.schema)
    )
    files = files.replace_schema_metadata(None)
    schema = _read_stream(text["table_schema"]).schema
    return PlanExport(
        table=text["table"],
        catalog=text["catalog"],
        snapshot_id=int(text["snapshot"]),
        schema=schema,
        files=files,
        field_ids=json.loads(text["field_ids"]),
        defaults=_read_stream(text["defaults"]).to_batches()[0],
        inlined=tuple(_read_stream(text["inlined"]).to_batches()),
    )


def _layout_of(task: DataFileTask, plan: ScanPlan, signature) -> FileLayout | None:
    what = f"data file {task.file.url} of table {plan.table} (snapshot {plan.snapshot_id})"
    checked = checked_file(task, plan.storage, plan.columns, what, signature=signature)
    return None if checked is None else checked.layout


def _layout_array(layouts: Sequence[FileLayout | None]) -> pa.Array:
    """The ``layout`` column: each distinct layout encoded once (a table's files share a
    few), then taken per file."""
    index: dict[FileLayout, int] = {}
    positions = [None if x is None else index.setdefault(x, len(index)) for x in layouts]
    distinct = pa.array([_layout_row(layout) for layout in index], _LAYOUT)
    return distinct.take(pa.array(positions, pa.int64()))


def _layout_row(layout: FileLayout) -> dict:
    return {
        "read_schema": layout.read_schema.serialize().to_pybytes(),
        "sources": [
            {"column": s.column, "physical": s.physical, "cast": s.cast} for s in layout.sources
        ],
        "snapshot_column": layout.snapshot_column,
        "current": layout.current,
    }


def _layout_of_row(row: dict) -> FileLayout:
    read = pa.ipc.read_schema(pa.py_buffer(row["read_schema"]))
    return FileLayout(
        tuple((f.name, f.type) for f in read),
        tuple(ColumnSource(s["column"], s["physical"], s["cast"]) for s in row["sources"]),
        row["snapshot_column"],
    )


def _stream(schema: pa.Schema, batches: list[pa.RecordBatch]) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode()


def _read_stream(text: str) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(base64.b64decode(text))).read_all()
