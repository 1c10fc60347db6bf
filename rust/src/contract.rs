//! What the Python side hands over to build a `LakeProvider`, and its check on arrival.
//!
//! The Python side defines the same shapes once (`ducklake_datafusion/provider/
//! _rust_contract.py`: `FILE_TABLE`, `bounds_schema`, `ProviderSpec`) and builds what it
//! sends from them; `tests/provider/test_rust_contract.py` compares them with
//! `expected_schemas` and `ProviderSpec::FIELDS` (exported as `_rust.boundary_schemas` and
//! `_rust.PROVIDER_SPEC_FIELDS`). Every batch received is checked here, by name and type,
//! before a column is read: a mismatch is a `ContractError` naming the table and the column.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use arrow_pyarrow::PyArrowType;
use datafusion_datasource_parquet::ParquetRowSelection;
use object_store::path::Path;
use pyo3::prelude::*;

use crate::deletes::row_selection;
use crate::errors::ContractError;
use crate::provider::LakeFile;

/// Prefixes of the bounds table's columns: `min:<column>`, `max:<column>` (of the column's
/// type) and `nulls:<column>` (int64), each null where unknown.
pub const MIN_PREFIX: &str = "min:";
pub const MAX_PREFIX: &str = "max:";
pub const NULLS_PREFIX: &str = "nulls:";

/// The file table: one row per live data file. `path`: the object-store path; `url`: the
/// catalog's URL, for messages (null: the path); `size`, `record_count`: never null;
/// `footer_size`: null when unknown; `deleted`: the sorted unique deleted positions, or
/// null for none.
pub fn file_table_schema() -> Schema {
    Schema::new(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("url", DataType::Utf8, true),
        Field::new("size", DataType::Int64, true),
        Field::new("footer_size", DataType::Int64, true),
        Field::new("record_count", DataType::Int64, true),
        Field::new(
            "deleted",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            true,
        ),
    ])
}

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

/// The schemas a provider of a table of `schema` expects, by name.
pub fn expected_schemas(schema: &Schema) -> Vec<(&'static str, Schema)> {
    vec![
        ("files", file_table_schema()),
        ("bounds", bounds_schema(schema)),
        ("inlined", schema.clone()),
        ("defaults", schema.clone()),
    ]
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

fn violation(what: &str, column: Option<&str>, problem: String) -> Violation {
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

fn nonnegative(what: &str, column: &str, row: usize, value: i64) -> Result<u64, Violation> {
    u64::try_from(value).map_err(|_| {
        violation(
            what,
            Some(column),
            format!("is negative in row {row}: {value}"),
        )
    })
}

/// The files of the file table of `table`, checked against `file_table_schema`.
pub fn lake_files(table: &str, batch: &RecordBatch) -> Result<Vec<LakeFile>, Violation> {
    let what = format!("the file table of {table}");
    check_schema(&what, &batch.schema(), &file_table_schema())?;
    let column = |name: &str| batch.column_by_name(name).expect("checked");
    let paths = column("path").as_string::<i32>();
    let urls = column("url").as_string::<i32>();
    let sizes = column("size").as_primitive::<Int64Type>();
    let footers = column("footer_size").as_primitive::<Int64Type>();
    let counts = column("record_count").as_primitive::<Int64Type>();
    let deleted = column("deleted").as_list::<i32>();
    let mut files = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        for (name, values) in [
            ("path", paths as &dyn Array),
            ("size", sizes),
            ("record_count", counts),
        ] {
            if values.is_null(row) {
                return Err(violation(
                    &what,
                    Some(name),
                    format!("is null in row {row}"),
                ));
            }
        }
        let path = Path::parse(paths.value(row))
            .map_err(|e| violation(&what, Some("path"), format!("bad file path: {e}")))?;
        let record_count = nonnegative(&what, "record_count", row, counts.value(row))?;
        let url = if urls.is_null(row) {
            path.to_string()
        } else {
            urls.value(row).to_string()
        };
        let mut file = LakeFile {
            path,
            url,
            size: nonnegative(&what, "size", row, sizes.value(row))?,
            footer_size: if footers.is_null(row) {
                None
            } else {
                Some(nonnegative(&what, "footer_size", row, footers.value(row))?)
            },
            record_count,
            deleted: 0,
            selection: None,
            row_groups: Default::default(),
        };
        if !deleted.is_null(row) {
            let positions = deleted.value(row);
            let positions = positions.as_primitive::<Int64Type>();
            if positions.null_count() > 0 {
                return Err(violation(
                    &what,
                    Some("deleted"),
                    format!("holds a null position in row {row}"),
                ));
            }
            if !positions.is_empty() {
                let selection = row_selection(positions.values(), record_count).map_err(|e| {
                    violation(
                        &what,
                        Some("deleted"),
                        format!("deleted rows of {}: {e}", file.path),
                    )
                })?;
                file.deleted = positions.len() as u64;
                file.selection = Some(Arc::new(ParquetRowSelection::new(selection)));
            }
        }
        files.push(file);
    }
    Ok(files)
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
    /// Everything a `LakeProvider` is built from (`_rust_contract.ProviderSpec`).
    pub struct ProviderSpec {
        /// The table's name, for messages.
        pub table: String,
        /// The table's Arrow schema (with `PARQUET:field_id` metadata).
        pub schema: PyArrowType<Schema>,
        /// The file table (`file_table_schema`).
        pub files: PyArrowType<RecordBatch>,
        /// The bounds table (`bounds_schema`), or none: no pruning by catalog bounds.
        pub bounds: Option<PyArrowType<RecordBatch>>,
        /// Inlined rows, in the table's schema.
        pub inlined: PyArrowType<Vec<RecordBatch>>,
        /// The store's options (`stores`).
        pub storage: HashMap<String, String>,
        /// The least number of partitions a scan is split into.
        pub min_partitions: usize,
        /// Column name to Parquet field id: files of older layouts are mapped by field id.
        pub field_ids: Option<HashMap<String, i64>>,
        /// One row of the table's schema: each column's initial default.
        pub defaults: Option<PyArrowType<RecordBatch>>,
        /// When some file holds per-row snapshot ids (merged files): rows of later
        /// snapshots are dropped.
        pub snapshot: Option<i64>,
        /// Files of the snapshot the caller already left out by the query's filters
        /// (reported only).
        pub pruned: usize,
        /// Kept files the caller read with the exact reader, whose rows are among
        /// `inlined` (reported only).
        pub read_exactly: usize,
    }
}

#[cfg(test)]
mod tests;
