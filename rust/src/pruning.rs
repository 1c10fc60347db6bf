//! File pruning by catalog statistics: DataFusion's `PruningPredicate` over the per-file
//! bounds the Python planner considers safe.
//!
//! The Python side sends, per file and table column, a lower and an upper bound and a null
//! count, each null when unknown (truncated string maxima, NaN, statistics the writer did
//! not keep, ...); partition values already narrow them. Bounds hold for every physical row
//! of a file, deleted or not, so they are valid at any snapshot that sees the file.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};

/// Bounds of every file of a table, aligned with the provider's file list.
#[derive(Debug, Default)]
pub struct FileBounds {
    mins: HashMap<String, ArrayRef>,
    maxs: HashMap<String, ArrayRef>,
    nulls: HashMap<String, ArrayRef>,
    rows: Option<ArrayRef>,
    count: usize,
}

impl FileBounds {
    /// Reads the `min:<column>`, `max:<column>` and `nulls:<column>` columns of `batch`
    /// (one row per file). A bound whose type is not the column's is ignored (never
    /// cast: a rounded bound could prune a matching file).
    pub fn new(batch: &RecordBatch, schema: &SchemaRef, record_counts: &[u64]) -> Self {
        let mut bounds = FileBounds {
            count: record_counts.len(),
            rows: Some(Arc::new(UInt64Array::from(record_counts.to_vec())) as ArrayRef),
            ..Default::default()
        };
        if batch.num_rows() != record_counts.len() {
            return FileBounds {
                count: record_counts.len(),
                ..Default::default()
            };
        }
        for field in schema.fields() {
            let name = field.name();
            for (prefix, target) in [("min:", &mut bounds.mins), ("max:", &mut bounds.maxs)] {
                if let Some(values) = batch.column_by_name(&format!("{prefix}{name}")) {
                    if values.data_type() == field.data_type() {
                        target.insert(name.clone(), Arc::clone(values));
                    }
                }
            }
            if let Some(values) = batch.column_by_name(&format!("nulls:{name}")) {
                if let Ok(values) = cast(values, &DataType::UInt64) {
                    bounds.nulls.insert(name.clone(), values);
                }
            }
        }
        bounds
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.count
    }
}

impl PruningStatistics for FileBounds {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.mins.get(column.name()).cloned()
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.maxs.get(column.name()).cloned()
    }

    fn num_containers(&self) -> usize {
        self.count
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.nulls.get(column.name()).cloned()
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        self.rows.clone()
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}
