//! The top of every plan the provider returns: it names the scan in `EXPLAIN` and keeps a
//! panic inside the scan from unwinding through the FFI boundary (which would abort the
//! Python process). A panic becomes an error of the query instead.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::config::ConfigOptions;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, Statistics,
};
use futures::Stream;

/// Wraps the scan's plan; `summary` is what `EXPLAIN` shows (files kept and pruned, files
/// with deletes, rows skipped by row selections).
#[derive(Debug)]
pub struct GuardExec {
    name: String,
    input: Arc<dyn ExecutionPlan>,
}

impl GuardExec {
    pub fn new(summary: String, input: Arc<dyn ExecutionPlan>) -> Self {
        Self {
            name: format!("DuckLakeScanExec: {summary}"),
            input,
        }
    }
}

/// A panic payload as text.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs a provider's `scan()` body; a panic in it becomes an error naming the table
/// instead of unwinding through the FFI boundary.
pub fn planning<T>(table: &str, plan: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(plan))
        .map_err(|payload| panic_error(&format!("planning a scan of {table}"), payload.as_ref()))?
}

pub fn panic_error(what: &str, payload: &(dyn Any + Send)) -> DataFusionError {
    DataFusionError::Execution(format!(
        "ducklake_datafusion internal error in {what}: {} (please report it)",
        panic_message(payload)
    ))
}

impl DisplayAs for GuardExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl ExecutionPlan for GuardExec {
    fn name(&self) -> &str {
        &self.name
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match <[_; 1]>::try_from(children) {
            Ok([input]) => Ok(Arc::new(GuardExec {
                name: self.name.clone(),
                input,
            })),
            Err(_) => Err(DataFusionError::Internal(
                "DuckLakeScanExec takes exactly one input".to_string(),
            )),
        }
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        config: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        Ok(self
            .input
            .repartitioned(target_partitions, config)?
            .map(|input| {
                Arc::new(GuardExec {
                    name: self.name.clone(),
                    input,
                }) as Arc<dyn ExecutionPlan>
            }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = Arc::clone(&self.input);
        let stream =
            std::panic::catch_unwind(AssertUnwindSafe(|| input.execute(partition, context)))
                .map_err(|payload| panic_error("a scan", payload.as_ref()))??;
        Ok(Box::pin(GuardStream {
            inner: Some(stream),
            schema: self.input.schema(),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.input.metrics()
    }

    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        self.input.partition_statistics(partition)
    }

    // The statistics walk of DataFusion 55 (`StatisticsContext`, which the FFI uses too)
    // asks children through these; `DataSourceExec` answers only here. So a count from
    // the catalog reaches DataFusion as an exact row count, and `count(*)` becomes a
    // literal instead of counting zero-column batches.
    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        match input_stats.first() {
            Some(stats) => Ok(Arc::clone(stats)),
            None => Ok(Arc::new(Statistics::new_unknown(&self.schema()))),
        }
    }
}

/// A stream that turns a panic while polling its input into an error (and then ends).
struct GuardStream {
    inner: Option<SendableRecordBatchStream>,
    schema: SchemaRef,
}

impl Stream for GuardStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll_next(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                self.inner = None;
                Poll::Ready(Some(Err(panic_error("a scan", payload.as_ref()))))
            }
        }
    }
}

impl RecordBatchStream for GuardStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
