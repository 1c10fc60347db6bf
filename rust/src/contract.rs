//! What the Python side hands over to build a `LakeProvider`, and its check on arrival.
//!
//! The plan itself crosses as the plan export the Spark jar reads too (`plan`); beside it
//! the Python side sends what is not in the plan, in the shapes it defines once
//! (`ducklake_datafusion/provider/_rust_contract.py`: `bounds_schema`, `ProviderSpec`).
//! `tests/provider/test_rust_contract.py` compares them with `expected_schemas` and
//! `ProviderSpec::FIELDS` (exported as `_rust.boundary_schemas` and
//! `_rust.PROVIDER_SPEC_FIELDS`). Every batch received is checked, by name and type, before
//! a column is read: a mismatch is a `ContractError` naming the table and the column.

use std::collections::HashMap;
use std::fmt;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema};
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use crate::errors::ContractError;

/// Prefixes of the bounds table's columns: `min:<column>`, `max:<column>` (of the column's
/// type) and `nulls:<column>` (int64), each null where unknown.
pub const MIN_PREFIX: &str = "min:";
pub const MAX_PREFIX: &str = "max:";
pub const NULLS_PREFIX: &str = "nulls:";

/// The bounds table of a table of `schema` with a bound of every column that can have one
/// (not nested types); the one sent may leave any of them out, or be left out itself.
pub fn bounds_schema(schema: &Schema) -> Schema {
    let mut fields = Vec::new();
    for field in schema.fields() {
        if field.data_type().is_nested() {
            continue;
        }
        let name = field.name();
        fields.push(Field::new(
            format!("{MIN_PREFIX}{name}"),
            field.data_type().clone(),
            true,
        ));
        fields.push(Field::new(
            format!("{MAX_PREFIX}{name}"),
            field.data_type().clone(),
            true,
        ));
        fields.push(Field::new(
            format!("{NULLS_PREFIX}{name}"),
            DataType::Int64,
            true,
        ));
    }
    Schema::new(fields)
}

/// The schemas a provider of a table of `schema` expects beside the plan (whose schema
/// is `plan::plan_schema`), by name.
pub fn expected_schemas(schema: &Schema) -> Vec<(&'static str, Schema)> {
    vec![("bounds", bounds_schema(schema)), ("rows", schema.clone())]
}

/// A value received that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What was received: `the file table of main.t`.
    pub what: String,
    /// The column concerned, if one is.
    pub column: Option<String>,
    pub problem: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.column {
            Some(column) => write!(f, "column {column:?} of {}: {}", self.what, self.problem),
            None => write!(f, "{}: {}", self.what, self.problem),
        }
    }
}

impl From<Violation> for PyErr {
    fn from(violation: Violation) -> PyErr {
        ContractError::new_err(violation.to_string())
    }
}

pub(crate) fn violation(what: &str, column: Option<&str>, problem: String) -> Violation {
    Violation {
        what: what.to_string(),
        column: column.map(str::to_string),
        problem,
    }
}

/// `got` has exactly the columns of `expected`, each of its type (in any order).
pub fn check_schema(what: &str, got: &Schema, expected: &Schema) -> Result<(), Violation> {
    for field in expected.fields() {
        check_column(what, got, field)?;
    }
    for field in got.fields() {
        if expected.field_with_name(field.name()).is_err() {
            return Err(violation(
                what,
                Some(field.name()),
                "is not expected".into(),
            ));
        }
    }
    Ok(())
}

fn check_column(what: &str, got: &Schema, expected: &Field) -> Result<(), Violation> {
    let name = expected.name();
    let Ok(field) = got.field_with_name(name) else {
        return Err(violation(
            what,
            Some(name),
            format!("is missing (expected {})", expected.data_type()),
        ));
    };
    if !field.data_type().equals_datatype(expected.data_type()) {
        return Err(violation(
            what,
            Some(name),
            format!(
                "is {}, expected {}",
                field.data_type(),
                expected.data_type()
            ),
        ));
    }
    Ok(())
}

/// The bounds table of `table` (of `schema`), for `files` files: one row per file, each
/// column one of `bounds_schema(schema)`'s, of its type.
pub fn check_bounds(
    table: &str,
    batch: &RecordBatch,
    schema: &Schema,
    files: usize,
) -> Result<(), Violation> {
    let what = format!("the bounds table of {table}");
    if batch.num_rows() != files {
        return Err(violation(
            &what,
            None,
            format!("has {} rows for {files} files", batch.num_rows()),
        ));
    }
    let expected = bounds_schema(schema);
    for field in batch.schema().fields() {
        let Ok(wanted) = expected.field_with_name(field.name()) else {
            return Err(violation(
                &what,
                Some(field.name()),
                "is not a bound of a column of the table".into(),
            ));
        };
        check_column(&what, &Schema::new(vec![field.clone()]), wanted)?;
    }
    Ok(())
}

/// Rows of `table` (inlined rows, the defaults) in exactly the table's `schema`.
pub fn check_rows(what: &str, batch: &RecordBatch, schema: &Schema) -> Result<(), Violation> {
    check_schema(what, &batch.schema(), schema)?;
    for (got, wanted) in batch.schema().fields().iter().zip(schema.fields()) {
        if got != wanted {
            return Err(violation(
                what,
                Some(got.name()),
                "differs from the table's column (order, nullability or metadata)".into(),
            ));
        }
    }
    Ok(())
}

pub(crate) fn nonnegative(
    what: &str,
    column: &str,
    row: usize,
    value: i64,
) -> Result<u64, Violation> {
    u64::try_from(value).map_err(|_| {
        violation(
            what,
            Some(column),
            format!("is negative in row {row}: {value}"),
        )
    })
}

/// Declares the struct the Python side's frozen `ProviderSpec` is read into, attribute by
/// attribute (pyo3's `FromPyObject` reads each field by its name), and `FIELDS`, the
/// names read.
macro_rules! spec {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(FromPyObject)]
        pub struct $name { $($(#[$fmeta])* pub $field: $ty,)* }

        impl $name {
            /// The attributes read, in order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }
    };
}

spec! {
    /// Everything a `LakeProvider` is built from (`_rust_contract.ProviderSpec`): the plan
    /// export and what is not in it.
    pub struct ProviderSpec {
        /// The plan export (`read/_export.py`, read by `plan::read_plan`).
        pub plan: Vec<u8>,
        /// Each exported file's object-store path, in the export's order.
        pub paths: Vec<String>,
        /// The bounds table (`bounds_schema`), or none: no pruning by catalog bounds.
        pub bounds: Option<PyArrowType<RecordBatch>>,
        /// Rows the caller read with the exact reader, in the table's schema.
        pub rows: PyArrowType<Vec<RecordBatch>>,
        /// The store's options (`stores`).
        pub storage: HashMap<String, String>,
        /// The least number of partitions a scan is split into.
        pub min_partitions: usize,
        /// Files of the snapshot the caller already left out by the query's filters
        /// (reported only).
        pub pruned: usize,
        /// Kept files the caller read with the exact reader, whose rows are among `rows`
        /// (reported only).
        pub read_exactly: usize,
        /// Each exported file's row id start, in the export's order, when the scan gives
        /// every row's location (`locations`): then `rows` have the location columns too
        /// and the export holds no inlined rows.
        pub row_id_starts: Option<Vec<i64>>,
    }
}

#[cfg(test)]
mod tests;
