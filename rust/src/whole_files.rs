//! Whole Parquet files read off the GIL, for a compaction's sources (`maintain/_sources.py`).
//!
//! A merge of thousands of small files spends its time per file: read from Python one by
//! one, each file holds the GIL for its open, its footer and its decode, and two cores
//! read no faster than one. Here a chunk of files is read on the I/O runtime, `concurrency`
//! at a time, each small file in one request, and handed back in order as Arrow. What a
//! file holds is the Python side's to check (its columns by field id, its row count against
//! the catalog's). A file that cannot be read comes back as its error's class and reason,
//! which the Python side raises as the package's typed error, naming the table and file.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::ToPyArrow;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::async_reader::ParquetObjectReader;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::{ErrorClass, StoreConfigError};

/// Files up to this size are fetched whole, in one request; larger ones are streamed.
const WHOLE_FILE_BYTES: u64 = 8 << 20;
/// Rows per batch handed back (a small file is one batch).
const BATCH_ROWS: usize = 64 * 1024;

/// A file's schema and batches, or its error's class and reason.
type FileRead = Result<(SchemaRef, Vec<RecordBatch>), (ErrorClass, String)>;

/// Read each of `paths` (object-store paths in the store of `storage`, with their sizes from
/// the catalog, or none) whole, `concurrency` at a time. For each file, in order, a tuple
/// `(schema, batches, None)` or `(None, None, (error class, reason))`.
#[pyfunction]
#[pyo3(signature = (paths, sizes, storage, concurrency))]
pub fn read_whole_files<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    sizes: Vec<Option<u64>>,
    storage: HashMap<String, String>,
    concurrency: usize,
) -> PyResult<Bound<'py, PyList>> {
    if paths.len() != sizes.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} paths but {} sizes",
            paths.len(),
            sizes.len()
        )));
    }
    let store = crate::stores::object_store(&storage).map_err(StoreConfigError::new_err)?;
    let runtime = crate::python::runtime()?;
    let reads: Vec<FileRead> = py.detach(|| {
        runtime.block_on(
            futures::stream::iter(
                paths
                    .into_iter()
                    .zip(sizes)
                    .map(|(path, size)| read_file(Arc::clone(&store), path, size)),
            )
            .buffered(concurrency.max(1))
            .collect(),
        )
    });
    let out = PyList::empty(py);
    for read in reads {
        match read {
            Ok((schema, batches)) => out.append((
                schema.as_ref().to_pyarrow(py)?,
                batches.to_pyarrow(py)?,
                py.None(),
            ))?,
            Err((class, reason)) => out.append((py.None(), py.None(), (class.name(), reason)))?,
        }
    }
    Ok(out)
}

async fn read_file(store: Arc<dyn ObjectStore>, path: String, size: Option<u64>) -> FileRead {
    let location = Path::parse(&path)
        .map_err(|e| (ErrorClass::DataFileCorrupt, format!("has a bad path: {e}")))?;
    match size {
        Some(size) if size <= WHOLE_FILE_BYTES => {
            let bytes = fetch(store.as_ref(), &location).await?;
            decode(bytes)
        }
        _ => stream(store, location, size).await,
    }
}

async fn fetch(store: &dyn ObjectStore, location: &Path) -> Result<Bytes, (ErrorClass, String)> {
    let got = store.get(location).await.map_err(store_error)?;
    got.bytes().await.map_err(store_error)
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

async fn stream(store: Arc<dyn ObjectStore>, location: Path, size: Option<u64>) -> FileRead {
    let mut reader = ParquetObjectReader::new(store, location);
    if let Some(size) = size {
        reader = reader.with_file_size(size);
    }
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(parquet_error)?;
    let stream = builder.with_batch_size(BATCH_ROWS).build().map_err(parquet_error)?;
    let schema = stream.schema().clone();
    let batches = stream.try_collect::<Vec<_>>().await.map_err(parquet_error)?;
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

/// A streamed file's error: the store's when the store failed, else a corrupt file.
fn parquet_error(error: parquet::errors::ParquetError) -> (ErrorClass, String) {
    if let parquet::errors::ParquetError::External(inner) = &error {
        if let Some(store) = inner.downcast_ref::<object_store::Error>() {
            return match store {
                object_store::Error::NotFound { .. } => (
                    ErrorClass::DataFileMissing,
                    "is missing from storage; restore it from a backup".to_string(),
                ),
                other => (ErrorClass::Storage, format!("cannot be read: {other}")),
            };
        }
    }
    corrupt(error)
}
