//! The contract's checks (`contract`).

use super::*;
use arrow::array::{ArrayRef, Int64Array, Int8Array, ListArray, StringArray};

fn files_batch(deleted: Option<Vec<i64>>) -> RecordBatch {
    let deleted: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
        deleted.map(|d| d.into_iter().map(Some).collect::<Vec<_>>()),
    ]));
    RecordBatch::try_new(
        Arc::new(file_table_schema()),
        vec![
            Arc::new(StringArray::from(vec!["lake/t/a.parquet"])),
            Arc::new(StringArray::from(vec![None::<&str>])),
            Arc::new(Int64Array::from(vec![100])),
            Arc::new(Int64Array::from(vec![None])),
            Arc::new(Int64Array::from(vec![10])),
            deleted,
        ],
    )
    .unwrap()
}

fn without(batch: &RecordBatch, name: &str) -> RecordBatch {
    let index = batch.schema().index_of(name).unwrap();
    let mut batch = batch.clone();
    batch.remove_column(index);
    batch
}

fn with_column(batch: &RecordBatch, name: &str, values: ArrayRef) -> RecordBatch {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns = batch.columns().to_vec();
    let at = fields.iter().position(|f| f.name() == name);
    let field = Field::new(name, values.data_type().clone(), true);
    match at {
        Some(i) => {
            fields[i] = field;
            columns[i] = values;
        }
        None => {
            fields.push(field);
            columns.push(values);
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

#[test]
fn a_file_table_of_the_contract_is_read() {
    let files = lake_files("main.t", &files_batch(Some(vec![1, 2]))).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path.as_ref(), "lake/t/a.parquet");
    assert_eq!(files[0].url, "lake/t/a.parquet"); // no URL: the path
    assert_eq!(
        (files[0].size, files[0].record_count, files[0].deleted),
        (100, 10, 2)
    );
    assert_eq!(files[0].footer_size, None);
    assert!(files[0].selection.is_some());
    let files = lake_files("main.t", &files_batch(None)).unwrap();
    assert!(files[0].selection.is_none());
}

#[test]
fn a_missing_column_is_named_with_the_table() {
    let error = lake_files("main.t", &without(&files_batch(None), "url")).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("url"));
    assert_eq!(
        error.to_string(),
        "column \"url\" of the file table of main.t: is missing (expected Utf8)"
    );
}

#[test]
fn a_column_of_another_type_is_named() {
    let batch = with_column(
        &files_batch(None),
        "size",
        Arc::new(Int8Array::from(vec![1])),
    );
    let error = lake_files("main.t", &batch).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("size"));
    assert!(
        error.to_string().contains("is Int8, expected Int64"),
        "{error}"
    );
}

#[test]
fn an_unexpected_column_is_named() {
    let batch = with_column(
        &files_batch(None),
        "extra",
        Arc::new(Int8Array::from(vec![1])),
    );
    let error = lake_files("main.t", &batch).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("extra"));
}

#[test]
fn null_and_negative_values_and_bad_deletes_are_refused() {
    let batch = with_column(
        &files_batch(None),
        "record_count",
        Arc::new(Int64Array::from(vec![None])),
    );
    let error = lake_files("main.t", &batch).unwrap_err();
    assert_eq!(error.column.as_deref(), Some("record_count"));
    let batch = with_column(
        &files_batch(None),
        "size",
        Arc::new(Int64Array::from(vec![-1])),
    );
    assert!(lake_files("main.t", &batch)
        .unwrap_err()
        .to_string()
        .contains("negative"));
    let error = lake_files("main.t", &files_batch(Some(vec![10]))).unwrap_err();
    assert!(
        error.to_string().contains("outside the file's 10 rows"),
        "{error}"
    );
}

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
    assert_eq!(names.first(), Some(&"table"));
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 12);
}
