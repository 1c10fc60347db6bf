//! Whole Parquet files read off the GIL, for a compaction's sources (`maintain/_sources.py`).
//!
//! A merge of thousands of small files spends its time per file: read from Python one by
//! one, each file holds the GIL for its open, its footer and its decode, and two cores
//! read no faster than one. Here a chunk of files is read on the I/O runtime, `concurrency`
//! at a time, each in one request and decoded whole (as pyarrow read it), and handed back
//! in order as Arrow, consecutive files of the same columns as one batch. What a file
//! holds is the Python side's to check (its columns by field id, its row count against the
//! catalog's). A file that cannot be read comes back as its error's class and reason,
//! which the Python side raises as the package's typed error, naming the table and file.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::ToPyArrow;
use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::{ErrorClass, StoreConfigError};

/// Rows per batch a file is decoded in (a small file is one batch).
const BATCH_ROWS: usize = 64 * 1024;

/// A file's schema and batches, or its error's class and reason.
type FileRead = Result<(SchemaRef, Vec<RecordBatch>), (ErrorClass, String)>;

/// Consecutive files of one schema, as one batch: each crossing into Python costs tens of
/// microseconds under the GIL, which at thousands of small files was the merge's time.
struct Group {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    rows: Vec<usize>,
}

/// Read each of `paths` (object-store paths in the store of `storage`) whole, `concurrency`
/// at a time. Returns `(groups, error)`: the files in order as groups of consecutive files
/// whose columns are the same, each `(schema, batch, rows of each file)`, and `None`; or, if
/// a file cannot be read, the groups before it and `(its index, error class, reason)`.
#[pyfunction]
#[pyo3(signature = (paths, storage, concurrency))]
pub fn read_whole_files<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    storage: HashMap<String, String>,
    concurrency: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let store = crate::stores::object_store(&storage).map_err(StoreConfigError::new_err)?;
    let runtime = crate::python::runtime()?;
    let (groups, failed) = py.detach(|| {
        let reads: Vec<FileRead> = runtime.block_on(
            futures::stream::iter(
                paths
                    .into_iter()
                    .map(|path| read_file(Arc::clone(&store), path)),
            )
            .buffered(concurrency.max(1))
            .collect(),
        );
        let (groups, failed) = grouped(reads);
        let joined = groups
            .into_iter()
            .map(|group| {
                concat_batches(&group.schema, &group.batches).map(|batch| (batch, group.rows))
            })
            .collect::<Result<Vec<_>, _>>();
        (joined, failed)
    });
    let groups =
        groups.map_err(|e| PyValueError::new_err(format!("cannot join the files' rows: {e}")))?;
    let out = PyList::empty(py);
    for (batch, rows) in groups {
        out.append((batch.to_pyarrow(py)?, rows))?;
    }
    let error = match failed {
        Some((index, (class, reason))) => {
            (index, class.name(), reason).into_pyobject(py)?.into_any()
        }
        None => py.None().into_bound(py),
    };
    PyTuple::new(py, [out.into_any(), error])
}

/// The reads as groups of consecutive files of equal fields, up to the first that failed.
fn grouped(reads: Vec<FileRead>) -> (Vec<Group>, Option<(usize, (ErrorClass, String))>) {
    let mut groups: Vec<Group> = Vec::new();
    for (index, read) in reads.into_iter().enumerate() {
        let (schema, batches) = match read {
            Ok(read) => read,
            Err(error) => return (groups, Some((index, error))),
        };
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        match groups.last_mut() {
            Some(group) if group.schema.fields() == schema.fields() => {
                // (joined under the group's schema: a file's own metadata may differ)
                group.batches.extend(batches);
                group.rows.push(rows);
            }
            _ => groups.push(Group {
                schema,
                batches,
                rows: vec![rows],
            }),
        }
    }
    (groups, None)
}

async fn read_file(store: Arc<dyn ObjectStore>, path: String) -> FileRead {
    let location = Path::parse(&path)
        .map_err(|e| (ErrorClass::DataFileCorrupt, format!("has a bad path: {e}")))?;
    let got = store.get(&location).await.map_err(store_error)?;
    let bytes = got.bytes().await.map_err(store_error)?;
    decode(bytes)
}

fn decode(bytes: Bytes) -> FileRead {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(corrupt)?
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(corrupt)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(corrupt)?;
    Ok((schema, batches))
}

fn store_error(error: object_store::Error) -> (ErrorClass, String) {
    match error {
        object_store::Error::NotFound { .. } => (
            ErrorClass::DataFileMissing,
            "is missing from storage; restore it from a backup".to_string(),
        ),
        other => (ErrorClass::Storage, format!("cannot be read: {other}")),
    }
}

fn corrupt(error: impl std::fmt::Display) -> (ErrorClass, String) {
    (
        ErrorClass::DataFileCorrupt,
        format!(
            "is not a readable Parquet file ({error}); it may be truncated or overwritten. \
             Restore it from a backup or rewrite the table in DuckDB"
        ),
    )
}
