//! Deleted rows dropped after decoding, for files whose deletes are scattered
//! (`deletes::file_deletes`).
//!
//! The Parquet scan below reads such files whole and adds two columns to every batch: the
//! file's index among the scan's files (a partition value, constant per file) and each
//! row's position in its file (Parquet's `row_number` virtual column, which stays right
//! through row-group, page-index and decoder-filter pruning). This node looks the
//! positions up in the file's live rows, keeps the live ones and drops the two columns
//! (or keeps them, for `locations` to turn into each row's location). Files read through
//! a row selection, and files without deletes, pass through.

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, UInt32Type};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;
use parquet::arrow::RowNumber;

use crate::deletes::LiveRows;

/// The partition column naming each row's file (an index into the scan's files). No NUL:
/// names cross the FFI as C strings; the Python side sends no column named `_ducklake_*`.
pub const FILE_COLUMN: &str = "_ducklake_internal_file_index";
/// The virtual column of each row's position in its file.
pub const POSITION_COLUMN: &str = "_ducklake_internal_row_position";

pub fn file_field() -> Arc<Field> {
    Arc::new(Field::new(FILE_COLUMN, DataType::UInt32, false))
}

pub fn position_field() -> Arc<Field> {
    Arc::new(Field::new(POSITION_COLUMN, DataType::Int64, true).with_extension_type(RowNumber))
}

/// Keeps the live rows of its input, whose last two columns are `FILE_COLUMN` and
/// `POSITION_COLUMN`, and drops those two columns unless told to keep them.
#[derive(Debug)]
pub struct DropDeletedExec {
    input: Arc<dyn ExecutionPlan>,
    /// Per file index, its live rows (`None`: nothing to drop).
    live: Arc<Vec<Option<Arc<LiveRows>>>>,
    table: String,
    /// The two columns stay (for `locations::LocateExec` above).
    keep_positions: bool,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl DropDeletedExec {
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        live: Vec<Option<Arc<LiveRows>>>,
        table: String,
        keep_positions: bool,
    ) -> Result<Self> {
        let all = input.schema();
        let kept = all.fields().len().checked_sub(2).filter(|&n| {
            all.field(n).name() == FILE_COLUMN && all.field(n + 1).name() == POSITION_COLUMN
        });
        let Some(kept) = kept else {
            return Err(DataFusionError::Internal(format!(
                "reading {table}: the scan lacks its file and row position columns"
            )));
        };
        let schema = match keep_positions {
            true => Arc::clone(&all),
            false => Arc::new(Schema::new(all.fields()[..kept].to_vec())),
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            input.output_partitioning().clone(),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        Ok(Self {
            input,
            live: Arc::new(live),
            table,
            keep_positions,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for DropDeletedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.live.iter().filter(|l| l.is_some()).count();
        write!(f, "DropDeletedExec: {files} files with scattered deletes")
    }
}

impl ExecutionPlan for DropDeletedExec {
    fn name(&self) -> &str {
        "DropDeletedExec"
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
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "DropDeletedExec takes one child".to_string(),
            ));
        }
        let live = self.live.as_ref().clone();
        Ok(Arc::new(Self::try_new(
            children.remove(0),
            live,
            self.table.clone(),
            self.keep_positions,
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        // no `output_rows` of its own: the guard shows the metrics of every node inside
        // as one set (`guard.rs`), where the Parquet scan's already count its rows
        let spent = MetricBuilder::new(&self.metrics).subset_time("drop_deleted_time", partition);
        let dropped = MetricBuilder::new(&self.metrics).counter("deleted_rows_dropped", partition);
        let dropping = Dropping {
            file_column: self.input.schema().fields().len() - 2,
            live: Arc::clone(&self.live),
            table: self.table.clone(),
            schema: Arc::clone(&self.schema),
            dropped,
        };
        let batches = input.filter_map(move |batch| {
            let timer = spent.timer();
            let out = match batch.and_then(|b| dropping.live_rows_of(&b)) {
                Ok(b) if b.num_rows() == 0 => None,
                other => Some(other),
            };
            timer.done();
            std::future::ready(out)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    // The scan's statistics already count only live rows (`statistics::of_file`); this
    // node only drops the two added columns' (unknown) statistics.
    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let mut stats = input_stats[0].as_ref().clone();
        stats.column_statistics.truncate(self.schema.fields().len());
        Ok(Arc::new(stats))
    }
}

/// What one partition's stream needs to drop deleted rows.
struct Dropping {
    /// The index of `FILE_COLUMN` (`POSITION_COLUMN` follows it).
    file_column: usize,
    live: Arc<Vec<Option<Arc<LiveRows>>>>,
    table: String,
    schema: SchemaRef,
    dropped: Count,
}

impl Dropping {
    fn live_rows_of(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let kept = self.file_column;
        let columns = batch.columns()[..self.schema.fields().len()].to_vec();
        let projected = RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        if batch.num_rows() == 0 {
            return Ok(projected);
        }
        // a batch comes from one file: its index is the same in every row
        let file = batch
            .column(kept)
            .as_primitive_opt::<UInt32Type>()
            .filter(|f| f.null_count() == 0)
            .and_then(|f| {
                let first = f.value(0);
                f.values()
                    .iter()
                    .all(|&v| v == first)
                    .then_some(first as usize)
            })
            .ok_or_else(|| self.error("no single file index"))?;
        let live = self
            .live
            .get(file)
            .ok_or_else(|| self.error("an unknown file index"))?;
        let Some(live) = live else {
            return Ok(projected);
        };
        let positions = batch
            .column(kept + 1)
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| self.error("no row positions"))?;
        match live.mask(positions).map_err(|e| self.error(&e))? {
            None => Ok(projected),
            Some(mask) => {
                self.dropped.add(mask.false_count());
                Ok(filter_record_batch(&projected, &mask)?)
            }
        }
    }

    /// Never expected (the reader numbers every row it decodes): an execution error, so
    /// that the query fails with this message rather than returning a wrong row.
    fn error(&self, what: &str) -> DataFusionError {
        DataFusionError::Execution(format!(
            "reading {}: a batch of a file with deletes came with {what}",
            self.table
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, UInt32Array};
    use datafusion::datasource::memory::MemorySourceConfig;
    use futures::TryStreamExt;

    /// Batches of `(k, file, position)`: `k` is `100 * file + position`.
    fn input(batches: &[(u32, Vec<i64>)]) -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![
            Arc::new(Field::new("k", DataType::Int64, false)),
            file_field(),
            position_field(),
        ]));
        let batches: Vec<RecordBatch> = batches
            .iter()
            .map(|(file, positions)| {
                let keys: Vec<i64> = positions.iter().map(|p| 100 * *file as i64 + p).collect();
                RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![
                        Arc::new(Int64Array::from(keys)),
                        Arc::new(UInt32Array::from(vec![*file; positions.len()])),
                        Arc::new(Int64Array::from(positions.clone())),
                    ],
                )
                .unwrap()
            })
            .collect();
        MemorySourceConfig::try_new_exec(&[batches], schema, None).unwrap()
    }

    fn run(exec: DropDeletedExec) -> Result<Vec<i64>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stream = exec.execute(0, Arc::new(TaskContext::default()))?;
        let batches: Vec<RecordBatch> = runtime.block_on(stream.try_collect())?;
        Ok(batches
            .iter()
            .flat_map(|b| {
                assert_eq!(
                    b.num_columns(),
                    1,
                    "the file and position columns are dropped"
                );
                b.column(0).as_primitive::<Int64Type>().values().to_vec()
            })
            .collect())
    }

    #[test]
    fn deleted_rows_of_each_file_are_dropped_by_position() {
        let live = vec![
            Some(Arc::new(LiveRows::new(&[1, 3], 6).unwrap())),
            None, // a file without deletes passes through
            Some(Arc::new(LiveRows::new(&[0, 1, 2], 3).unwrap())),
        ];
        let plan = input(&[
            (0, vec![0, 1, 2]),
            (1, vec![0, 1]),
            (0, vec![3, 5]),    // a gap: position 4 was pruned below
            (2, vec![0, 1, 2]), // every row deleted: no batch
        ]);
        let exec = DropDeletedExec::try_new(plan, live, "t".into(), false).unwrap();
        assert_eq!(exec.schema().fields().len(), 1);
        assert_eq!(run(exec).unwrap(), vec![0, 2, 100, 101, 5]);
    }

    #[test]
    fn kept_positions_stay_with_the_live_rows() {
        let live = vec![Some(Arc::new(LiveRows::new(&[1, 3], 6).unwrap()))];
        let plan = input(&[(0, vec![0, 1, 2, 3, 4, 5])]);
        let exec = DropDeletedExec::try_new(plan, live, "t".into(), true).unwrap();
        assert_eq!(exec.schema().fields().len(), 3);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stream = exec.execute(0, Arc::new(TaskContext::default())).unwrap();
        let batches: Vec<RecordBatch> = runtime.block_on(stream.try_collect()).unwrap();
        let positions: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(2).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(positions, [0, 2, 4, 5]);
    }

    #[test]
    fn a_batch_off_its_file_is_an_error_never_a_wrong_row() {
        let live = || vec![Some(Arc::new(LiveRows::new(&[1], 4).unwrap()))];
        // a position outside the file
        let plan = input(&[(0, vec![2, 3, 4])]);
        assert!(run(DropDeletedExec::try_new(plan, live(), "t".into(), false).unwrap()).is_err());
        // a file index the scan does not have
        let plan = input(&[(1, vec![0])]);
        assert!(run(DropDeletedExec::try_new(plan, live(), "t".into(), false).unwrap()).is_err());
        // an input without the two columns is refused when planned
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let bare = MemorySourceConfig::try_new_exec(&[vec![]], schema, None).unwrap();
        assert!(DropDeletedExec::try_new(bare, live(), "t".into(), false).is_err());
    }
}
