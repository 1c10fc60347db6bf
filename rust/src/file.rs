//! One live data file of a snapshot, as the plan describes it and as DataFusion opens it.
//!
//! Plain facts (path, sizes, record count, deleted positions as a row selection or as
//! live rows) that the plan reader (`plan`) makes and every part of the scan reads:
//! pruning and statistics by index, partitioning by weight, the Parquet scan by
//! `partitioned_file`. It sits below them all, so none of them needs the provider to name
//! a file.

use std::sync::Arc;

use datafusion::datasource::listing::PartitionedFile;
use datafusion_datasource_parquet::ParquetRowSelection;
use object_store::path::Path;

use crate::checks::Expected;
use crate::deletes::{LiveRows, RowGroupSelections};

/// One live data file.
#[derive(Debug, Clone)]
pub struct LakeFile {
    /// The catalog's id of the file (`ducklake_data_file.data_file_id`).
    pub data_file_id: i64,
    pub path: Path,
    /// The catalog's URL of the file, for messages.
    pub url: String,
    pub size: u64,
    pub footer_size: Option<u64>,
    pub record_count: u64,
    /// Rows deleted at the snapshot (`selection` skips them, or `live` drops them).
    pub deleted: u64,
    pub selection: Option<Arc<ParquetRowSelection>>,
    /// The rows left, when the deletes are scattered (`deletes::file_deletes`): the file is
    /// decoded whole and its deleted rows dropped after decoding (`drop_deleted`), instead
    /// of skipped by `selection` (then `None`).
    pub live: Option<Arc<LiveRows>>,
    /// `selection` split into the file's row groups, once it has been opened.
    pub row_groups: RowGroupSelections,
}

impl LakeFile {
    pub fn live_rows(&self) -> u64 {
        self.record_count - self.deleted
    }

    pub fn weight(&self) -> u64 {
        if self.record_count == 0 {
            return self.size;
        }
        // bytes decoded, about: the live share of the file
        self.size.max(1) * self.live_rows() / self.record_count
    }
}

/// `file` as DataFusion's Parquet scan opens it: the catalog's facts to re-check
/// (`checks::Expected`), the footer size as a hint, and the deleted rows as a selection.
pub fn partitioned_file(file: &LakeFile) -> PartitionedFile {
    let mut part = PartitionedFile::new(file.path.to_string(), file.size);
    if let Some(footer) = file.footer_size {
        // the footer, its length and the magic
        part = part.with_metadata_size_hint((footer + 8) as usize);
    }
    part = part.with_extension(Expected {
        url: file.url.clone(),
        size: file.size,
        record_count: file.record_count,
    });
    if let Some(selection) = &file.selection {
        // shared, not copied: a file's selection can hold tens of thousands of selectors
        match file.row_groups.get() {
            Some(plan) => {
                part.extensions.insert_arc(Arc::clone(plan));
            }
            // the reader derives the split when it opens the file (`CheckedReader`)
            None => {
                part.extensions.insert_arc(Arc::clone(selection));
                part = part.with_extension(file.row_groups.clone());
            }
        }
    }
    part
}
