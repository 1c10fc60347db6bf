//! The Python boundary: the provider's constructor (Arrow in) and the FFI capsule out.
//!
//! Panics in these methods become Python exceptions (PyO3 catches them); panics in
//! `scan()` and while DataFusion polls the scan become query errors (`guard`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, AsArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Int64Type, Schema};
use arrow_pyarrow::PyArrowType;
use datafusion::catalog::{Session, TableProvider};
use datafusion::execution::TaskContextProvider;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_datasource_parquet::ParquetRowSelection;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use object_store::path::Path;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use tokio::runtime::Runtime;

use datafusion::common::ScalarValue;

use crate::deletes::row_selection;
use crate::layouts::FieldIds;
use crate::lazy::{LazyProvider, Resolved};
use crate::provider::{LakeFile, LakeProvider};
use crate::pruning::FileBounds;
use crate::task_context::CachedTaskContext;

pyo3::create_exception!(
    _rust,
    StoreConfigError,
    PyValueError,
    "The storage options do not configure the provider's object store (the Python side \
     raises the package's InvalidOptionError with the table's name)."
);

/// The field id DuckDB gives the per-row snapshot ids of merged files.
const SNAPSHOT_FIELD_ID: i64 = 2147483539;

/// The runtime our object stores do their I/O on (never the caller's executor).
fn runtime() -> PyResult<&'static Runtime> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("ducklake-io")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the I/O runtime: {e}")))
}

#[pyclass(name = "LakeProvider", module = "ducklake_datafusion._rust", frozen)]
pub struct PyLakeProvider {
    inner: Arc<LakeProvider>,
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> PyResult<&'a Arc<dyn Array>> {
    batch
        .column_by_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("the file table has no column {name:?}")))
}

fn int64s<'a>(batch: &'a RecordBatch, name: &str) -> PyResult<&'a Int64Array> {
    column(batch, name)?
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| PyValueError::new_err(format!("file column {name:?} must be int64")))
}

fn nonnegative(value: i64, what: &str) -> PyResult<u64> {
    u64::try_from(value).map_err(|_| PyValueError::new_err(format!("negative {what}: {value}")))
}

fn lake_files(batch: &RecordBatch) -> PyResult<Vec<LakeFile>> {
    let paths = column(batch, "path")?;
    let paths = match paths.data_type() {
        DataType::Utf8 => paths.as_string::<i32>(),
        _ => {
            return Err(PyValueError::new_err(
                "file column \"path\" must be a string",
            ))
        }
    };
    let urls = batch
        .column_by_name("url")
        .and_then(|c| c.as_string_opt::<i32>());
    let sizes = int64s(batch, "size")?;
    let footers = int64s(batch, "footer_size")?;
    let counts = int64s(batch, "record_count")?;
    let deleted = column(batch, "deleted")?
        .as_list_opt::<i32>()
        .ok_or_else(|| PyValueError::new_err("file column \"deleted\" must be list<int64>"))?;
    let mut files = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        if paths.is_null(row) || sizes.is_null(row) || counts.is_null(row) {
            return Err(PyValueError::new_err(format!(
                "file row {row} lacks a path, size or count"
            )));
        }
        let path = Path::parse(paths.value(row))
            .map_err(|e| PyValueError::new_err(format!("bad file path: {e}")))?;
        let record_count = nonnegative(counts.value(row), "record count")?;
        let url = match urls {
            Some(urls) if !urls.is_null(row) => urls.value(row).to_string(),
            _ => path.to_string(),
        };
        let mut file = LakeFile {
            path,
            url,
            size: nonnegative(sizes.value(row), "file size")?,
            footer_size: if footers.is_null(row) {
                None
            } else {
                Some(nonnegative(footers.value(row), "footer size")?)
            },
            record_count,
            deleted: 0,
            selection: None,
            row_groups: Default::default(),
        };
        if !deleted.is_null(row) {
            let positions = deleted.value(row);
            let positions = positions
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| PyValueError::new_err("deleted positions must be int64"))?;
            if positions.null_count() > 0 {
                return Err(PyValueError::new_err("deleted positions must not be null"));
            }
            if !positions.is_empty() {
                let selection = row_selection(positions.values(), record_count).map_err(|e| {
                    PyValueError::new_err(format!("deleted rows of {}: {e}", file.path))
                })?;
                file.deleted = positions.len() as u64;
                file.selection = Some(Arc::new(ParquetRowSelection::new(selection)));
            }
        }
        files.push(file);
    }
    Ok(files)
}

#[pymethods]
impl PyLakeProvider {
    /// Args: `table` names the table for messages; `schema` is the table's Arrow schema
    /// (with `PARQUET:field_id` metadata); `files` has one row per live data file
    /// (`path`: object-store path, `size`, `footer_size`, `record_count`: int64,
    /// `deleted`: sorted unique list<int64> or null); `bounds` one row per file
    /// (`min:<column>`, `max:<column>` of the column's type, `nulls:<column>`);
    /// `inlined` record batches of the table schema; `storage` the store's options;
    /// `min_partitions` the least number of partitions a scan is split into;
    /// `field_ids` (column name to Parquet field id) and `defaults` (one row of the table
    /// schema: each column's initial default) map files of older layouts by field id.
    #[new]
    /// `snapshot`, when some file holds per-row snapshot ids (merged files), drops the
    /// rows of later snapshots.
    /// `pruned`: files of the snapshot the caller already left out by the query's filters;
    /// `read_exactly`: kept files the caller read with the exact reader, whose rows are
    /// among `inlined` (both reported only).
    #[pyo3(signature = (table, schema, files, bounds, inlined, storage, min_partitions, field_ids=None, defaults=None, snapshot=None, pruned=0, read_exactly=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        table: String,
        schema: PyArrowType<Schema>,
        files: PyArrowType<RecordBatch>,
        bounds: PyArrowType<RecordBatch>,
        inlined: PyArrowType<Vec<RecordBatch>>,
        storage: HashMap<String, String>,
        min_partitions: usize,
        field_ids: Option<HashMap<String, i64>>,
        defaults: Option<PyArrowType<RecordBatch>>,
        snapshot: Option<i64>,
        pruned: usize,
        read_exactly: usize,
    ) -> PyResult<Self> {
        let schema = Arc::new(schema.0);
        let files = lake_files(&files.0)?;
        let counts: Vec<u64> = files.iter().map(|f| f.record_count).collect();
        let bounds = FileBounds::new(&bounds.0, &schema, &counts);
        let mut batches = Vec::new();
        for batch in inlined.0 {
            if batch.schema().fields() != schema.fields() {
                return Err(PyValueError::new_err(format!(
                    "inlined rows of {table} do not have the table's schema"
                )));
            }
            batches.push(
                batch
                    .with_schema(Arc::clone(&schema))
                    .map_err(|e| PyValueError::new_err(format!("inlined rows of {table}: {e}")))?,
            );
        }
        let store = crate::stores::object_store(&storage).map_err(StoreConfigError::new_err)?;
        let adapter = match field_ids {
            Some(mut ids) => {
                if snapshot.is_some() {
                    ids.insert(
                        crate::provider::SNAPSHOT_COLUMN.to_string(),
                        SNAPSHOT_FIELD_ID,
                    );
                }
                let mut values = HashMap::new();
                if let Some(defaults) = defaults {
                    let defaults = defaults.0;
                    if defaults.num_rows() != 1 {
                        return Err(PyValueError::new_err("defaults must be one row"));
                    }
                    for (field, array) in defaults.schema().fields().iter().zip(defaults.columns())
                    {
                        let value = ScalarValue::try_from_array(array, 0).map_err(|e| {
                            PyValueError::new_err(format!("default of {}: {e}", field.name()))
                        })?;
                        values.insert(field.name().clone(), value);
                    }
                }
                Some(crate::layouts::field_id_adapter(FieldIds::new(ids, values)))
            }
            None if snapshot.is_some() => {
                return Err(PyValueError::new_err(
                    "a snapshot filter needs the field ids",
                ));
            }
            None => None,
        };
        let mut provider = LakeProvider::new(
            table,
            schema,
            files,
            bounds,
            batches,
            store,
            adapter,
            min_partitions.max(1),
            snapshot,
            storage.get("kind").map(String::as_str).unwrap_or("local") == "local",
        );
        provider.pruned = pruned;
        provider.read_exactly = read_exactly;
        Ok(Self {
            inner: Arc::new(provider),
        })
    }

    /// The `FFI_TableProvider` capsule `datafusion.catalog.Table(self, ctx)` asks for.
    /// `session` is the context (or a logical extension codec capsule) of the caller.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        provider_capsule(py, session, Arc::clone(&self.inner) as _)
    }

    /// What the last scan did: files total and kept, files with deletes, rows skipped,
    /// filters received, partitions, whether a count came from the catalog.
    fn last_scan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        report_dict(py, &self.inner.last_scan())
    }

    fn __repr__(&self) -> String {
        format!("LakeProvider({:?})", self.inner.table)
    }
}

fn report_dict<'py>(
    py: Python<'py>,
    report: &crate::provider::ScanReport,
) -> PyResult<Bound<'py, PyDict>> {
    {
        let out = PyDict::new(py);
        out.set_item("files_total", report.files_total)?;
        out.set_item("files_kept", report.files_kept)?;
        out.set_item("files_with_deletes", report.files_with_deletes)?;
        out.set_item("rows_skipped", report.rows_skipped)?;
        out.set_item("filters", report.filters)?;
        out.set_item("partitions", report.partitions)?;
        out.set_item("from_catalog", report.from_catalog)?;
        out.set_item("decoder_filters", report.decoder_filters)?;
        out.set_item("files_split", report.files_split)?;
        out.set_item("files_read_exactly", report.files_read_exactly)?;
        Ok(out)
    }
}

/// A provider whose files come with the query's filters (`lazy`): it holds the table's
/// name and schema and asks `resolver(predicates, count_only)` in each `scan()` for a
/// `LakeProvider` over the files the predicates cannot exclude (or, for `count(*)`, the
/// count as an int).
#[pyclass(name = "LazyProvider", module = "ducklake_datafusion._rust", frozen)]
pub struct PyLazyProvider {
    inner: Arc<LazyProvider>,
}

fn resolved(answer: &Bound<'_, PyAny>) -> PyResult<Resolved> {
    if let Ok(provider) = answer.cast::<PyLakeProvider>() {
        return Ok(Resolved::Files(Arc::clone(&provider.get().inner)));
    }
    match answer.extract::<u64>() {
        Ok(rows) => Ok(Resolved::Count(rows)),
        Err(_) => Err(PyValueError::new_err(format!(
            "the scan's resolver must return a LakeProvider or a row count, not {}",
            answer.get_type().name()?
        ))),
    }
}

#[pymethods]
impl PyLazyProvider {
    #[new]
    fn new(table: String, schema: PyArrowType<Schema>, resolver: Py<PyAny>) -> Self {
        Self {
            inner: Arc::new(LazyProvider::new(
                table,
                Arc::new(schema.0),
                resolver,
                resolved,
            )),
        }
    }

    /// The `FFI_TableProvider` capsule `datafusion.catalog.Table(self, ctx)` asks for.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        provider_capsule(py, session, Arc::clone(&self.inner) as _)
    }

    /// What the last scan did (as `LakeProvider.last_scan`).
    fn last_scan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        report_dict(py, &self.inner.last_scan())
    }

    fn __repr__(&self) -> String {
        format!("LazyProvider({:?})", self.inner.table)
    }
}

/// An `FFI_TableProvider` capsule of `provider` for the caller's `session`: filters pushed
/// down (each answered `Inexact`), I/O on our own runtime.
fn provider_capsule<'py>(
    py: Python<'py>,
    session: Bound<'py, PyAny>,
    provider: Arc<dyn datafusion::catalog::TableProvider + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let mut codec = logical_codec(session.clone())?;
    let mut held = None;
    if let Some(foreign) = task_context_provider(&session)? {
        // the session's functions converted once, not on every call (`task_context`)
        let cached = Arc::new(CachedTaskContext::new(foreign));
        let as_provider: Arc<dyn TaskContextProvider> = Arc::clone(&cached) as _;
        let inner: Arc<dyn LogicalExtensionCodec> = (&codec).into();
        codec = FFI_LogicalExtensionCodec::new(inner, None, &as_provider);
        held = Some(cached);
    }
    let handle = runtime()?.handle().clone();
    let provider = Arc::new(AtTheBoundary {
        inner: provider,
        runtime: handle.clone(),
        _held: held,
    });
    let provider = FFI_TableProvider::new_with_ffi_codec(provider, true, Some(handle), codec);
    PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
}

/// The caller's task context provider, when `session` is an object (a `SessionContext`)
/// that exports one; `None` for a bare codec capsule.
fn task_context_provider(session: &Bound<'_, PyAny>) -> PyResult<Option<FFI_TaskContextProvider>> {
    const ATTR: &str = "__datafusion_task_context_provider__";
    if !session.hasattr(ATTR)? {
        return Ok(None);
    }
    let capsule = session.getattr(ATTR)?.call0()?;
    let Ok(capsule) = capsule.cast::<PyCapsule>() else {
        return Ok(None);
    };
    let Ok(pointer) = capsule.pointer_checked(Some(c"datafusion_task_context_provider")) else {
        return Ok(None);
    };
    // SAFETY: a capsule of that name holds an FFI_TaskContextProvider (datafusion-ffi's
    // contract), alive as long as the capsule, which we hold while cloning it.
    let provider = unsafe { pointer.cast::<FFI_TaskContextProvider>().as_ref() };
    Ok(Some(provider.clone()))
}

/// The provider as the caller holds it: its scans cross the boundary with the planning
/// session's context (`crossing`), and it keeps the codec's task context provider alive
/// (the codec holds it weakly).
#[derive(Debug)]
struct AtTheBoundary {
    inner: Arc<dyn TableProvider + Send>,
    runtime: tokio::runtime::Handle,
    _held: Option<Arc<CachedTaskContext>>,
}

#[async_trait::async_trait]
impl TableProvider for AtTheBoundary {
    fn schema(&self) -> arrow::datatypes::SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::common::Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<datafusion::common::Statistics> {
        self.inner.statistics()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        crate::crossing::for_the_caller(plan, state, self.runtime.clone())
    }
}

/// The caller's logical extension codec: from a capsule, or from an object (a
/// `SessionContext`) that exports one.
fn logical_codec(session: Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    const ATTR: &str = "__datafusion_logical_extension_codec__";
    let capsule = if session.hasattr(ATTR)? {
        session.getattr(ATTR)?.call0()?
    } else {
        session
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyValueError::new_err(
            "expected a datafusion SessionContext or a logical extension codec capsule",
        )
    })?;
    let pointer = capsule
        .pointer_checked(Some(c"datafusion_logical_extension_codec"))
        .map_err(|_| {
            PyValueError::new_err("expected a capsule named \"datafusion_logical_extension_codec\"")
        })?;
    // SAFETY: a capsule of that name holds an FFI_LogicalExtensionCodec (datafusion-ffi's
    // contract), alive as long as the capsule, which we hold while cloning it.
    let codec = unsafe { pointer.cast::<FFI_LogicalExtensionCodec>().as_ref() };
    Ok(codec.clone())
}
