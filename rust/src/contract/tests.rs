//! The contract's checks (`contract`).

use super::*;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array};

fn table_schema() -> Schema {
    Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new(
            "l",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            true,
        ),
    ])
}

#[test]
fn bounds_are_of_every_column_but_nested_ones() {
    let names: Vec<String> = bounds_schema(&table_schema())
        .fields()
        .iter()
        .map(|f| format!("{}={}", f.name(), f.data_type()))
        .collect();
    assert_eq!(
        names,
        [
            "min:k=Int64",
            "max:k=Int64",
            "nulls:k=Int64",
            "min:s=Utf8",
            "max:s=Utf8",
            "nulls:s=Int64"
        ]
    );
}

#[test]
fn bounds_are_checked_by_name_type_and_row_count() {
    let schema = table_schema();
    let bounds = |name: &str, values: ArrayRef| {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                name,
                values.data_type().clone(),
                true,
            )])),
            vec![values],
        )
        .unwrap()
    };
    let good = bounds("min:k", Arc::new(Int64Array::from(vec![Some(1), None])));
    assert!(check_bounds("main.t", &good, &schema, 2).is_ok());
    let error = check_bounds("main.t", &good, &schema, 3).unwrap_err();
    assert!(
        error.to_string().contains("has 2 rows for 3 files"),
        "{error}"
    );
    let wrong = bounds("max:s", Arc::new(Int64Array::from(vec![1, 2])));
    let error = check_bounds("main.t", &wrong, &schema, 2).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("max:s"));
    assert!(
        error.to_string().contains("the bounds table of main.t"),
        "{error}"
    );
    let unknown = bounds("min:nope", Arc::new(Int64Array::from(vec![1, 2])));
    let error = check_bounds("main.t", &unknown, &schema, 2).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("min:nope"));
    let nested = bounds("min:l", Arc::new(Int64Array::from(vec![1, 2])));
    assert!(check_bounds("main.t", &nested, &schema, 2).is_err());
}

#[test]
fn rows_must_have_exactly_the_table_schema() {
    let schema = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
    let batch = |field: Field| {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![field])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap()
    };
    assert!(check_rows("x", &batch(Field::new("k", DataType::Int64, true)), &schema).is_ok());
    let error =
        check_rows("x", &batch(Field::new("j", DataType::Int64, true)), &schema).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("k"));
    let error = check_rows(
        "x",
        &batch(Field::new("k", DataType::Int64, false)),
        &schema,
    )
    .unwrap_err();
    assert!(error.to_string().contains("nullability"), "{error}");
}

#[test]
fn the_spec_names_every_field_once() {
    let mut names = ProviderSpec::FIELDS.to_vec();
    assert_eq!(names.first(), Some(&"plan"));
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 9);
}
