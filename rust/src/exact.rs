//! A provider whose rows come from the exact reader (Python), so that every table at its
//! latest snapshot can take `INSERT INTO`, not only those the native scan reads.
//!
//! datafusion-python's own provider of a `pyarrow.dataset` (`Table(dataset)`, the exact
//! path's read-only form) gives no FFI capsule, so nothing can add a writer to it. This
//! provider does what it does, on our side of the boundary: its `scan()` hands the query's
//! predicates (`predicates`), columns and limit to `scan(predicates, columns, limit)`,
//! which plans the snapshot and returns one zero-argument callable per partition; each
//! partition calls its callable for a `pyarrow.RecordBatchReader` and reads it on a thread
//! of its own, one batch per attach to the interpreter. Every filter is `Inexact`: the
//! predicates only prune files, and DataFusion applies the filters to the rows again.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatchOptions;
use arrow_pyarrow::FromPyArrow;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{project_schema, DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::guard::{panic_error, GuardExec};
use crate::lazy::{python_error, ReleasedAtOnce};
use crate::predicates::predicates_of;

/// Batches a partition's reader thread may read ahead of the query.
const READ_AHEAD: usize = 2;

pub struct ExactProvider {
    pub table: String,
    schema: SchemaRef,
    /// `scan(predicates, columns, limit)` -> one callable per partition (see the module).
    scan: ReleasedAtOnce,
}

impl fmt::Debug for ExactProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactProvider")
            .field("table", &self.table)
            .finish()
    }
}

impl ExactProvider {
    pub fn new(table: String, schema: SchemaRef, scan: Py<PyAny>) -> Self {
        Self {
            table,
            schema,
            scan: ReleasedAtOnce::new(scan),
        }
    }

    /// The partitions' callables for one scan.
    fn partitions(
        &self,
        filters: &[Expr],
        columns: Option<Vec<String>>,
        limit: Option<usize>,
    ) -> Result<Vec<ReleasedAtOnce>> {
        Python::attach(|py| {
            let predicates = predicates_of(py, filters)?;
            let answer = self.scan.bind(py)?.call1((predicates, columns, limit))?;
            let answer = answer.cast::<PyList>()?;
            Ok(answer
                .iter()
                .map(|callable| ReleasedAtOnce::new(callable.unbind()))
                .collect())
        })
        .map_err(|error| python_error(&format!("planning the scan of {}", self.table), error))
    }
}

#[async_trait]
impl TableProvider for ExactProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        crate::guard::planning(&self.table, || {
            let schema = project_schema(&self.schema, projection)?;
            let columns = projection.map(|_| {
                schema
                    .fields()
                    .iter()
                    .map(|field| field.name().clone())
                    .collect()
            });
            let partitions = self.partitions(filters, columns, limit)?;
            let summary = format!("table={}, partitions={}", self.table, partitions.len());
            let exec = ExactExec::new(self.table.clone(), schema, partitions);
            let guard = GuardExec::named("DuckLakeExactScanExec", summary, Arc::new(exec));
            Ok(Arc::new(guard) as _)
        })
    }
}

/// The exact reader's partitions as an execution plan (a leaf).
#[derive(Debug)]
struct ExactExec {
    table: String,
    schema: SchemaRef,
    partitions: Arc<Vec<ReleasedAtOnce>>,
    properties: Arc<PlanProperties>,
}

impl ExactExec {
    fn new(table: String, schema: SchemaRef, partitions: Vec<ReleasedAtOnce>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            // a plan has at least one partition: with no callable it reads nothing
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            table,
            schema,
            partitions: Arc::new(partitions),
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for ExactExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DuckLakeExactReadExec: table={}", self.table)
    }
}

impl ExecutionPlan for ExactExec {
    fn name(&self) -> &str {
        "DuckLakeExactReadExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "DuckLakeExactReadExec has no children".to_string(),
            ))
        }
    }

    /// Starts the partition's reader thread; the stream receives what it reads.
    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (sender, receiver) = tokio::sync::mpsc::channel(READ_AHEAD);
        if partition < self.partitions.len() {
            let reading = PartitionReading {
                table: self.table.clone(),
                schema: Arc::clone(&self.schema),
                partitions: Arc::clone(&self.partitions),
                partition,
                sender,
            };
            // a panic on the reader thread must fail the query, not end its rows early
            let on_panic = reading.sender.clone();
            let table = self.table.clone();
            std::thread::Builder::new()
                .name("ducklake-exact".to_string())
                .spawn(move || {
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| reading.run())) {
                        let what = format!("reading {table}");
                        let _ = on_panic.blocking_send(Err(panic_error(&what, payload.as_ref())));
                    }
                })
                .map_err(|e| {
                    DataFusionError::External(
                        format!("reading {}: cannot start a thread: {e}", self.table).into(),
                    )
                })?;
        }
        let batches = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|batch| (batch, receiver))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }
}

/// One partition's reader, run on its own thread: the query's stream may be polled on a
/// thread that must not wait on the interpreter, and the reader decodes files for a while.
struct PartitionReading {
    table: String,
    schema: SchemaRef,
    partitions: Arc<Vec<ReleasedAtOnce>>,
    partition: usize,
    sender: tokio::sync::mpsc::Sender<Result<RecordBatch>>,
}

impl PartitionReading {
    fn run(self) {
        let doing = format!("reading {}", self.table);
        let reader = Python::attach(|py| {
            self.partitions[self.partition]
                .bind(py)?
                .call0()
                .map(Bound::unbind)
        });
        let reader = match reader {
            Ok(reader) => ReleasedAtOnce::new(reader),
            Err(error) => {
                let _ = self.sender.blocking_send(Err(python_error(&doing, error)));
                return;
            }
        };
        loop {
            let next = Python::attach(|py| next_batch(reader.bind(py)?));
            let batch = match next {
                Ok(Some(batch)) => self.conformed(batch),
                Ok(None) => return,
                Err(error) => Err(python_error(&doing, error)),
            };
            let failed = batch.is_err();
            // a closed channel: the query stopped reading (a limit, a failure elsewhere)
            if self.sender.blocking_send(batch).is_err() || failed {
                return;
            }
        }
    }

    /// `batch` with the provider's schema (the exact reader's batches carry the table's
    /// types; field metadata and nullability are the provider's), checked on the way.
    fn conformed(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            batch.columns().to_vec(),
            &options,
        )
        .map_err(|e| {
            DataFusionError::External(
                format!(
                    "reading {}: the exact reader's batch does not fit: {e}",
                    self.table
                )
                .into(),
            )
        })
    }
}

/// The reader's next batch, `None` at its end.
fn next_batch(reader: &Bound<'_, PyAny>) -> PyResult<Option<RecordBatch>> {
    match reader.call_method0("read_next_batch") {
        Ok(batch) => RecordBatch::from_pyarrow_bound(&batch).map(Some),
        Err(error) if error.is_instance_of::<PyStopIteration>(reader.py()) => Ok(None),
        Err(error) => Err(error),
    }
}
