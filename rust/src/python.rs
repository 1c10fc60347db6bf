//! The Python boundary: the provider's constructor (Arrow in) and the FFI capsule out.
//!
//! Panics in these methods become Python exceptions (PyO3 catches them); panics in
//! `scan()` and while DataFusion polls the scan become query errors (`guard`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow::datatypes::Schema;
use arrow_pyarrow::{PyArrowType, ToPyArrow};
use datafusion::catalog::{Session, TableProvider};
use datafusion::execution::TaskContextProvider;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use tokio::runtime::Runtime;

use datafusion::common::ScalarValue;

use crate::contract::{self, ProviderSpec};
use crate::errors::{ContractError, StoreConfigError};
use crate::exact::ExactProvider;
use crate::layouts::FieldIds;
use crate::lazy::{LazyProvider, ReleasedAtOnce, Resolved};
use crate::locations::located_schema;
use crate::parquet_scan::ParquetScan;
use crate::plan::Plan;
use crate::provider::LakeProvider;
use crate::pruning::FileBounds;
use crate::sink::{LakeInsertExec, LakeSink};
use crate::task_context::CachedTaskContext;
use crate::views::{in_schema, to_views, view_schema};
use datafusion::common::not_impl_err;
use datafusion::logical_expr::dml::InsertOp;

/// The field id DuckDB gives the per-row snapshot ids of merged files.
const SNAPSHOT_FIELD_ID: i64 = 2147483539;

/// The runtime our object stores do their I/O on (never the caller's executor).
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
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

#[pymethods]
impl PyLakeProvider {
    /// A provider of `spec` (`_rust_contract.ProviderSpec`; its fields: `ProviderSpec`).
    /// Every batch is checked against the contract first (`contract`): a mismatch is a
    /// `ContractError` naming the table and the column.
    #[new]
    fn new(spec: ProviderSpec) -> PyResult<Self> {
        let ProviderSpec {
            plan,
            paths,
            bounds,
            rows,
            storage,
            min_partitions,
            pruned,
            read_exactly,
            row_id_starts,
        } = spec;
        let Plan {
            table,
            schema,
            files,
            field_ids,
            defaults,
            snapshot,
            inlined,
        } = crate::plan::read_plan(&plan, &paths)?;
        // checked in the table's own types, held as DataFusion's Parquet table has them
        let views = view_schema(&schema);
        let counts: Vec<u64> = files.iter().map(|f| f.record_count).collect();
        let bounds = match bounds {
            Some(bounds) => {
                contract::check_bounds(&table, &bounds.0, &schema, files.len())?;
                let bounds = to_views(&bounds.0)
                    .map_err(|e| ContractError::new_err(format!("the bounds of {table}: {e}")))?;
                FileBounds::new(&bounds, &views, &counts)
            }
            None => FileBounds::unbounded(&counts),
        };
        let locations =
            crate::locations::of_files(&table, &files, row_id_starts, snapshot, &inlined)?;
        // the rows sent have the location columns too when the scan locates rows
        let (rows_schema, rows_views) = match &locations {
            Some(_) => (located_schema(&schema), located_schema(&views)),
            None => (Arc::clone(&schema), Arc::clone(&views)),
        };
        let mut batches = Vec::new();
        let what = format!("the inlined rows of {table}");
        for batch in inlined.into_iter().chain(rows.0) {
            contract::check_rows(&what, &batch, &rows_schema)?;
            batches.push(
                in_schema(&batch, Arc::clone(&rows_views))
                    .map_err(|e| ContractError::new_err(format!("{what}: {e}")))?,
            );
        }
        let store = crate::stores::object_store(&storage).map_err(StoreConfigError::new_err)?;
        let adapter = match field_ids {
            Some(mut ids) => {
                if snapshot.is_some() {
                    ids.insert(
                        crate::parquet_scan::SNAPSHOT_COLUMN.to_string(),
                        SNAPSHOT_FIELD_ID,
                    );
                }
                let mut values = HashMap::new();
                let what = format!("the defaults of {table}");
                if defaults.num_rows() != 1 {
                    return Err(ContractError::new_err(format!("{what}: must be one row")));
                }
                contract::check_schema(&what, &defaults.schema(), &schema)?;
                let defaults = to_views(&defaults)
                    .map_err(|e| ContractError::new_err(format!("{what}: {e}")))?;
                for (field, array) in defaults.schema().fields().iter().zip(defaults.columns()) {
                    let value = ScalarValue::try_from_array(array, 0).map_err(|e| {
                        PyValueError::new_err(format!("default of {}: {e}", field.name()))
                    })?;
                    values.insert(field.name().clone(), value);
                }
                Some(crate::layouts::field_id_adapter(FieldIds::new(ids, values)))
            }
            None if snapshot.is_some() => {
                return Err(ContractError::new_err(format!(
                    "the spec of {table}: a snapshot filter needs the field ids"
                )));
            }
            None => None,
        };
        let local = storage.get("kind").map(String::as_str).unwrap_or("local") == "local";
        let parquet = ParquetScan::new(table, Arc::clone(&views), store, adapter, snapshot, local);
        let mut provider = LakeProvider::new(
            views,
            files,
            locations,
            bounds,
            batches,
            parquet,
            min_partitions.max(1),
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
        provider_capsule(py, session, Arc::clone(&self.inner) as _, None)
    }

    /// The capsule of a provider that also takes `INSERT INTO`: the inserted rows go to
    /// `writer(reader, overwrite) -> rows written` (`sink`).
    fn table_provider_with_writer<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
        writer: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let sink = sink_of(&self.inner.table, writer);
        provider_capsule(py, session, Arc::clone(&self.inner) as _, sink)
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

/// The shapes a provider of a table of `schema` expects (`plan::plan_schema` and
/// `contract::expected_schemas`),
/// for the test that the Python side's (`_rust_contract`) are the same.
#[pyfunction]
pub fn boundary_schemas<'py>(
    py: Python<'py>,
    schema: PyArrowType<Schema>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let plan = ("plan", crate::plan::plan_schema());
    for (name, expected) in std::iter::once(plan).chain(contract::expected_schemas(&schema.0)) {
        out.set_item(name, expected.to_pyarrow(py)?)?;
    }
    Ok(out)
}

fn report_dict<'py>(
    py: Python<'py>,
    report: &crate::report::ScanReport,
) -> PyResult<Bound<'py, PyDict>> {
    {
        let out = PyDict::new(py);
        out.set_item("files_total", report.files_total)?;
        out.set_item("files_kept", report.files_kept)?;
        out.set_item("files_with_deletes", report.files_with_deletes)?;
        out.set_item("rows_skipped", report.rows_skipped)?;
        out.set_item("files_read_whole", report.files_read_whole)?;
        out.set_item("rows_dropped", report.rows_dropped)?;
        out.set_item("filters", report.filters)?;
        out.set_item("partitions", report.partitions)?;
        out.set_item("from_catalog", report.from_catalog)?;
        out.set_item("decoder_filters", report.decoder_filters)?;
        out.set_item("files_split", report.files_split)?;
        out.set_item("files_read_exactly", report.files_read_exactly)?;
        out.set_item("ranges", report.ranges)?;
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
                view_schema(&schema.0),
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
        provider_capsule(py, session, Arc::clone(&self.inner) as _, None)
    }

    /// As `LakeProvider.table_provider_with_writer`.
    fn table_provider_with_writer<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
        writer: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let sink = sink_of(&self.inner.table, writer);
        provider_capsule(py, session, Arc::clone(&self.inner) as _, sink)
    }

    /// What the last scan did (as `LakeProvider.last_scan`).
    fn last_scan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        report_dict(py, &self.inner.last_scan())
    }

    fn __repr__(&self) -> String {
        format!("LazyProvider({:?})", self.inner.table)
    }
}

/// A provider whose rows come from the exact reader (`exact`): `scan(predicates, columns,
/// limit)` returns one callable per partition, each giving a `pyarrow.RecordBatchReader`.
#[pyclass(name = "ExactProvider", module = "ducklake_datafusion._rust", frozen)]
pub struct PyExactProvider {
    inner: Arc<ExactProvider>,
}

#[pymethods]
impl PyExactProvider {
    #[new]
    fn new(table: String, schema: PyArrowType<Schema>, scan: Py<PyAny>) -> Self {
        Self {
            inner: Arc::new(ExactProvider::new(table, Arc::new(schema.0), scan)),
        }
    }

    /// The `FFI_TableProvider` capsule `datafusion.catalog.Table(self, ctx)` asks for.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        provider_capsule(py, session, Arc::clone(&self.inner) as _, None)
    }

    /// As `LakeProvider.table_provider_with_writer`.
    fn table_provider_with_writer<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
        writer: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let sink = sink_of(&self.inner.table, writer);
        provider_capsule(py, session, Arc::clone(&self.inner) as _, sink)
    }

    fn __repr__(&self) -> String {
        format!("ExactProvider({:?})", self.inner.table)
    }
}

/// A table's name and its Python writer (`sink`), as `provider_capsule` takes them.
fn sink_of(table: &str, writer: Py<PyAny>) -> Option<(String, Arc<ReleasedAtOnce>)> {
    Some((table.to_string(), Arc::new(ReleasedAtOnce::new(writer))))
}

/// An `FFI_TableProvider` capsule of `provider` for the caller's `session`: filters pushed
/// down (each answered `Inexact`), I/O on our own runtime.
fn provider_capsule<'py>(
    py: Python<'py>,
    session: Bound<'py, PyAny>,
    provider: Arc<dyn datafusion::catalog::TableProvider + Send>,
    sink: Option<(String, Arc<ReleasedAtOnce>)>,
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
        sink,
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
    /// The table's name and Python writer, when it takes inserts.
    sink: Option<(String, Arc<ReleasedAtOnce>)>,
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

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        let Some((table, writer)) = &self.sink else {
            return not_impl_err!("this DuckLake table was registered read-only");
        };
        let overwrite = match insert_op {
            InsertOp::Append => false,
            InsertOp::Overwrite => true,
            InsertOp::Replace => {
                return not_impl_err!("REPLACE INTO {table}: DuckLake tables have no keys");
            }
        };
        let sink = LakeSink::new(
            table.clone(),
            self.inner.schema(),
            Arc::clone(writer),
            overwrite,
        );
        Ok(Arc::new(LakeInsertExec::new(input, Arc::new(sink))))
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
