//! Per-file checks while the scan runs: the file is still the one the catalog lists.
//!
//! Every file is checked in Python when a provider is built (footer row count, field ids,
//! a regular file of the catalog's size). A provider is reused for later queries of the
//! same snapshot, so each file the scan keeps is checked again when it is opened (never in
//! `scan()`): a local file must still be a regular file of the catalog's size (a stat on
//! the decoding thread), and the footer (cached per process) must hold the catalog's
//! record count. A failed check stops the query with our error class and message in the
//! text. Local files are also read here, in place (`LocalRanges`).

use std::collections::HashSet;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use datafusion::common::Result;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_datasource_parquet::{ParquetFileReaderFactory, ParquetRowSelection};
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use crate::deletes::RowGroupSelections;
use crate::errors::{self, ErrorClass};

/// Files whose footer showed no page index (DuckDB writes none). DataFusion's metadata
/// cache treats a cached footer without page index as incomplete: on every open it copied
/// the whole footer and looked for the index again (docs/benchmarks.md has the cost, from
/// `EXPLAIN ANALYZE`'s `metadata_load_time`). A file never changes in place
/// (DuckLake writes new names), so once is enough. Bounded: cleared when it grows large.
fn files_without_page_index() -> &'static Mutex<HashSet<Path>> {
    static FILES: OnceLock<Mutex<HashSet<Path>>> = OnceLock::new();
    FILES.get_or_init(|| Mutex::new(HashSet::new()))
}

const WITHOUT_PAGE_INDEX_MAX: usize = 1 << 20;

fn without_page_index(path: &Path) -> bool {
    files_without_page_index()
        .lock()
        .map(|files| files.contains(path))
        .unwrap_or(false)
}

fn note_page_index(path: &Path, metadata: &ParquetMetaData) {
    if metadata.column_index().is_some() && metadata.offset_index().is_some() {
        return;
    }
    if let Ok(mut files) = files_without_page_index().lock() {
        if files.len() >= WITHOUT_PAGE_INDEX_MAX {
            files.clear();
        }
        files.insert(path.clone());
    }
}

/// What the catalog says of a file (a `PartitionedFile` extension).
#[derive(Debug, Clone)]
pub struct Expected {
    pub url: String,
    pub size: u64,
    pub record_count: u64,
}

#[derive(Debug)]
pub struct CheckedReaderFactory {
    pub inner: Arc<dyn ParquetFileReaderFactory>,
    pub store: Arc<dyn ObjectStore>,
    /// Check that the object still exists with the catalog's size (local files: a stat;
    /// remote footers are checked once per process, like the other native path).
    pub check_size: bool,
    pub table: String,
    /// Local files: ranges are read in place, on the thread decoding the file (see
    /// `LocalRanges`), instead of on the store's blocking pool.
    pub local: Option<Arc<LocalFileSystem>>,
}

impl ParquetFileReaderFactory for CheckedReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> Result<Box<dyn AsyncFileReader + Send>> {
        let expected = partitioned_file.extension::<Expected>().cloned();
        let split = match (
            partitioned_file.extension::<RowGroupSelections>(),
            partitioned_file.extension::<ParquetRowSelection>(),
        ) {
            (Some(slot), Some(selection)) if slot.get().is_none() => {
                Some((slot.clone(), selection.selection().clone()))
            }
            _ => None,
        };
        let path = partitioned_file.object_meta.location.clone();
        let local = match &self.local {
            Some(fs) => Some(LocalRanges::new(fs.path_to_filesystem(&path).map_err(
                |e| datafusion::error::DataFusionError::External(Box::new(e)),
            )?)),
            None => None,
        };
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file,
            metadata_size_hint,
            metrics,
        )?;
        Ok(Box::new(CheckedReader {
            inner,
            store: Arc::clone(&self.store),
            path,
            expected,
            check_size: self.check_size,
            table: self.table.clone(),
            local,
            split,
        }))
    }
}

struct CheckedReader {
    inner: Box<dyn AsyncFileReader + Send>,
    store: Arc<dyn ObjectStore>,
    path: Path,
    expected: Option<Expected>,
    check_size: bool,
    table: String,
    local: Option<LocalRanges>,
    /// The file's deletes, to split into its row groups once its footer is read.
    split: Option<(RowGroupSelections, RowSelection)>,
}

/// Byte ranges of one local file, read on the thread that decodes them.
///
/// `LocalFileSystem` hands every read to its runtime's blocking pool and wakes the
/// decoding thread when it is done: on two cores that third thread competes with both
/// decoders, and each hand-off leaves a decoder waiting; reading in place made full scans
/// faster (docs/benchmarks.md). A file in the page cache is a copy; a cold file
/// blocks this one decoder, which would otherwise wait for the same read.
struct LocalRanges {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl LocalRanges {
    fn new(path: std::path::PathBuf) -> Self {
        Self { path, file: None }
    }

    /// The file's size (a stat: the file must be a regular file of the catalog's size).
    fn size(&self) -> object_store::Result<u64> {
        match std::fs::metadata(&self.path) {
            Ok(meta) if meta.is_file() => Ok(meta.len()),
            Ok(_) => Err(object_store::Error::NotFound {
                path: self.path.display().to_string(),
                source: "not a regular file".into(),
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(object_store::Error::NotFound {
                    path: self.path.display().to_string(),
                    source: Box::new(error),
                })
            }
            Err(error) => Err(object_store::Error::Generic {
                store: "LocalFileSystem",
                source: Box::new(error),
            }),
        }
    }

    fn read(&mut self, ranges: &[Range<u64>]) -> std::io::Result<Vec<Bytes>> {
        use std::io::{Read, Seek, SeekFrom};
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(std::fs::File::open(&self.path)?),
        };
        ranges
            .iter()
            .map(|range| {
                let length = (range.end - range.start) as usize;
                // read_to_end fills the spare capacity without zeroing it first
                let mut buffer = Vec::with_capacity(length);
                file.seek(SeekFrom::Start(range.start))?;
                Read::by_ref(file)
                    .take(length as u64)
                    .read_to_end(&mut buffer)?;
                if buffer.len() != length {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("bytes {range:?} are past the end of the file"),
                    ));
                }
                Ok(Bytes::from(buffer))
            })
            .collect()
    }
}

fn failed(class: ErrorClass, message: String) -> ParquetError {
    ParquetError::General(errors::class_text(class, &message))
}

impl CheckedReader {
    fn read_local(&mut self, ranges: &[Range<u64>]) -> parquet::errors::Result<Vec<Bytes>> {
        let Some(local) = self.local.as_mut() else {
            return Err(ParquetError::General("not a local file".into()));
        };
        local.read(ranges).map_err(|error| {
            let what = match &self.expected {
                Some(expected) => format!("data file {} of table {}", expected.url, self.table),
                None => format!("data file {} of table {}", self.path, self.table),
            };
            if error.kind() == std::io::ErrorKind::NotFound {
                failed(
                    ErrorClass::DataFileMissing,
                    format!("{what} is missing from storage; restore it from a backup"),
                )
            } else {
                failed(
                    ErrorClass::Storage,
                    format!("{what} cannot be read: {error}"),
                )
            }
        })
    }
}

impl AsyncFileReader for CheckedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        if self.local.is_some() {
            let read = self.read_local(&[range]).map(|mut v| v.remove(0));
            return futures::future::ready(read).boxed();
        }
        self.inner.get_bytes(range)
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        if self.local.is_some() {
            return futures::future::ready(self.read_local(&ranges)).boxed();
        }
        self.inner.get_byte_ranges(ranges)
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            // A file known to have no page index: asking for it again would make
            // DataFusion copy the cached footer and look for the index on every open.
            let skipping = without_page_index(&self.path).then(|| {
                options
                    .cloned()
                    .unwrap_or_default()
                    .with_page_index_policy(PageIndexPolicy::Skip)
            });
            let options = skipping.as_ref().or(options);
            let Some(expected) = self.expected.clone() else {
                let metadata = self.inner.get_metadata(options).await?;
                note_page_index(&self.path, &metadata);
                return Ok(metadata);
            };
            let what = format!("data file {} of table {}", expected.url, self.table);
            if self.check_size {
                let size = match &self.local {
                    Some(local) => local.size(),
                    _ => self.store.head(&self.path).await.map(|meta| meta.size),
                };
                match size {
                    Ok(size) if size == expected.size => {}
                    Ok(size) => {
                        return Err(failed(
                            ErrorClass::DataFileCorrupt,
                            format!(
                                "{what} has {} bytes but the catalog records {}; the file was \
                                 replaced. Restore it from a backup (DuckLake never rewrites a \
                                 file in place)",
                                size, expected.size
                            ),
                        ))
                    }
                    Err(object_store::Error::NotFound { .. }) => {
                        return Err(failed(
                            ErrorClass::DataFileMissing,
                            format!("{what} is missing from storage; restore it from a backup"),
                        ))
                    }
                    Err(error) => {
                        return Err(failed(
                            ErrorClass::Storage,
                            format!("{what} cannot be read: {error}"),
                        ))
                    }
                }
            }
            let metadata = self.inner.get_metadata(options).await?;
            note_page_index(&self.path, &metadata);
            let rows = metadata.file_metadata().num_rows();
            if u64::try_from(rows).ok() != Some(expected.record_count) {
                return Err(failed(
                    ErrorClass::DataFileCorrupt,
                    format!(
                        "{what} has {rows} rows but the catalog records {}; the file was \
                         replaced or truncated. Restore it from a backup (DuckLake never \
                         rewrites a file in place)",
                        expected.record_count
                    ),
                ));
            }
            if let Some((slot, selection)) = self.split.take() {
                slot.derive(selection, metadata.row_groups());
            }
            Ok(metadata)
        }
        .boxed()
    }
}
