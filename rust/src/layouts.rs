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
