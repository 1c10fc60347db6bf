//! Deleted positions of a data file as a Parquet `RowSelection`, so that deleted rows are
//! never decoded.
//!
//! The Python side hands over each file's sorted, unique deleted positions (every live
//! delete file, per-position snapshots, inlined deletes and deletion vectors already
//! merged by `read/_deletes.py`). DataFusion splits the file-level selection into row
//! groups when it opens the file and intersects it with its own row-group and page-index
//! pruning.

use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

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
