//! The top of every plan the provider returns: it names the scan in `EXPLAIN` and keeps a
//! panic inside the scan from unwinding through the FFI boundary (which would abort the
//! Python process). A panic becomes an error of the query instead.
//!
//! It shows the caller a leaf. `datafusion-ffi` does not carry a plan's scheduling type
//! across the boundary, so the caller's `EnsureCooperative` wrapped the scan's inner
//! `DataSourceExec` (a child it could see) in a `CooperativeExec` of its own: every
//! partition then crossed the boundary three times (our guard, the caller's wrapper, our
//! scan), and each crossing rebuilt the session's task context with every function (a
//! tenth of a point lookup's time, docs/benchmarks.md). As a leaf, the caller
//! wraps the guard itself, and a partition crosses once. The caller's optimizer had
//! nothing to do inside anyway: projection, filters and limit reach `scan()`, and
//! `datafusion-ffi` passes no filter pushdown through a plan. `EXPLAIN` shows the guard's
//! summary, no longer the inner plan's nodes; `EXPLAIN ANALYZE` shows the inner nodes'
//! metrics (the Parquet scan's) on the guard's line.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::config::ConfigOptions;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, Statistics,
};
use futures::Stream;

/// How a guard handed to the caller runs its partitions (`crossing::Crossing`): with the
/// task context captured when the scan was planned, and handed over again in the same
/// form when the caller's optimizer derives a new guard from it. A trait, so that the
/// guard does not depend on the crossing that depends on it.
pub trait Handover: fmt::Debug + Send + Sync {
    /// The task context the partitions run with.
    fn context(&self) -> Arc<TaskContext>;
    /// `plan` as the caller receives it.
    fn to_caller(&self, plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>>;
}

/// Wraps the scan's plan; `summary` is what `EXPLAIN` shows (files kept and pruned, files
/// with deletes, rows skipped by row selections). Handed to the caller, it carries the
/// task context its partitions run with (`crossing`).
#[derive(Debug)]
pub struct GuardExec {
    name: String,
    input: Arc<dyn ExecutionPlan>,
    crossing: Option<Arc<dyn Handover>>,
    /// The inner plan's statistics, per partition (`None`: the whole plan), walked once:
    /// the caller's optimizer asks a scan's statistics a dozen times while planning one
    /// query, each time across the FFI. The inner plan never changes, so neither do they.
    statistics: Arc<Mutex<HashMap<Option<usize>, Arc<Statistics>>>>,
}

impl GuardExec {
    pub fn new(summary: String, input: Arc<dyn ExecutionPlan>) -> Self {
        Self::named("DuckLakeScanExec", summary, input)
    }

    /// A guard `EXPLAIN` shows as `name` (the exact reader's scan is told apart by it).
    pub fn named(name: &str, summary: String, input: Arc<dyn ExecutionPlan>) -> Self {
        Self {
            name: format!("{name}: {summary}"),
            input,
            crossing: None,
            statistics: Default::default(),
        }
    }

    fn with_input(&self, input: Arc<dyn ExecutionPlan>) -> Self {
        Self {
            name: self.name.clone(),
            input,
            crossing: self.crossing.clone(),
            statistics: Default::default(),
        }
    }

    /// The guard as it crosses to the caller (`crossing::for_the_caller`): the same inner
    /// plan, so the same statistics.
    pub fn with_crossing(&self, crossing: Arc<dyn Handover>) -> Self {
        Self {
            name: self.name.clone(),
            input: Arc::clone(&self.input),
            crossing: Some(crossing),
            statistics: Arc::clone(&self.statistics),
        }
    }

    /// The task context captured when the scan was planned, once handed to the caller.
    pub fn captured_context(&self) -> Option<Arc<TaskContext>> {
        self.crossing.as_ref().map(|crossing| crossing.context())
    }
}

/// A guard the optimizer derived from one handed to the caller, in the same form, so its
/// partitions keep executing with the captured context (`crossing`).
fn handed_over(
    crossing: Option<&dyn Handover>,
    guard: Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    match crossing {
        Some(crossing) => crossing.to_caller(guard),
        None => Ok(guard),
    }
}

/// The nodes of `plan`, depth first.
fn nodes(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    out.push(Arc::clone(plan));
    for child in plan.children() {
        nodes(child, out);
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

    /// None: a leaf for the caller (see the module's docs).
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            let crossing = self.crossing.clone();
            return handed_over(crossing.as_deref(), self);
        }
        Err(DataFusionError::Internal(
            "DuckLakeScanExec is a leaf: it takes no children".to_string(),
        ))
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        config: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(input) = self.input.repartitioned(target_partitions, config)? else {
            return Ok(None);
        };
        handed_over(self.crossing.as_deref(), Arc::new(self.with_input(input))).map(Some)
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
            since_yield: 0,
        }))
    }

    /// The metrics of every node inside (the Parquet scan's, mainly), as one set.
    fn metrics(&self) -> Option<MetricsSet> {
        let mut inner = Vec::new();
        nodes(&self.input, &mut inner);
        let mut merged: Option<MetricsSet> = None;
        for node in inner {
            if let Some(metrics) = node.metrics() {
                let set = merged.get_or_insert_with(MetricsSet::new);
                for metric in metrics.iter() {
                    set.push(Arc::clone(metric));
                }
            }
        }
        merged
    }

    // The statistics walk of DataFusion 55 (`StatisticsContext`, which the FFI uses too)
    // computes a node's statistics from its children's; the guard's are its inner plan's,
    // walked here. So a count from the catalog reaches DataFusion as an exact row count,
    // and `count(*)` becomes a literal instead of counting zero-column batches.
    fn child_stats_requests(&self, _partition: Option<usize>) -> Vec<ChildStats> {
        vec![]
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let partition = args.partition();
        if let Some(known) = self
            .statistics
            .lock()
            .ok()
            .and_then(|m| m.get(&partition).cloned())
        {
            return Ok(known);
        }
        let computed = StatisticsContext::new().compute(self.input.as_ref(), args)?;
        if let Ok(mut known) = self.statistics.lock() {
            known.insert(partition, Arc::clone(&computed));
        }
        Ok(computed)
    }
}

/// A stream that turns a panic while polling its input into an error (and then ends),
/// and gives its thread back every `YIELD_EVERY` batches.
///
/// Why it yields: a scan of local files is never `Pending` (ranges are read in place,
/// `checks::LocalRanges`), and the caller's cooperative budget cannot stop it: that is
/// the caller's tokio, and this extension links its own. So the caller task polling one
/// partition ran until the partition ended, and a sibling partition's task woken on the
/// same worker waited behind it: on the probe side of a hash join the query ran on one
/// core (TPC-H q04 and q19 at SF 1: CPU time equal to wall time, 1.6-1.9x DataFusion's
/// own Parquet table; with the yield 1.0-1.2x, using both cores). DataFusion's own scan
/// yields through its budget; a foreign plan has to yield itself.
struct GuardStream {
    inner: Option<SendableRecordBatchStream>,
    schema: SchemaRef,
    /// Batches returned since the stream last gave its thread back.
    since_yield: usize,
}

/// Batches between yields: 1, 4, 16 and 64 measured alike on TPC-H (within the noise of
/// a shared 2-core machine); a yield costs one reschedule of the caller's task.
const YIELD_EVERY: usize = 16;

impl Stream for GuardStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.since_yield >= YIELD_EVERY {
            self.since_yield = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll_next(cx))) {
            Ok(poll) => {
                if matches!(poll, Poll::Ready(Some(_))) {
                    self.since_yield += 1;
                }
                poll
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::stats::Precision;

    #[test]
    fn the_stream_gives_its_thread_back_every_few_batches_and_loses_none() {
        use futures::task::{waker, ArcWake};
        use std::sync::atomic::{AtomicUsize, Ordering};

        struct Count(AtomicUsize);
        impl ArcWake for Count {
            fn wake_by_ref(arc_self: &Arc<Self>) {
                arc_self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let schema = Arc::new(arrow::datatypes::Schema::empty());
        let total = YIELD_EVERY * 2 + 3;
        let batches: Vec<Result<RecordBatch>> = (0..total)
            .map(|_| {
                let options =
                    arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(1));
                Ok(
                    RecordBatch::try_new_with_options(Arc::clone(&schema), vec![], &options)
                        .unwrap(),
                )
            })
            .collect();
        let inner = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter(batches),
        );
        let mut stream = GuardStream {
            inner: Some(Box::pin(inner)),
            schema,
            since_yield: 0,
        };
        let wakes = Arc::new(Count(AtomicUsize::new(0)));
        let waker = waker(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let (mut rows, mut pending) = (0, 0);
        loop {
            match Pin::new(&mut stream).poll_next(&mut cx) {
                Poll::Ready(Some(batch)) => rows += batch.unwrap().num_rows(),
                Poll::Ready(None) => break,
                Poll::Pending => pending += 1,
            }
        }
        assert_eq!(rows, total);
        assert_eq!(pending, 2);
        // every Pending woke the task first, or the caller would never poll again
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn statistics_are_walked_once_per_partition_and_kept_by_the_crossing_form() {
        let guard = GuardExec::new("t".into(), crate::parquet_scan::count_only(5).unwrap());
        let whole = StatisticsArgs::new();
        let first = guard.statistics_from_inputs(&[], &whole).unwrap();
        assert_eq!(first.num_rows, Precision::Exact(5));
        let again = guard.statistics_from_inputs(&[], &whole).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let part = StatisticsArgs::new().with_partition(Some(0));
        let partition = guard.statistics_from_inputs(&[], &part).unwrap();
        assert!(!Arc::ptr_eq(&first, &partition));
        assert_eq!(partition.num_rows, Precision::Exact(5));
        // a new inner plan has statistics of its own
        let other = guard.with_input(crate::parquet_scan::count_only(7).unwrap());
        let rows = other.statistics_from_inputs(&[], &whole).unwrap().num_rows;
        assert_eq!(rows, Precision::Exact(7));
    }
}
