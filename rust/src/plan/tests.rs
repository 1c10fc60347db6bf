//! The plan export's reading (`plan`), on exports written here as `read/_export.py` writes
//! them.

use super::*;
use arrow::array::{
    new_empty_array, ArrayRef, BinaryArray, BooleanArray, Int64Array, Int8Array, ListArray,
    StringArray, StructArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::ipc::writer::StreamWriter;

fn table_schema() -> Schema {
    Schema::new(vec![Field::new("k", DataType::Int64, true)])
}

fn stream_text(schema: &Schema, batches: &[RecordBatch]) -> String {
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::try_new(&mut bytes, schema).unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One file's row: `deleted` positions, `current` layout, a snapshot column or not.
fn files(deleted: Option<Vec<i64>>, current: bool, merged: bool) -> Vec<(&'static str, ArrayRef)> {
    let DataType::Struct(layout_fields) = plan_schema()
        .field_with_name("layout")
        .unwrap()
        .data_type()
        .clone()
    else {
        unreachable!()
    };
    let DataType::List(source) = layout_fields[1].data_type().clone() else {
        unreachable!()
    };
    let sources = ListArray::try_new(
        source.clone(),
        OffsetBuffer::from_lengths([0]),
        new_empty_array(source.data_type()),
        None,
    )
    .unwrap();
    let layout = StructArray::try_new(
        layout_fields,
        vec![
            Arc::new(BinaryArray::from(vec![b"" as &[u8]])),
            Arc::new(sources),
            Arc::new(StringArray::from(vec![merged.then_some("_snapshot")])),
            Arc::new(BooleanArray::from(vec![current])),
        ],
        None,
    )
    .unwrap();
    vec![
        ("data_file_id", Arc::new(Int64Array::from(vec![1]))),
        (
            "url",
            Arc::new(StringArray::from(vec!["file:///lake/t/a.parquet"])),
        ),
        ("size", Arc::new(Int64Array::from(vec![100]))),
        ("footer_size", Arc::new(Int64Array::from(vec![None]))),
        ("record_count", Arc::new(Int64Array::from(vec![10]))),
        (
            "deleted",
            Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
                deleted.map(|d| d.into_iter().map(Some).collect::<Vec<_>>()),
            ])),
        ),
        ("encrypted", Arc::new(BooleanArray::from(vec![false]))),
        ("layout", Arc::new(layout)),
    ]
}

/// An export of `columns` (the file rows), of form `version`.
fn export(columns: Vec<(&'static str, ArrayRef)>, version: &str) -> Vec<u8> {
    let table = table_schema();
    let defaults = RecordBatch::try_new(
        Arc::new(table.clone()),
        vec![Arc::new(Int64Array::from(vec![None]))],
    )
    .unwrap();
    let inlined = RecordBatch::try_new(
        Arc::new(table.clone()),
        vec![Arc::new(Int64Array::from(vec![7, 8]))],
    )
    .unwrap();
    let metadata: HashMap<String, String> = [
        ("plan_version", version.to_string()),
        ("table", "main.t".into()),
        ("catalog", "test".into()),
        ("snapshot", "5".into()),
        ("field_ids", r#"{"k": 1}"#.into()),
        ("table_schema", stream_text(&table, &[])),
        ("defaults", stream_text(&table, &[defaults])),
        ("inlined", stream_text(&table, &[inlined])),
    ]
    .into_iter()
    .map(|(k, v)| (format!("{PREFIX}{k}"), v))
    .collect();
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, values)| {
            let planned = plan_schema();
            match planned.field_with_name(name) {
                Ok(f) if f.data_type() == values.data_type() => f.clone(),
                _ => Field::new(*name, values.data_type().clone(), true),
            }
        })
        .collect();
    let schema = Schema::new(fields).with_metadata(metadata);
    let batch = RecordBatch::try_new(
        Arc::new(schema.clone()),
        columns.into_iter().map(|(_, v)| v).collect(),
    )
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::try_new(&mut bytes, &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    bytes
}

/// The violation reading `export` at `paths` is refused with.
fn refused(export: &[u8], paths: &[String]) -> Violation {
    match read_plan(export, paths) {
        Err(violation) => violation,
        Ok(_) => panic!("an export off the form was read"),
    }
}

fn paths() -> Vec<String> {
    vec!["lake/t/a.parquet".to_string()]
}

#[test]
fn an_export_of_the_form_is_read() {
    let plan = read_plan(&export(files(Some(vec![1, 2]), true, false), "1"), &paths()).unwrap();
    assert_eq!(plan.table, "main.t (snapshot 5)");
    assert_eq!(plan.schema.as_ref(), &table_schema());
    let file = &plan.files[0];
    assert_eq!(file.path.as_ref(), "lake/t/a.parquet");
    assert_eq!(file.url, "file:///lake/t/a.parquet");
    assert_eq!((file.size, file.record_count, file.deleted), (100, 10, 2));
    assert_eq!(file.footer_size, None);
    // 2 of 10 rows deleted: scattered, so dropped after decoding instead of a selection
    assert!(file.selection.is_none() && file.live.is_some());
    assert!(plan.field_ids.is_none() && plan.snapshot.is_none()); // every file current
    assert_eq!(
        plan.inlined
            .iter()
            .map(RecordBatch::num_rows)
            .sum::<usize>(),
        2
    );
    assert_eq!(plan.defaults.num_rows(), 1);
    let plan = read_plan(&export(files(None, false, true), "1"), &paths()).unwrap();
    assert!(plan.files[0].selection.is_none());
    assert_eq!(plan.field_ids, Some(HashMap::from([("k".to_string(), 1)])));
    assert_eq!(plan.snapshot, Some(5)); // a merged file: later rows are dropped
}

#[test]
fn another_version_is_refused() {
    let error = refused(&export(files(None, true, false), "2"), &paths());
    assert!(error.to_string().contains("reads version 1"), "{error}");
}

fn replaced(name: &'static str, values: ArrayRef) -> Vec<(&'static str, ArrayRef)> {
    let mut columns = files(None, true, false);
    match columns.iter().position(|(n, _)| *n == name) {
        Some(i) => columns[i].1 = values,
        None => columns.push((name, values)),
    }
    columns
}

#[test]
fn a_missing_or_retyped_or_unexpected_column_is_named_with_the_table() {
    let mut columns = files(None, true, false);
    columns.retain(|(name, _)| *name != "url");
    let error = refused(&export(columns, "1"), &paths());
    assert_eq!(error.column.as_deref(), Some("url"));
    assert_eq!(
        error.to_string(),
        "column \"url\" of the plan of main.t (snapshot 5): is missing (expected Utf8)"
    );
    let retyped = replaced("size", Arc::new(Int8Array::from(vec![1])));
    let error = refused(&export(retyped, "1"), &paths());
    assert!(
        error.to_string().contains("is Int8, expected Int64"),
        "{error}"
    );
    let extra = replaced("extra", Arc::new(Int8Array::from(vec![1])));
    let error = refused(&export(extra, "1"), &paths());
    assert_eq!(error.column.as_deref(), Some("extra"));
}

#[test]
fn nulls_negative_values_bad_deletes_and_missing_paths_are_refused() {
    let null_size = replaced("size", Arc::new(Int64Array::from(vec![None])));
    let error = refused(&export(null_size, "1"), &paths());
    assert_eq!(error.column.as_deref(), Some("size"));
    let negative = replaced("size", Arc::new(Int64Array::from(vec![-1])));
    let error = refused(&export(negative, "1"), &paths());
    assert!(error.to_string().contains("negative"), "{error}");
    let error = refused(&export(files(Some(vec![10]), true, false), "1"), &paths());
    assert!(
        error.to_string().contains("outside the file's 10 rows"),
        "{error}"
    );
    let error = refused(&export(files(None, true, false), "1"), &[]);
    assert!(
        error.to_string().contains("more files than the 0 paths"),
        "{error}"
    );
}
