//! The plan export, read as the Spark jar reads it: the one form a plan leaves Python in.
//!
//! `ducklake_datafusion/read/_export.py` writes a planned scan as one versioned Arrow IPC
//! stream (`PLAN_SCHEMA`: one row per data file, its deleted positions and its layout; the
//! table's schema, defaults, field ids and inlined rows in the schema's metadata). The JVM's
//! `PlannedFiles` reads those bytes; so does this module, so that both engines outside
//! Python read one documented form. What is not in the plan (each file's object-store path,
//! the catalog bounds, rows read by the exact reader) comes beside it in the
//! `ProviderSpec`. A version other than `PLAN_VERSION` or a column off `plan_schema` is a
//! `ContractError` naming the table and the column.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Fields, Int64Type, Schema, SchemaRef};
use arrow::ipc::reader::StreamReader;
use base64::Engine;
use datafusion_datasource_parquet::ParquetRowSelection;
use object_store::path::Path;

use crate::contract::{check_schema, nonnegative, violation, Violation};
use crate::deletes::{file_deletes, FileDeletes};
use crate::file::LakeFile;

/// The export's form version (`read/_export.py`: `PLAN_VERSION`; the jar's `PlannedFiles`).
pub const PLAN_VERSION: &str = "1";
const PREFIX: &str = "ducklake_datafusion.";

fn list_of(item: Field) -> DataType {
    DataType::List(Arc::new(item))
}

/// `read/_export.py`'s `PLAN_SCHEMA`: one row per data file.
pub fn plan_schema() -> Schema {
    let source = DataType::Struct(Fields::from(vec![
        Field::new("column", DataType::Utf8, false),
        Field::new("physical", DataType::Utf8, true),
        Field::new("cast", DataType::Boolean, false),
    ]));
    let layout = DataType::Struct(Fields::from(vec![
        Field::new("read_schema", DataType::Binary, false),
        Field::new("sources", list_of(Field::new("item", source, false)), false),
        Field::new("snapshot_column", DataType::Utf8, true),
        Field::new("current", DataType::Boolean, false),
    ]));
    Schema::new(vec![
        Field::new("data_file_id", DataType::Int64, false),
        Field::new("url", DataType::Utf8, false),
        Field::new("size", DataType::Int64, true),
        Field::new("footer_size", DataType::Int64, true),
        Field::new("record_count", DataType::Int64, false),
        Field::new(
            "deleted",
            list_of(Field::new_list_field(DataType::Int64, true)),
            true,
        ),
        Field::new("encrypted", DataType::Boolean, false),
        Field::new("layout", layout, true),
    ])
}

/// A plan export as the provider uses it.
pub struct Plan {
    /// The table and snapshot, for messages: `main.t (snapshot 5)`.
    pub table: String,
    pub schema: SchemaRef,
    pub files: Vec<LakeFile>,
    /// Column name to field id, when some file's columns are not the table's (older
    /// layouts are then mapped by field id); `None`: every file is current.
    pub field_ids: Option<HashMap<String, i64>>,
    /// One row of the table's schema: each column's initial default.
    pub defaults: RecordBatch,
    /// The snapshot, when some file holds per-row snapshot ids (merged files).
    pub snapshot: Option<i64>,
    pub inlined: Vec<RecordBatch>,
}

/// The plan of `export`, whose files are at `paths` (object-store paths, in row order).
pub fn read_plan(export: &[u8], paths: &[String]) -> Result<Plan, Violation> {
    let what = "the plan export";
    let reader = StreamReader::try_new(Cursor::new(export), None)
        .map_err(|e| violation(what, None, format!("cannot be read: {e}")))?;
    let metadata = reader.schema().metadata().clone();
    let text = |key: &str| -> Result<&str, Violation> {
        metadata
            .get(&format!("{PREFIX}{key}"))
            .map(String::as_str)
            .ok_or_else(|| violation(what, None, format!("has no {key}")))
    };
    let version = metadata.get(&format!("{PREFIX}plan_version"));
    if version.map(String::as_str) != Some(PLAN_VERSION) {
        return Err(violation(
            what,
            None,
            format!(
                "is of version {version:?}, but this extension reads version {PLAN_VERSION}: \
                 the Python package and its extension are of different releases"
            ),
        ));
    }
    let snapshot: i64 = text("snapshot")?
        .parse()
        .map_err(|e| violation(what, None, format!("snapshot: {e}")))?;
    let table = format!("{} (snapshot {snapshot})", text("table")?);
    let what = format!("the plan of {table}");
    check_schema(&what, &reader.schema(), &plan_schema())?;
    let mut batches = Vec::new();
    for batch in reader {
        batches.push(batch.map_err(|e| violation(&what, None, format!("cannot be read: {e}")))?);
    }
    let schema = stream(&what, "table_schema", text("table_schema")?)?.0;
    let defaults = stream(&what, "defaults", text("defaults")?)?.1;
    let [defaults] = <[RecordBatch; 1]>::try_from(defaults)
        .map_err(|_| violation(&what, Some("defaults"), "must be one row".into()))?;
    let inlined = stream(&what, "inlined", text("inlined")?)?.1;
    let mut files = Vec::new();
    let (mut current, mut merged) = (true, false);
    for batch in &batches {
        let layouts = batch.column_by_name("layout").expect("checked").as_struct();
        for row in 0..batch.num_rows() {
            if layouts.is_null(row) {
                let problem = format!("file {} has no layout the scan maps", files.len());
                return Err(violation(&what, Some("layout"), problem));
            }
            current &= layouts
                .column_by_name("current")
                .expect("checked")
                .as_boolean()
                .value(row);
            merged |= layouts
                .column_by_name("snapshot_column")
                .expect("checked")
                .is_valid(row);
            let path = paths.get(files.len()).ok_or_else(|| {
                violation(
                    &what,
                    None,
                    format!("has more files than the {} paths", paths.len()),
                )
            })?;
            files.push(lake_file(&what, batch, row, path)?);
        }
    }
    if files.len() != paths.len() {
        let problem = format!("has {} files for {} paths", files.len(), paths.len());
        return Err(violation(&what, None, problem));
    }
    let field_ids = if current {
        None
    } else {
        let ids = serde_json::from_str(text("field_ids")?)
            .map_err(|e| violation(&what, Some("field_ids"), e.to_string()))?;
        Some(ids)
    };
    Ok(Plan {
        table,
        schema,
        files,
        field_ids,
        defaults,
        snapshot: (merged && !current).then_some(snapshot),
        inlined,
    })
}

/// A base64 Arrow IPC stream of the schema's metadata: its schema and batches.
fn stream(what: &str, key: &str, text: &str) -> Result<(SchemaRef, Vec<RecordBatch>), Violation> {
    let bad = |e: String| violation(what, Some(key), format!("cannot be read: {e}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| bad(e.to_string()))?;
    let reader = StreamReader::try_new(Cursor::new(bytes), None).map_err(|e| bad(e.to_string()))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    Ok((schema, batches))
}

/// Row `row` of a checked plan batch, at `path`.
fn lake_file(
    what: &str,
    batch: &RecordBatch,
    row: usize,
    path: &str,
) -> Result<LakeFile, Violation> {
    let column = |name: &str| batch.column_by_name(name).expect("checked");
    let sizes = column("size").as_primitive::<Int64Type>();
    let footers = column("footer_size").as_primitive::<Int64Type>();
    let counts = column("record_count").as_primitive::<Int64Type>();
    let deleted = column("deleted").as_list::<i32>();
    let ids = column("data_file_id").as_primitive::<Int64Type>();
    for (name, nulls) in [
        ("size", sizes.is_null(row)),
        ("data_file_id", ids.is_null(row)),
    ] {
        if nulls {
            return Err(violation(what, Some(name), format!("is null in row {row}")));
        }
    }
    let path = Path::parse(path)
        .map_err(|e| violation(what, Some("path"), format!("bad file path: {e}")))?;
    let record_count = nonnegative(what, "record_count", row, counts.value(row))?;
    let mut file = LakeFile {
        data_file_id: ids.value(row),
        path,
        url: column("url").as_string::<i32>().value(row).to_string(),
        size: nonnegative(what, "size", row, sizes.value(row))?,
        footer_size: if footers.is_null(row) {
            None
        } else {
            Some(nonnegative(what, "footer_size", row, footers.value(row))?)
        },
        record_count,
        deleted: 0,
        selection: None,
        live: None,
        row_groups: Default::default(),
    };
    if !deleted.is_null(row) {
        let positions = deleted.value(row);
        let positions = positions.as_primitive::<Int64Type>();
        if positions.null_count() > 0 {
            let problem = format!("holds a null position in row {row}");
            return Err(violation(what, Some("deleted"), problem));
        }
        if !positions.is_empty() {
            let deletes = file_deletes(positions.values(), record_count).map_err(|e| {
                violation(
                    what,
                    Some("deleted"),
                    format!("deleted rows of {}: {e}", file.path),
                )
            })?;
            file.deleted = positions.len() as u64;
            match deletes {
                FileDeletes::Dropped(live) => file.live = Some(Arc::new(live)),
                FileDeletes::Skipped(selection) => {
                    file.selection = Some(Arc::new(ParquetRowSelection::new(selection)))
                }
            }
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
