//! Each row's location, for the queries that plan a row change (DELETE, UPDATE, MERGE).
//!
//! A row change is planned as a query over the target table in the user's session; the
//! rows it finds are deleted by their data file and physical position, and keep their
//! DuckLake row id. In locations mode (`ProviderSpec.row_id_starts`) the provider's table
//! has three more columns, named as the Python side's `read.ROW_ID`, `read.FILE_ID` and
//! `read.POSITION` (`tests/provider/test_rust_contract.py` compares them): the Parquet scan
//! numbers every row it decodes (`drop_deleted`'s two columns) and this node turns the
//! file index and position into the row id (`row_id_start + position`), the data file id
//! and the position. Only files whose row ids are `row_id_start + position` come here
//! (no embedded row ids, no per-row snapshots): the Python side reads the others, and
//! the inlined rows, with the exact reader and hands their located rows over.

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, UInt32Type};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, DataFusionError, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;

use crate::contract::{violation, Violation};
use crate::drop_deleted::{FILE_COLUMN, POSITION_COLUMN};
use crate::file::LakeFile;

/// The row id, the data file id and the position (the Python side's `read.ROW_ID`,
/// `read.FILE_ID`, `read.POSITION`), after the table's columns.
pub const LOCATION_COLUMNS: [&str; 3] = ["rowid", "__ducklake_file_id", "__ducklake_position"];

/// The three location columns (int64; null for a row inlined in the catalog).
pub fn location_fields() -> Vec<Arc<Field>> {
    LOCATION_COLUMNS
        .iter()
        .map(|name| Arc::new(Field::new(*name, DataType::Int64, true)))
        .collect()
}

/// `schema` with the location columns after its own.
pub fn located_schema(schema: &Schema) -> SchemaRef {
    let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
    fields.extend(location_fields());
    Arc::new(Schema::new(fields))
}

/// Where one scanned file's rows live in the lake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLocation {
    pub data_file_id: i64,
    /// The row id of the file's first row: a row's id is this plus its position.
    pub row_id_start: i64,
}

/// The locations of `files` from the spec's `row_id_starts` (one per file, in order), or
/// `None`: the scan does not locate rows. Locating scans read no per-row snapshots
/// (`snapshot`), and take the inlined rows located from the caller (`inlined`: the
/// export's, which must have none).
pub fn of_files(
    table: &str,
    files: &[LakeFile],
    row_id_starts: Option<Vec<i64>>,
    snapshot: Option<i64>,
    inlined: &[RecordBatch],
) -> Result<Option<Vec<FileLocation>>, Violation> {
    let Some(starts) = row_id_starts else {
        return Ok(None);
    };
    let what = format!("the spec of {table}");
    let problem = if starts.len() != files.len() {
        Some(format!(
            "{} row id starts for {} files",
            starts.len(),
            files.len()
        ))
    } else if snapshot.is_some() {
        Some("a scan of files with per-row snapshots cannot locate rows".to_string())
    } else if inlined.iter().any(|b| b.num_rows() > 0) {
        Some("a locating scan takes the inlined rows located, beside the export".to_string())
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(violation(&what, Some("row_id_starts"), problem));
    }
    Ok(Some(
        files
            .iter()
            .zip(starts)
            .map(|(file, row_id_start)| FileLocation {
                data_file_id: file.data_file_id,
                row_id_start,
            })
            .collect(),
    ))
}

/// Replaces its input's last two columns (`FILE_COLUMN`, `POSITION_COLUMN`) with the
/// location columns.
#[derive(Debug)]
pub struct LocateExec {
    input: Arc<dyn ExecutionPlan>,
    /// Per file index of the scan.
    files: Arc<Vec<FileLocation>>,
    table: String,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl LocateExec {
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        files: Vec<FileLocation>,
        table: String,
    ) -> Result<Self> {
        let all = input.schema();
        let kept = all.fields().len().checked_sub(2).filter(|&n| {
            all.field(n).name() == FILE_COLUMN && all.field(n + 1).name() == POSITION_COLUMN
        });
        let Some(kept) = kept else {
            return Err(DataFusionError::Internal(format!(
                "locating the rows of {table}: the scan lacks its file and row position columns"
            )));
        };
        let schema = located_schema(&Schema::new(all.fields()[..kept].to_vec()));
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            input.output_partitioning().clone(),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        Ok(Self {
            input,
            files: Arc::new(files),
            table,
            schema,
            properties: Arc::new(properties),
        })
    }
}

impl DisplayAs for LocateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocateExec: {} files", self.files.len())
    }
}

impl ExecutionPlan for LocateExec {
    fn name(&self) -> &str {
        "LocateExec"
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
                "LocateExec takes one child".to_string(),
            ));
        }
        let files = self.files.as_ref().clone();
        Ok(Arc::new(Self::try_new(
            children.remove(0),
            files,
            self.table.clone(),
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let locating = Locating {
            files: Arc::clone(&self.files),
            table: self.table.clone(),
            schema: Arc::clone(&self.schema),
        };
        let batches = input.map(move |batch| batch.and_then(|b| locating.located(&b)));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    // The rows are the input's; the two columns replaced by three of unknown statistics.
    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let mut stats = input_stats[0].as_ref().clone();
        let kept = self.schema.fields().len() - LOCATION_COLUMNS.len();
        stats.column_statistics.truncate(kept);
        stats
            .column_statistics
            .extend((0..LOCATION_COLUMNS.len()).map(|_| ColumnStatistics::new_unknown()));
        Ok(Arc::new(stats))
    }
}

/// What one partition's stream needs to locate rows.
struct Locating {
    files: Arc<Vec<FileLocation>>,
    table: String,
    schema: SchemaRef,
}

impl Locating {
    fn located(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let kept = self.schema.fields().len() - LOCATION_COLUMNS.len();
        let rows = batch.num_rows();
        let files = batch
            .column(kept)
            .as_primitive_opt::<UInt32Type>()
            .filter(|f| f.null_count() == 0)
            .ok_or_else(|| self.error("no file index"))?;
        let positions = batch
            .column(kept + 1)
            .as_primitive_opt::<Int64Type>()
            .filter(|p| p.null_count() == 0)
            .ok_or_else(|| self.error("no row positions"))?;
        // a batch comes from one file (the scan never joins files in a batch)
        let file = match files.values().first() {
            Some(&first) if files.values().iter().all(|&f| f == first) => first as usize,
            Some(_) => return Err(self.error("rows of several files")),
            None => 0,
        };
        let location = match self.files.get(file) {
            Some(location) => *location,
            None if rows == 0 => FileLocation {
                data_file_id: 0,
                row_id_start: 0,
            },
            None => return Err(self.error("an unknown file index")),
        };
        let last = positions.values().iter().copied().max().unwrap_or(0);
        if location.row_id_start.checked_add(last).is_none() {
            return Err(self.error("a row id beyond int64"));
        }
        let start = location.row_id_start;
        let row_ids = Int64Array::from_iter_values(positions.values().iter().map(|p| start + p));
        let file_ids = Int64Array::from_value(location.data_file_id, rows);
        let mut columns: Vec<ArrayRef> = batch.columns()[..kept].to_vec();
        columns.push(Arc::new(row_ids));
        columns.push(Arc::new(file_ids));
        columns.push(Arc::new(Int64Array::new(positions.values().clone(), None)));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// Never expected (the reader numbers every row it decodes): an execution error, so
    /// that the statement fails with this message rather than changing a wrong row.
    fn error(&self, what: &str) -> DataFusionError {
        DataFusionError::Execution(format!(
            "locating the rows of {}: a batch came with {what}",
            self.table
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drop_deleted::{file_field, position_field};
    use arrow::array::UInt32Array;
    use datafusion::datasource::memory::MemorySourceConfig;
    use futures::TryStreamExt;

    fn input(batches: &[(u32, Vec<i64>)]) -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![
            Arc::new(Field::new("k", DataType::Int64, false)),
            file_field(),
            position_field(),
        ]));
        let batches: Vec<RecordBatch> = batches
            .iter()
            .map(|(file, positions)| {
                RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![
                        Arc::new(Int64Array::from(vec![7; positions.len()])),
                        Arc::new(UInt32Array::from(vec![*file; positions.len()])),
                        Arc::new(Int64Array::from(positions.clone())),
                    ],
                )
                .unwrap()
            })
            .collect();
        MemorySourceConfig::try_new_exec(&[batches], schema, None).unwrap()
    }

    fn run(exec: LocateExec) -> Result<Vec<RecordBatch>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stream = exec.execute(0, Arc::new(TaskContext::default()))?;
        runtime.block_on(stream.try_collect())
    }

    fn column(batches: &[RecordBatch], index: usize) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                b.column(index)
                    .as_primitive::<Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    #[test]
    fn rows_get_their_row_id_file_and_position() {
        let files = vec![
            FileLocation {
                data_file_id: 10,
                row_id_start: 0,
            },
            FileLocation {
                data_file_id: 11,
                row_id_start: 1000,
            },
        ];
        let plan = input(&[(1, vec![0, 5]), (0, vec![3])]);
        let exec = LocateExec::try_new(plan, files, "t".into()).unwrap();
        let names: Vec<_> = exec
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            ["k", "rowid", "__ducklake_file_id", "__ducklake_position"]
        );
        let batches = run(exec).unwrap();
        assert_eq!(column(&batches, 0), [7, 7, 7]);
        assert_eq!(column(&batches, 1), [1000, 1005, 3]);
        assert_eq!(column(&batches, 2), [11, 11, 10]);
        assert_eq!(column(&batches, 3), [0, 5, 3]);
    }

    #[test]
    fn a_row_off_the_scans_files_is_an_error_never_a_wrong_location() {
        let files = || {
            vec![FileLocation {
                data_file_id: 1,
                row_id_start: i64::MAX - 1,
            }]
        };
        let plan = input(&[(1, vec![0])]);
        assert!(run(LocateExec::try_new(plan, files(), "t".into()).unwrap()).is_err());
        let plan = input(&[(0, vec![5])]); // beyond int64
        assert!(run(LocateExec::try_new(plan, files(), "t".into()).unwrap()).is_err());
        let mixed = Arc::new(Schema::new(vec![
            Arc::new(Field::new("k", DataType::Int64, false)),
            crate::drop_deleted::file_field(),
            crate::drop_deleted::position_field(),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&mixed),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(UInt32Array::from(vec![0, 1])),
                Arc::new(Int64Array::from(vec![0, 0])),
            ],
        )
        .unwrap();
        let two_files = vec![files()[0], files()[0]];
        let plan = MemorySourceConfig::try_new_exec(&[vec![batch]], mixed, None).unwrap();
        assert!(run(LocateExec::try_new(plan, two_files, "t".into()).unwrap()).is_err());
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let bare = MemorySourceConfig::try_new_exec(&[vec![]], schema, None).unwrap();
        assert!(LocateExec::try_new(bare, files(), "t".into()).is_err());
    }
}
