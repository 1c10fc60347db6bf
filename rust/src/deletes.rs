//! Deleted positions of a data file as a Parquet `RowSelection`, so that deleted rows are
//! never decoded; or, when they are scattered, as one bit per row, so that the file is
//! decoded whole and its deleted rows dropped after decoding (`drop_deleted`).
//!
//! The Python side hands over each file's sorted, unique deleted positions (every live
//! delete file, per-position snapshots, inlined deletes and deletion vectors already
//! merged by `read/_deletes.py`). DataFusion splits the file-level selection into row
//! groups when it opens the file and intersects it with its own row-group and page-index
//! pruning; that split is kept for the file's later scans (`RowGroupSelections`).

use std::sync::{Arc, OnceLock};

use arrow::array::{Array, BooleanArray, Int64Array};
use arrow::buffer::{BooleanBuffer, MutableBuffer};
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

/// The average run (kept or deleted rows, in a row selection) below which a file's deletes
/// are dropped after decoding instead of skipped by a row selection.
///
/// Parquet 59's reader follows a selection run by run (`RowSelectionPolicy::Selectors`)
/// unless the runs average fewer than 32 rows, and DataFusion 55 offers no other policy.
/// Measured on TPC-H SF 1's `lineitem` (6 M rows, 4% deleted in runs of 4, runs of ~50 on
/// average), four columns decoded on one core: 72 ms without deletes, 99 ms following the
/// selection, 86 ms decoding everything and dropping the deleted rows by a mask. Following
/// a selection costs in proportion to its runs, dropping in proportion to the rows: the
/// two cost alike at runs of about 90 rows.
pub const SCATTERED_RUN: u64 = 96;

/// Whether `selection`, of a file of `record_count` rows, has runs shorter than
/// `SCATTERED_RUN` on average.
#[cfg(test)]
fn scattered(selection: &RowSelection, record_count: u64) -> bool {
    scattered_runs(selection.iter().count() as u64, record_count)
}

fn scattered_runs(runs: u64, record_count: u64) -> bool {
    runs > 1 && record_count < runs.saturating_mul(SCATTERED_RUN)
}

/// How a file's deleted rows are left out: skipped by a row selection, or dropped after
/// decoding by one bit per row (`scattered`).
#[derive(Debug)]
pub enum FileDeletes {
    Skipped(RowSelection),
    Dropped(LiveRows),
}

/// `deleted` (sorted ascending, unique, each below `record_count`) as the form its runs
/// call for. The runs are counted first, so only that form is built: a file with 175,000
/// scattered deletes would otherwise build a selection of 350,000 selectors to drop it.
pub fn file_deletes(deleted: &[i64], record_count: u64) -> Result<FileDeletes, String> {
    if scattered_runs(selection_runs(deleted, record_count)?, record_count) {
        Ok(FileDeletes::Dropped(LiveRows::new(deleted, record_count)?))
    } else {
        Ok(FileDeletes::Skipped(row_selection(deleted, record_count)?))
    }
}

/// The selectors `row_selection` would make of `deleted` (checked as it checks them).
fn selection_runs(deleted: &[i64], record_count: u64) -> Result<u64, String> {
    let mut runs: u64 = 0;
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
            runs += 2; // the kept rows before it, and a deleted run
        } else if runs == 0 {
            runs = 1; // a deleted run from the first row
        }
        next = position + 1;
    }
    Ok(runs + u64::from(next < record_count))
}

/// The live rows of a file, one bit per row (set: live).
#[derive(Debug)]
pub struct LiveRows(BooleanBuffer);

impl LiveRows {
    /// `deleted`: sorted, unique positions below `record_count` (checked by `row_selection`).
    pub fn new(deleted: &[i64], record_count: u64) -> Result<Self, String> {
        let rows = to_usize(record_count)?;
        let mut bits = MutableBuffer::new_null(rows);
        // every row live, then each deleted one cleared
        bits.as_slice_mut().fill(0xff);
        let bytes = bits.as_slice_mut();
        for &position in deleted {
            let at = usize::try_from(position)
                .ok()
                .filter(|&p| p < rows)
                .ok_or_else(|| format!("deleted position {position} is outside the file"))?;
            bytes[at / 8] &= !(1u8 << (at % 8));
        }
        Ok(Self(BooleanBuffer::new(bits.into(), 0, rows)))
    }

    /// Which of the rows at file positions `rows` are live: `None` when all are. The
    /// reader numbers a batch's rows in ascending order, so a batch without gaps is one
    /// slice of the bits; any other is looked up row by row.
    pub fn mask(&self, rows: &Int64Array) -> Result<Option<BooleanArray>, String> {
        let n = rows.len();
        if n == 0 {
            return Ok(None);
        }
        if rows.null_count() > 0 {
            return Err("the reader gave a row without its position".to_string());
        }
        let (first, last) = (rows.value(0), rows.value(n - 1));
        let position = |p: i64| {
            usize::try_from(p)
                .ok()
                .filter(|&p| p < self.0.len())
                .ok_or_else(|| {
                    format!(
                        "row position {p} is outside the file's {} rows",
                        self.0.len()
                    )
                })
        };
        let bits = if last.checked_sub(first) == Some(n as i64 - 1) {
            position(last)?;
            self.0.slice(position(first)?, n)
        } else {
            let mut looked_up = Vec::with_capacity(n);
            for &p in rows.values().iter() {
                looked_up.push(self.0.value(position(p)?));
            }
            BooleanBuffer::from(looked_up)
        };
        if bits.count_set_bits() == n {
            return Ok(None);
        }
        Ok(Some(BooleanArray::new(bits, None)))
    }
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
    fn short_runs_are_scattered_and_long_ones_are_not() {
        // every 10th row deleted: runs of 9 and 1
        let deleted: Vec<i64> = (0..10_000).filter(|p| p % 10 == 3).collect();
        assert!(scattered(&row_selection(&deleted, 10_000).unwrap(), 10_000));
        // one block of 500 deleted rows in 10,000
        let deleted: Vec<i64> = (2_000..2_500).collect();
        assert!(!scattered(
            &row_selection(&deleted, 10_000).unwrap(),
            10_000
        ));
        assert!(!scattered(&row_selection(&[], 10).unwrap(), 10));
    }

    #[test]
    fn live_rows_mask_a_batch_by_its_positions() {
        let live = LiveRows::new(&[1, 4, 5], 8).unwrap();
        let bits =
            |m: Option<BooleanArray>| m.map(|m| m.iter().map(|b| b.unwrap()).collect::<Vec<_>>());
        // a batch without gaps: a slice of the bits
        let slice = live.mask(&Int64Array::from(vec![3, 4, 5, 6])).unwrap();
        assert_eq!(bits(slice), Some(vec![true, false, false, true]));
        // with gaps (a filter or a page index skipped rows): looked up row by row
        let gaps = live.mask(&Int64Array::from(vec![0, 1, 7])).unwrap();
        assert_eq!(bits(gaps), Some(vec![true, false, true]));
        // every row live: nothing to drop
        assert!(live.mask(&Int64Array::from(vec![6, 7])).unwrap().is_none());
        assert!(live.mask(&Int64Array::from(vec![2, 3])).unwrap().is_none());
        // a position outside the file is an error, never a wrong row
        assert!(live.mask(&Int64Array::from(vec![7, 8])).is_err());
        assert!(live.mask(&Int64Array::from(vec![-1, 0])).is_err());
        assert!(live.mask(&Int64Array::from(vec![Some(1), None])).is_err());
        assert!(LiveRows::new(&[8], 8).is_err());
    }

    #[test]
    fn runs_are_counted_as_the_selection_has_them() {
        let cases: [(&[i64], u64); 7] = [
            (&[], 7),
            (&[0], 7),
            (&[6], 7),
            (&[0, 1, 5, 9], 10),
            (&[2, 3, 4], 5),
            (&[0, 1, 2, 3, 4], 5),
            (&[1, 3, 5, 7], 8),
        ];
        for (deleted, rows) in cases {
            let selection = row_selection(deleted, rows).unwrap();
            let runs = selection_runs(deleted, rows).unwrap();
            assert_eq!(
                runs,
                selection.iter().count() as u64,
                "{deleted:?} of {rows}"
            );
        }
        for (bad, rows) in [
            (&[10][..], 10),
            (&[-1][..], 10),
            (&[3, 3][..], 10),
            (&[4, 3][..], 10),
        ] {
            assert!(selection_runs(bad, rows).is_err());
            assert!(file_deletes(bad, rows).is_err());
        }
        let every_tenth: Vec<i64> = (0..10_000).filter(|p| p % 10 == 3).collect();
        assert!(matches!(
            file_deletes(&every_tenth, 10_000).unwrap(),
            FileDeletes::Dropped(_)
        ));
        let block: Vec<i64> = (2_000..2_500).collect();
        assert!(matches!(
            file_deletes(&block, 10_000).unwrap(),
            FileDeletes::Skipped(_)
        ));
    }

    #[test]
    fn nothing_deleted_selects_everything() {
        let selection = row_selection(&[], 7).unwrap();
        assert_eq!(shape(&selection), vec![(false, 7)]);
    }
}
