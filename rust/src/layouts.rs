//! Older file layouts, read by Parquet field id.
//!
//! DuckLake matches a file's columns to the table's by field id: a column renamed since a
//! file was written keeps its id, a column added since is missing from the file (its
//! initial default fills it), a widened column is narrower in the file. DataFusion's
//! default expression adapter matches by name; this one first renames each physical field
//! after the table column with its field id (fields of no table column get names no column
//! has), lets the default adapter cast and fill, then puts the file's own names back so the
//! expressions evaluate against the file's batches. The Python side hands over only files
//! whose every conversion is exact (`read/_layouts.py`); the rest take the exact path.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};
use parquet::arrow::is_virtual_column;

const FIELD_ID_KEY: &str = "PARQUET:field_id";

/// Per table column (by name): its field id and the value rows of files without it have.
#[derive(Debug, Clone)]
pub struct FieldIds {
    ids: HashMap<String, i64>,
    defaults: HashMap<String, ScalarValue>,
}

impl FieldIds {
    pub fn new(ids: HashMap<String, i64>, defaults: HashMap<String, ScalarValue>) -> Self {
        Self { ids, defaults }
    }
}

pub fn field_id_adapter(ids: FieldIds) -> Arc<dyn PhysicalExprAdapterFactory> {
    Arc::new(FieldIdAdapterFactory { ids: Arc::new(ids) })
}

#[derive(Debug)]
struct FieldIdAdapterFactory {
    ids: Arc<FieldIds>,
}

fn field_id(field: &Field) -> Option<i64> {
    field.metadata().get(FIELD_ID_KEY)?.parse().ok()
}

impl PhysicalExprAdapterFactory for FieldIdAdapterFactory {
    fn create(
        &self,
        logical_file_schema: SchemaRef,
        physical_file_schema: SchemaRef,
    ) -> Result<Arc<dyn PhysicalExprAdapter>> {
        let by_id: HashMap<i64, &String> = self.ids.ids.iter().map(|(n, i)| (*i, n)).collect();
        let renamed: Vec<Field> = physical_file_schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let name = match field_id(f).and_then(|id| by_id.get(&id)) {
                    Some(name) => (*name).clone(),
                    // a virtual column (a row's position, `drop_deleted`) is no column of
                    // the file: DataFusion appends it by name, which it keeps
                    None if is_virtual_column(f) => f.name().clone(),
                    None => format!("_ducklake_unmapped_{i}"),
                };
                f.as_ref().clone().with_name(name)
            })
            .collect();
        let renamed = Arc::new(Schema::new_with_metadata(
            renamed,
            physical_file_schema.metadata().clone(),
        ));
        let missing: HashMap<String, ScalarValue> = logical_file_schema
            .fields()
            .iter()
            .filter(|f| renamed.index_of(f.name()).is_err())
            .filter_map(|f| {
                let value = self.ids.defaults.get(f.name())?;
                if value.is_null() {
                    return None;
                }
                Some((f.name().clone(), value.clone()))
            })
            .collect();
        let inner = DefaultPhysicalExprAdapterFactory.create(logical_file_schema, renamed)?;
        Ok(Arc::new(FieldIdAdapter {
            inner,
            physical: physical_file_schema,
            missing,
        }))
    }
}

#[derive(Debug)]
struct FieldIdAdapter {
    inner: Arc<dyn PhysicalExprAdapter>,
    physical: SchemaRef,
    /// Table columns the file lacks that have a non-null initial default.
    missing: HashMap<String, ScalarValue>,
}

impl PhysicalExprAdapter for FieldIdAdapter {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>> {
        let expr = if self.missing.is_empty() {
            expr
        } else {
            expr.transform(|e| {
                if let Some(column) = e.downcast_ref::<Column>() {
                    if let Some(value) = self.missing.get(column.name()) {
                        let literal: Arc<dyn PhysicalExpr> = Arc::new(Literal::new(value.clone()));
                        return Ok(Transformed::yes(literal));
                    }
                }
                Ok(Transformed::no(e))
            })
            .data()?
        };
        let expr = self.inner.rewrite(expr)?;
        expr.transform(|e| {
            if let Some(column) = e.downcast_ref::<Column>() {
                if let Some(field) = self.physical.fields().get(column.index()) {
                    if field.name() != column.name() {
                        let renamed: Arc<dyn PhysicalExpr> =
                            Arc::new(Column::new(field.name(), column.index()));
                        return Ok(Transformed::yes(renamed));
                    }
                }
            }
            Ok(Transformed::no(e))
        })
        .data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;
    use datafusion::physical_expr::expressions::CastExpr;

    fn with_id(name: &str, data_type: DataType, id: i64) -> Field {
        Field::new(name, data_type, true)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    }

    /// The table: `a` (id 1), `b` (id 2, default 7), `c` (id 3, no default); a file of an
    /// older layout: `a` was `old_a` and narrower, `b` and `c` were added since, and the
    /// file has a column of no table column.
    fn adapter() -> Arc<dyn PhysicalExprAdapter> {
        let table = Arc::new(Schema::new(vec![
            with_id("a", DataType::Int64, 1),
            with_id("b", DataType::Int64, 2),
            with_id("c", DataType::Int64, 3),
        ]));
        let file = Arc::new(Schema::new(vec![
            with_id("dropped", DataType::Utf8, 9),
            with_id("old_a", DataType::Int32, 1),
        ]));
        let ids = FieldIds::new(
            HashMap::from([("a".into(), 1), ("b".into(), 2), ("c".into(), 3)]),
            HashMap::from([
                ("b".into(), ScalarValue::Int64(Some(7))),
                ("c".into(), ScalarValue::Int64(None)),
            ]),
        );
        field_id_adapter(ids).create(table, file).unwrap()
    }

    fn column(name: &str, index: usize) -> Arc<dyn PhysicalExpr> {
        Arc::new(Column::new(name, index))
    }

    #[test]
    fn a_renamed_and_widened_column_is_read_by_field_id() {
        let rewritten = adapter().rewrite(column("a", 0)).unwrap();
        let cast = rewritten
            .downcast_ref::<CastExpr>()
            .unwrap_or_else(|| panic!("not a cast: {rewritten}"));
        assert_eq!(cast.cast_type(), &DataType::Int64);
        let inner = cast.expr().downcast_ref::<Column>().unwrap();
        // the file's own name and position, so that it evaluates against the file's batches
        assert_eq!((inner.name(), inner.index()), ("old_a", 1));
    }

    #[test]
    fn a_column_added_since_is_its_initial_default() {
        let rewritten = adapter().rewrite(column("b", 1)).unwrap();
        let literal = rewritten
            .downcast_ref::<Literal>()
            .unwrap_or_else(|| panic!("not a literal: {rewritten}"));
        assert_eq!(literal.value(), &ScalarValue::Int64(Some(7)));
    }

    #[test]
    fn a_column_added_since_without_a_default_is_null() {
        let rewritten = adapter().rewrite(column("c", 2)).unwrap();
        let literal = rewritten
            .downcast_ref::<Literal>()
            .unwrap_or_else(|| panic!("not a literal: {rewritten}"));
        assert!(literal.value().is_null());
        assert_eq!(literal.value().data_type(), DataType::Int64);
    }

    #[test]
    fn a_file_of_the_current_layout_is_read_as_it_is() {
        let table = Arc::new(Schema::new(vec![with_id("a", DataType::Int64, 1)]));
        let ids = FieldIds::new(HashMap::from([("a".into(), 1)]), HashMap::new());
        let adapter = field_id_adapter(ids)
            .create(Arc::clone(&table), table)
            .unwrap();
        let rewritten = adapter.rewrite(column("a", 0)).unwrap();
        let same = rewritten.downcast_ref::<Column>().unwrap();
        assert_eq!((same.name(), same.index()), ("a", 0));
    }
}
