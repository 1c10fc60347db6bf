//! A table provider whose files come with the query's filters.
//!
//! `SchemaProvider.table()` runs before DataFusion knows the query's filters, so handing
//! over every live file there costs the whole file list on every new lake version (on a
//! 100,000-file table, 1.2 s of Python per query after a commit). This provider holds only
//! the table's name and schema; its `scan()` translates the pushed filters into simple
//! predicates, asks the Python planner (`resolver`) for the files those predicates cannot
//! exclude, and scans them with the `LakeProvider` the planner returns. For `count(*)`
//! (no column, no filter) the planner may answer with the count itself, from the catalog.
//!
//! Predicates (their shapes: `predicates`) are only a first cut: every filter is declared
//! `Inexact`, so DataFusion applies all of them again, and a filter that translates to no
//! predicate simply prunes nothing.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use pyo3::prelude::*;

use crate::guard::GuardExec;
use crate::parquet_scan::count_only;
use crate::predicates::predicates_of;
use crate::provider::LakeProvider;
use crate::report::ScanReport;

/// What the Python planner answered for one scan.
pub enum Resolved {
    /// The files (and inlined rows) the filters cannot exclude.
    Files(Arc<LakeProvider>),
    /// `count(*)` of the snapshot, from the catalog (only asked without columns or filters).
    Count(u64),
}

pub struct LazyProvider {
    pub table: String,
    schema: SchemaRef,
    /// `resolver(predicates, count_only)` -> `LakeProvider` or an int (see `Resolved`).
    resolver: ReleasedAtOnce,
    extract: fn(&Bound<'_, PyAny>) -> PyResult<Resolved>,
    last: Mutex<ScanReport>,
}

impl fmt::Debug for LazyProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyProvider")
            .field("table", &self.table)
            .finish()
    }
}

impl LazyProvider {
    pub fn new(
        table: String,
        schema: SchemaRef,
        resolver: Py<PyAny>,
        extract: fn(&Bound<'_, PyAny>) -> PyResult<Resolved>,
    ) -> Self {
        Self {
            table,
            schema,
            resolver: ReleasedAtOnce(Some(resolver)),
            extract,
            last: Mutex::new(ScanReport::default()),
        }
    }

    pub fn last_scan(&self) -> ScanReport {
        self.last.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn record(&self, report: ScanReport) {
        if let Ok(mut last) = self.last.lock() {
            *last = report;
        }
    }

    fn resolve(&self, filters: &[Expr], count: bool) -> Result<Resolved> {
        Python::attach(|py| {
            let predicates = predicates_of(py, filters)?;
            let answer = self.resolver.bind(py)?.call1((predicates, count))?;
            (self.extract)(&answer)
        })
        .map_err(|error| python_error(&format!("planning the scan of {}", self.table), error))
    }
}

/// A Python object released as soon as its holder is dropped.
///
/// A `Py` dropped on a thread not attached to the interpreter (DataFusion drops providers
/// on its runtime's threads) is only queued, and pyo3 releases the queue at this
/// extension's next call into Python: the resolver, and with it the table and its
/// catalog's connections, stayed alive until some later query. So the drop attaches
/// (without blocking when the interpreter is shutting down: then the object is queued as
/// before).
#[derive(Debug)]
pub struct ReleasedAtOnce(Option<Py<PyAny>>);

impl ReleasedAtOnce {
    pub fn new(object: Py<PyAny>) -> Self {
        Self(Some(object))
    }

    pub fn bind<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        self.0
            .as_ref()
            .map(|object| object.bind(py))
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("released"))
    }
}

impl Drop for ReleasedAtOnce {
    fn drop(&mut self) {
        if let Some(object) = self.0.take() {
            let _ = Python::try_attach(move |_py| drop(object));
        }
    }
}

/// A Python exception as a query error that keeps our error class and message
/// (`DataFileMissingError: data file ... of table ...`), as the scan's own checks do;
/// `doing` says where it happened (`planning the scan of main.t`, `writing to main.t`).
pub fn python_error(doing: &str, error: PyErr) -> DataFusionError {
    let text = Python::attach(|py| {
        let class = error
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Error".to_string());
        let message = error
            .value(py)
            .str()
            .map(|s| s.to_string())
            .unwrap_or_default();
        crate::errors::text(&class, &message)
    });
    DataFusionError::External(format!("{doing}: {text}").into())
}

#[async_trait]
impl TableProvider for LazyProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let count = projection.is_some_and(|p| p.is_empty()) && filters.is_empty();
        crate::guard::planning(&self.table, || match self.resolve(filters, count)? {
            Resolved::Count(mut rows) => {
                if let Some(limit) = limit {
                    rows = rows.min(limit as u64);
                }
                let report = ScanReport {
                    from_catalog: true,
                    ..Default::default()
                };
                let summary = report.summary();
                self.record(report);
                Ok(Arc::new(GuardExec::new(summary, count_only(rows)?)) as _)
            }
            Resolved::Files(provider) => {
                let plan = provider.scan_plan(state, projection, filters, limit)?;
                self.record(provider.last_scan());
                Ok(plan)
            }
        })
    }
}
