//! Deleted positions of a data file as a Parquet `RowSelection`, so that deleted rows are
//! never decoded.
//!
//! The Python side hands over each file's sorted, unique deleted positions (every live
//! delete file, per-position snapshots, inlined deletes and deletion vectors already
//! merged by `read/_deletes.py`). DataFusion splits the file-level selection into row
//! groups when it opens the file and intersects it with its own row-group and page-index
//! pruning; that split is kept for the file's later scans (`RowGroupSelections`).

use std::sync::{Arc, OnceLock};

use datafusion_datasource_parquet::ParquetAccessPlan;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::RowGroupMetaData;

/// A file's selection split into its row groups, derived once, when the file is first
/// opened (a `PartitionedFile` extension; clones share it).
///
/// Given the file's selection, DataFusion 55 splits it into row groups on every open of
/// the file, before pruning any row group; given this plan, it drops the selections of
/// the row groups it prunes without looking at them, so a point lookup in a file with many
/// deleted rows opens it almost as fast as a file without deletes (docs/benchmarks.md).
///
/// The plan is handed to each scan as a shared `Arc` (`PartitionedFile` extensions hold
/// `Arc`s): a deep copy per scan costs planning time in proportion to the selectors.
#[derive(Debug, Clone, Default)]
pub struct RowGroupSelections(Arc<OnceLock<Arc<ParquetAccessPlan>>>);

impl RowGroupSelections {
    pub fn get(&self) -> Option<&Arc<ParquetAccessPlan>> {
        self.0.get()
    }

    /// Split `selection` into `row_groups` (once; a selection that does not cover the row
    /// groups' rows exactly is left to DataFusion, which reports it).
    pub fn derive(&self, selection: RowSelection, row_groups: &[RowGroupMetaData]) {
        if self.0.get().is_some() {
            return;
        }
        if let Ok(plan) =
            ParquetAccessPlan::try_new_from_overall_row_selection(selection, row_groups)
        {
            let _ = self.0.set(Arc::new(plan));
        }
    }
}

/// `deleted` (sorted ascending, unique, each below `record_count`) as a selection of the
/// remaining rows of a file of `record_count` rows. Errors name the first bad position.
pub fn row_selection(deleted: &[i64], record_count: u64) -> Result<RowSelection, String> {
    let mut selectors: Vec<RowSelector> = Vec::new();
    let mut next: u64 = 0; // the first row not yet covered
    for &position in deleted {
        let Ok(position) = u64::try_from(position) else {
            return Err(format!("negative deleted position {position}"));
        };
        if position >= record_count {
            return Err(format!(
                "deleted position {position} is outside the file's {record_count} rows"
            ));
        }
        if position < next {
            return Err(format!(
                "deleted positions are not sorted and unique at {position}"
            ));
        }
        if position > next {
            selectors.push(RowSelector::select(to_usize(position - next)?));
            selectors.push(RowSelector::skip(1));
        } else {
            match selectors.last_mut() {
                Some(last) if last.skip => last.row_count += 1,
                _ => selectors.push(RowSelector::skip(1)),
            }
        }
        next = position + 1;
    }
    if next < record_count {
        selectors.push(RowSelector::select(to_usize(record_count - next)?));
    }
    Ok(RowSelection::from(selectors))
}

fn to_usize(n: u64) -> Result<usize, String> {
    usize::try_from(n).map_err(|_| format!("row count {n} does not fit this platform"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(selection: &RowSelection) -> Vec<(bool, usize)> {
        selection.iter().map(|s| (s.skip, s.row_count)).collect()
    }

    #[test]
    fn runs_of_deleted_rows_become_one_skip() {
        let selection = row_selection(&[0, 1, 5, 9], 10).unwrap();
        assert_eq!(
            shape(&selection),
            vec![(true, 2), (false, 3), (true, 1), (false, 3), (true, 1)]
        );
        assert_eq!(selection.row_count(), 6);
    }

    #[test]
    fn bad_positions_are_errors() {
        assert!(row_selection(&[10], 10).is_err());
        assert!(row_selection(&[-1], 10).is_err());
        assert!(row_selection(&[3, 3], 10).is_err());
        assert!(row_selection(&[4, 3], 10).is_err());
    }

    #[test]
    fn nothing_deleted_selects_everything() {
        let selection = row_selection(&[], 7).unwrap();
        assert_eq!(shape(&selection), vec![(false, 7)]);
    }
}
