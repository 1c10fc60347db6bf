//! What a provider's last `scan()` did: the counts `EXPLAIN` shows in the scan's line and
//! the Python side reads back for its tests (`last_scan`).

/// What the last `scan()` did, for tests and `EXPLAIN`.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    pub files_total: usize,
    pub files_kept: usize,
    pub files_with_deletes: usize,
    pub rows_skipped: u64,
    /// Kept files with scattered deletes, decoded whole (`drop_deleted`).
    pub files_read_whole: usize,
    /// Their deleted rows, dropped after decoding.
    pub rows_dropped: u64,
    pub filters: usize,
    pub partitions: usize,
    pub from_catalog: bool,
    /// The filters are evaluated inside the Parquet decoder (`FileBounds::point_lookup`,
    /// or the session's own `pushdown_filters`).
    pub decoder_filters: bool,
    /// Files with deletes whose selection was already split into row groups.
    pub files_split: usize,
    /// Kept files the exact reader read (the caller's `inlined` batches hold their rows).
    pub files_read_exactly: usize,
    /// Byte ranges of files split across partitions (`partitions`).
    pub ranges: usize,
}

impl ScanReport {
    pub fn summary(&self) -> String {
        if self.from_catalog {
            return "count from the catalog, no file read".to_string();
        }
        format!(
            "files {} of {} ({} pruned by catalog statistics), {} with deletes, {} deleted rows skipped by row selections{}{}{}{}",
            self.files_kept,
            self.files_total,
            self.files_total - self.files_kept,
            self.files_with_deletes,
            self.rows_skipped,
            if self.files_read_whole > 0 {
                format!(
                    ", {} dropped after decoding {} files whole",
                    self.rows_dropped, self.files_read_whole
                )
            } else {
                String::new()
            },
            if self.files_read_exactly > 0 {
                format!(", {} read by the exact reader", self.files_read_exactly)
            } else {
                String::new()
            },
            if self.decoder_filters {
                ", filters evaluated while decoding"
            } else {
                ""
            },
            if self.ranges > 0 {
                format!(", {} byte ranges of large files", self.ranges)
            } else {
                String::new()
            }
        )
    }
}
