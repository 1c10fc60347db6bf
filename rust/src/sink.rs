//! `INSERT INTO` / `INSERT OVERWRITE`: the rows DataFusion inserts, handed to Python.
//!
//! Writing a lake is the engine-neutral core's job (`ducklake_datafusion.write`: Parquet
//! files as DuckDB writes them, their statistics, one commit), so this sink writes
//! nothing itself: `write_all` gives the Python writer the insert's rows as one
//! `pyarrow.RecordBatchReader` and returns the count it reports. The reader pulls batch
//! after batch from DataFusion's stream, so an insert of any size streams through; the
//! interpreter is released while a batch is awaited (the query feeding the insert may
//! need it, e.g. to plan or read a lake table itself).

use std::fmt;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use arrow_pyarrow::IntoPyArrow;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use pyo3::prelude::*;

use crate::lazy::ReleasedAtOnce;

/// Writes the inserted rows through `writer(reader, overwrite) -> rows written`.
pub struct LakeSink {
    table: String,
    schema: SchemaRef,
    writer: Arc<ReleasedAtOnce>,
    overwrite: bool,
}

impl LakeSink {
    pub fn new(table: String, schema: SchemaRef, writer: Arc<ReleasedAtOnce>, overwrite: bool) -> Self {
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
        write!(f, "LakeSink({:?}, overwrite={})", self.table, self.overwrite)
    }
}

impl DisplayAs for LakeSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.overwrite { "overwrite" } else { "append" };
        write!(f, "DuckLakeSink: table={}, mode={mode}", self.table)
    }
}

/// DataFusion's stream as a blocking reader (run on a blocking thread, never a runtime's).
struct BlockingReader {
    stream: SendableRecordBatchStream,
    schema: SchemaRef,
    handle: tokio::runtime::Handle,
}

impl Iterator for BlockingReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let handle = &self.handle;
        let stream = &mut self.stream;
        // pyarrow asks for the next batch holding the interpreter: let go of it meanwhile
        let next = Python::attach(|py| py.detach(|| handle.block_on(stream.next())));
        next.map(|batch| batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[async_trait::async_trait]
impl DataSink for LakeSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let reader = BlockingReader {
            schema: data.schema(),
            stream: data,
            handle: tokio::runtime::Handle::current(),
        };
        let writer = Arc::clone(&self.writer);
        let overwrite = self.overwrite;
        let table = self.table.clone();
        let written = tokio::task::spawn_blocking(move || {
            Python::attach(|py| -> PyResult<u64> {
                let reader: Box<dyn RecordBatchReader + Send> = Box::new(reader);
                let reader = reader.into_pyarrow(py)?;
                writer.bind(py)?.call1((reader, overwrite))?.extract::<u64>()
            })
            .map_err(|error| python_error(&table, error))
        })
        .await
        .map_err(|e| DataFusionError::External(format!("writing to {}: {e}", self.table).into()))?;
        written
    }
}

/// A Python exception as a query error keeping our error class and message.
fn python_error(table: &str, error: PyErr) -> DataFusionError {
    let text = Python::attach(|py| {
        let class = error
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Error".to_string());
        let message = error
            .value(py)
            .str()
            .map(|s| s.to_string())
            .unwrap_or_default();
        crate::errors::text(&class, &message)
    });
    DataFusionError::External(format!("writing to {table}: {text}").into())
}
