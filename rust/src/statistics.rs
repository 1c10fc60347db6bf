//! Statistics for DataFusion's optimizer, from what the catalog knows of each file.
//!
//! Without statistics DataFusion plans every join of a lake table as a partitioned hash
//! join with two repartitions, even for a 25-row table, where its own Parquet table (which
//! reads footers) gets a `CollectLeft` join (issue 48). The catalog knows most of what a
//! footer would tell, and the provider holds it already:
//!
//! * rows: the record count minus the deleted positions, `Exact` (every file was checked
//!   against its record count, every deleted position is known);
//! * bytes: `Absent`, as DataFusion's own Parquet table has them. A file's size is its
//!   compressed bytes of every column, and a projection keeps it whole as soon as one
//!   projected column is not of a fixed width: a filtered `part` of TPC-H then weighed
//!   1.3 MB, above the 1 MB under which a join collects its side, where DataFusion's
//!   Parquet table, deciding by its 40,000 estimated rows, collected it. DataFusion
//!   computes the bytes of fixed-width projections from the row count;
//! * per column, null counts: `Exact` for a file without deletes (the catalog counts them
//!   over the file's rows), an upper bound (`Inexact`) for one with deletes;
//! * per column, lower and upper bounds: only ever `Inexact`. The Python side sends bounds
//!   it considers safe for pruning (a partition's calendar span, statistics of a file
//!   whose deleted rows may hold the extreme value), which need not be values of the
//!   column; DataFusion replaces `min(x)` by a literal only when it is `Exact`.
//!
//! What the catalog does not know is `Absent`. The inlined rows are scanned from memory,
//! whose statistics DataFusion computes exactly; the union adds them up.

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Statistics};

use crate::file::LakeFile;
use crate::pruning::FileBounds;

/// The statistics of file `index` of `bounds` (the provider's file list), for `schema`
/// (the scan's file schema: columns without bounds are unknown).
pub fn of_file(file: &LakeFile, index: usize, bounds: &FileBounds, schema: &Schema) -> Statistics {
    let exact = file.deleted == 0;
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let (low, high, nulls) = bounds.of_file(field.name(), index);
            let mut column = ColumnStatistics::new_unknown();
            if let Some(nulls) = nulls.and_then(|n| usize::try_from(n).ok()) {
                column.null_count = if exact {
                    Precision::Exact(nulls)
                } else {
                    Precision::Inexact(nulls)
                };
            }
            if let Some(low) = low {
                column.min_value = Precision::Inexact(low);
            }
            if let Some(high) = high {
                column.max_value = Precision::Inexact(high);
            }
            column
        })
        .collect();
    Statistics {
        num_rows: match usize::try_from(file.live_rows()) {
            Ok(rows) => Precision::Exact(rows),
            Err(_) => Precision::Absent,
        },
        total_byte_size: Precision::Absent,
        column_statistics: columns,
    }
}

/// The statistics of several files together (`None` when they cannot be merged).
pub fn merged<'a>(
    files: impl IntoIterator<Item = &'a Arc<Statistics>>,
    schema: &Schema,
) -> Option<Statistics> {
    Statistics::try_merge_iter(files.into_iter().map(|s| s.as_ref()), schema).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field};
    use arrow::record_batch::RecordBatch;
    use datafusion::common::ScalarValue;
    use object_store::path::Path;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ])
    }

    fn file(records: u64, deleted: u64) -> LakeFile {
        LakeFile {
            data_file_id: 0,
            path: Path::from("f.parquet"),
            url: "f.parquet".into(),
            size: 1000,
            footer_size: None,
            record_count: records,
            deleted,
            selection: None,
            live: None,
            row_groups: Default::default(),
        }
    }

    /// `k`: 1..=10 with 2 nulls and 11..=20 with none; `s`: only an upper bound.
    fn bounds() -> FileBounds {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("min:k", Arc::new(Int64Array::from(vec![1, 11]))),
            ("max:k", Arc::new(Int64Array::from(vec![10, 20]))),
            ("nulls:k", Arc::new(Int64Array::from(vec![2, 0]))),
            ("max:s", Arc::new(StringArray::from(vec![Some("m"), None]))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        FileBounds::new(&batch, &Arc::new(schema()), &[100, 200])
    }

    #[test]
    fn a_file_without_deletes_has_exact_rows_and_null_counts() {
        let stats = of_file(&file(100, 0), 0, &bounds(), &schema());
        assert_eq!(stats.num_rows, Precision::Exact(100));
        assert_eq!(stats.total_byte_size, Precision::Absent);
        let k = &stats.column_statistics[0];
        assert_eq!(k.null_count, Precision::Exact(2));
        // bounds are safe, never known to be values of the column
        assert_eq!(k.min_value, Precision::Inexact(ScalarValue::Int64(Some(1))));
        assert_eq!(
            k.max_value,
            Precision::Inexact(ScalarValue::Int64(Some(10)))
        );
        let s = &stats.column_statistics[1];
        assert_eq!(s.min_value, Precision::Absent);
        assert_eq!(s.max_value, Precision::Inexact(ScalarValue::from("m")));
        assert_eq!(s.null_count, Precision::Absent);
    }

    #[test]
    fn deleted_rows_are_not_counted_and_null_counts_become_bounds() {
        let stats = of_file(&file(200, 50), 1, &bounds(), &schema());
        assert_eq!(stats.num_rows, Precision::Exact(150));
        assert_eq!(stats.column_statistics[0].null_count, Precision::Inexact(0));
        assert_eq!(stats.column_statistics[1].max_value, Precision::Absent);
    }

    #[test]
    fn files_merge_into_the_table_and_unknown_stays_unknown() {
        let bounds = bounds();
        let both = [
            Arc::new(of_file(&file(100, 0), 0, &bounds, &schema())),
            Arc::new(of_file(&file(200, 0), 1, &bounds, &schema())),
        ];
        let table = merged(&both, &schema()).unwrap();
        assert_eq!(table.num_rows, Precision::Exact(300));
        let k = &table.column_statistics[0];
        assert_eq!(k.null_count, Precision::Exact(2));
        assert_eq!(k.min_value, Precision::Inexact(ScalarValue::Int64(Some(1))));
        assert_eq!(
            k.max_value,
            Precision::Inexact(ScalarValue::Int64(Some(20)))
        );
        // one file without an upper bound of `s`: the table has none
        assert_eq!(table.column_statistics[1].max_value, Precision::Absent);
        let unbounded = FileBounds::unbounded(&[100]);
        let stats = of_file(&file(100, 0), 0, &unbounded, &schema());
        assert_eq!(stats.num_rows, Precision::Exact(100));
        assert_eq!(stats.column_statistics[0], ColumnStatistics::new_unknown());
    }
}
