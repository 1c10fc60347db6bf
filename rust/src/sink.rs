//! `INSERT INTO` / `INSERT OVERWRITE`: the rows DataFusion inserts, handed to Python.
//!
//! Writing a lake is the engine-neutral core's job (`ducklake_datafusion.write`: Parquet
//! files as DuckDB writes them, their statistics, one commit), so this sink writes
//! nothing itself: `write_all` gives the Python writer the insert's rows as one
//! `pyarrow.RecordBatchReader` and returns the count it reports. The batches cross a
//! channel of two, so an insert of any size streams through; the interpreter is released
//! while a batch is awaited (the query feeding the insert may need it, e.g. to plan or
//! read a lake table itself): pyarrow's reader of a C stream asks without the GIL.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use arrow_pyarrow::IntoPyArrow;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::StreamExt;
use pyo3::prelude::*;

use crate::lazy::{python_error, ReleasedAtOnce};

/// Writes the inserted rows through `writer(reader, overwrite) -> rows written`.
pub struct LakeSink {
    table: String,
    schema: SchemaRef,
    writer: Arc<ReleasedAtOnce>,
    overwrite: bool,
}

impl LakeSink {
    pub fn new(
        table: String,
        schema: SchemaRef,
        writer: Arc<ReleasedAtOnce>,
        overwrite: bool,
    ) -> Self {
        Self {
            table,
            schema,
            writer,
            overwrite,
        }
    }
}

impl fmt::Debug for LakeSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LakeSink({:?}, overwrite={})",
            self.table, self.overwrite
        )
    }
}

impl DisplayAs for LakeSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.overwrite {
            "overwrite"
        } else {
            "append"
        };
        write!(f, "DuckLakeSink: table={}, mode={mode}", self.table)
    }
}

/// The insert's batches as a blocking reader for the Python writer (on a blocking thread):
/// `write_all` pumps DataFusion's stream into the channel this reads.
struct ChannelReader {
    batches: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
    schema: SchemaRef,
}

impl Iterator for ChannelReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // pyarrow asks for each batch of a C stream with the interpreter released
        let next = self.batches.blocking_recv();
        next.map(|batch| batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for ChannelReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[async_trait::async_trait]
impl DataSink for LakeSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The Python writer runs on a blocking thread and reads a channel; the stream is
    /// polled here, on the thread DataFusion polls the insert on, because the plan that
    /// feeds it may belong to the caller's DataFusion, whose operators start their tasks
    /// on the caller's runtime, reachable only from the caller's threads.
    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let (sender, batches) = tokio::sync::mpsc::channel(2);
        let reader = ChannelReader {
            batches,
            schema: data.schema(),
        };
        let writer = Arc::clone(&self.writer);
        let overwrite = self.overwrite;
        let table = self.table.clone();
        let written = tokio::task::spawn_blocking(move || {
            Python::attach(|py| -> PyResult<u64> {
                let reader: Box<dyn RecordBatchReader + Send> = Box::new(reader);
                let reader = reader.into_pyarrow(py)?;
                writer
                    .bind(py)?
                    .call1((reader, overwrite))?
                    .extract::<u64>()
            })
            .map_err(|error| python_error(&format!("writing to {table}"), error))
        });
        while let Some(batch) = data.next().await {
            let failed = batch.is_err();
            if sender.send(batch).await.is_err() || failed {
                break; // the writer stopped reading (it failed), or the input did
            }
        }
        drop(sender); // the end of the rows: the writer commits
        written.await.map_err(|e| {
            DataFusionError::External(format!("writing to {}: {e}", self.table).into())
        })?
    }
}

/// The insert as DataFusion executes it: every partition of its input (polled in turn on
/// the polling thread) into the sink, then one row with the count written.
///
/// Not DataFusion's `DataSinkExec`, which reads only partition 0 of its input and relies on
/// the optimizer to merge the others first: across the FFI boundary the caller's
/// optimizer does not see that requirement and may even split the input further (it
/// optimizes the input, as it must, through `children`). And not DataFusion's merge,
/// which spawns a task per partition on our runtime, whose threads cannot start the
/// caller's operators' tasks (they belong to the caller's runtime).
#[derive(Debug)]
pub struct LakeInsertExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<LakeSink>,
    properties: Arc<PlanProperties>,
}

impl LakeInsertExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, sink: Arc<LakeSink>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(count_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input,
            sink,
            properties: Arc::new(properties),
        }
    }
}

fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

impl DisplayAs for LakeInsertExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.sink.fmt_as(t, f)
    }
}

impl ExecutionPlan for LakeInsertExec {
    fn name(&self) -> &str {
        "DuckLakeInsertExec"
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
        match children.pop() {
            Some(input) if children.is_empty() => {
                Ok(Arc::new(Self::new(input, Arc::clone(&self.sink))))
            }
            _ => Err(DataFusionError::Internal(
                "DuckLakeInsertExec takes one child".to_string(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DuckLakeInsertExec has one partition, not {partition}"
            )));
        }
        let input = Arc::clone(&self.input);
        let sink = Arc::clone(&self.sink);
        let schema = count_schema();
        let out = Arc::clone(&schema);
        let written = futures::stream::once(async move {
            let count = input.output_partitioning().partition_count();
            let streams = (0..count)
                .map(|partition| input.execute(partition, Arc::clone(&context)))
                .collect::<Result<Vec<_>>>()?;
            let merged =
                RecordBatchStreamAdapter::new(input.schema(), futures::stream::select_all(streams));
            let rows = sink.write_all(Box::pin(merged), &context).await?;
            let counts: ArrayRef = Arc::new(UInt64Array::from(vec![rows]));
            Ok(RecordBatch::try_new(out, vec![counts])?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, written)))
    }
}
