//! String and binary columns as view types, as DataFusion's own Parquet table has them.
//!
//! DataFusion's `register_parquet` gives a table `Utf8View` and `BinaryView` columns where
//! the files hold strings and bytes (`datafusion.execution.parquet.schema_force_view_types`,
//! on by default): its Parquet reader then decodes them straight into views, which its
//! string functions, comparisons and hash joins handle faster than `Utf8` (on TPC-H's
//! string-heavy queries most of the gap to DataFusion's own Parquet table was this,
//! issue 48). The provider exposes the same types: the Python side still hands over the
//! table's own (`Utf8`, `Binary`, checked against the contract as they are), and this
//! module turns the schema, the inlined rows, the defaults and the bounds into views on
//! arrival. Only top-level columns change, as in DataFusion's Parquet table (a list of
//! strings stays one); the conversion is lossless, every value stays the same.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchOptions;

/// The view type a top-level column of `data_type` is read as (`None`: it stays).
fn view_of(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 => Some(DataType::Utf8View),
        DataType::Binary | DataType::LargeBinary => Some(DataType::BinaryView),
        _ => None,
    }
}

/// `schema` with its string and binary columns as views (metadata and nullability kept).
pub fn view_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| match view_of(field.data_type()) {
            Some(view) => field.as_ref().clone().with_data_type(view),
            None => field.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its string and binary columns as views, whatever its column names (the
/// bounds table's `min:<column>` too).
pub fn to_views(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let schema = view_schema(batch.schema_ref());
    in_schema(batch, schema)
}

/// `batch`'s columns cast to the types of `schema` (the same names and order; only string
/// and binary columns differ), with `schema`'s fields.
pub fn in_schema(batch: &RecordBatch, schema: SchemaRef) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                Ok(Arc::clone(column))
            } else {
                cast(column, field.data_type())
            }
        })
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema, columns, &options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray, BinaryArray, Int64Array, ListArray, StringArray};
    use arrow::datatypes::Int32Type;
    use std::collections::HashMap;

    fn table() -> Schema {
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)));
        Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true).with_metadata(HashMap::from([(
                "PARQUET:field_id".to_string(),
                "2".to_string(),
            )])),
            Field::new("ls", DataType::LargeUtf8, false),
            Field::new("b", DataType::Binary, true),
            Field::new("l", list, true),
        ])
    }

    #[test]
    fn top_level_strings_and_bytes_become_views_and_nothing_else_changes() {
        let views = view_schema(&table());
        let types: Vec<&DataType> = views.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(types[0], &DataType::Int64);
        assert_eq!(types[1], &DataType::Utf8View);
        assert_eq!(types[2], &DataType::Utf8View);
        assert_eq!(types[3], &DataType::BinaryView);
        // as DataFusion's Parquet table: a list of strings stays one
        assert_eq!(types[4], table().field(4).data_type());
        // field ids (the layout adapter maps by them) and nullability are kept
        assert_eq!(views.field(1).metadata(), table().field(1).metadata());
        assert!(!views.field(2).is_nullable());
    }

    #[test]
    fn batches_keep_every_value() {
        let batch = RecordBatch::try_from_iter(vec![
            ("k", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("a long string, not inlined"),
                    None,
                ])),
            ),
            (
                "b",
                Arc::new(BinaryArray::from(vec![Some(&b"\xff\x00"[..]), Some(b"")])),
            ),
            (
                "l",
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                    Some(vec![Some(1)]),
                    None,
                ])),
            ),
        ])
        .unwrap();
        let views = to_views(&batch).unwrap();
        let s = views.column(1).as_string_view();
        assert_eq!(s.value(0), "a long string, not inlined");
        assert!(s.is_null(1));
        let b = views.column(2).as_binary_view();
        assert_eq!((b.value(0), b.value(1)), (&b"\xff\x00"[..], &b""[..]));
        assert_eq!(views.column(3).data_type(), batch.column(3).data_type());
        assert_eq!(views.num_rows(), 2);
    }
}
