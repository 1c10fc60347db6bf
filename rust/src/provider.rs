//! The table provider: one DuckLake table at one snapshot, as DataFusion scans it.
//!
//! It holds what the Python planner knows of the snapshot (every live data file, `file`;
//! safe per-file bounds, `pruning`; the inlined rows) and decides, in `scan()`, what a
//! query reads: the count from the catalog alone, or the files the query's filters cannot
//! exclude (read by `parquet_scan`) plus the inlined rows from memory. No I/O happens in
//! `scan()`.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{DFSchema, Result, Statistics};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::file::LakeFile;
use crate::guard::GuardExec;
use crate::locations::{located_schema, FileLocation};
use crate::parquet_scan::{count_only, Kept, ParquetScan};
use crate::pruning::FileBounds;
use crate::report::ScanReport;
use crate::statistics;

pub struct LakeProvider {
    pub table: String,
    /// The table's columns (what the files and the filters' pruning know).
    schema: SchemaRef,
    /// What the provider scans: `schema`, then the location columns when `locations`.
    output_schema: SchemaRef,
    files: Vec<LakeFile>,
    /// Each file's location, when every row's location is asked for (`locations`).
    locations: Option<Vec<FileLocation>>,
    bounds: FileBounds,
    inlined: Vec<RecordBatch>,
    /// How the files are read.
    parquet: ParquetScan,
    /// Partitions a scan is split into at least (both cores busy whatever the session's
    /// `target_partitions`).
    min_partitions: usize,
    /// Files of the snapshot the Python planner already pruned (`lazy`): only reported.
    pub pruned: usize,
    /// Kept files the Python side read with the exact reader (rows among `inlined`):
    /// only reported.
    pub read_exactly: usize,
    /// Each file's statistics for the optimizer (`statistics`), made when first scanned.
    file_stats: Vec<OnceLock<Arc<Statistics>>>,
    last: Mutex<ScanReport>,
}

impl fmt::Debug for LakeProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LakeProvider")
            .field("table", &self.table)
            .field("files", &self.files.len())
            .finish()
    }
}

impl LakeProvider {
    /// `parquet` reads `files`; `schema` is the table's. With `locations` (one per file)
    /// the provider's table has the location columns too, and so have the `inlined` rows.
    pub fn new(
        schema: SchemaRef,
        files: Vec<LakeFile>,
        locations: Option<Vec<FileLocation>>,
        bounds: FileBounds,
        inlined: Vec<RecordBatch>,
        parquet: ParquetScan,
        min_partitions: usize,
    ) -> Self {
        let file_stats = (0..files.len()).map(|_| OnceLock::new()).collect();
        let output_schema = match locations {
            Some(_) => located_schema(&schema),
            None => Arc::clone(&schema),
        };
        Self {
            table: parquet.table.clone(),
            schema,
            output_schema,
            files,
            locations,
            file_stats,
            bounds,
            inlined,
            parquet,
            min_partitions,
            pruned: 0,
            read_exactly: 0,
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

    /// File `index`'s statistics (`statistics::of_file`), made once.
    fn file_statistics(&self, index: usize) -> Arc<Statistics> {
        Arc::clone(self.file_stats[index].get_or_init(|| {
            Arc::new(statistics::of_file(
                &self.files[index],
                index,
                &self.bounds,
                self.parquet.scan_schema(),
            ))
        }))
    }

    fn live_rows(&self) -> u64 {
        let files: u64 = self.files.iter().map(LakeFile::live_rows).sum();
        let inlined: u64 = self.inlined.iter().map(|b| b.num_rows() as u64).sum();
        files + inlined
    }

    /// Which files the filters cannot exclude, by catalog bounds (all when unknown).
    fn keep(&self, predicate: Option<&Arc<dyn PhysicalExpr>>) -> Vec<bool> {
        let all = vec![true; self.files.len()];
        let Some(predicate) = predicate else {
            return all;
        };
        if self.bounds.len() != self.files.len() {
            return all;
        }
        match PruningPredicateBuilder::new()
            .with_file_schema(Arc::clone(&self.schema))
            .try_build(Arc::clone(predicate))
            .and_then(|p| p.prune(&self.bounds))
        {
            Ok(keep) if keep.len() == self.files.len() => keep,
            _ => all,
        }
    }

    /// The filters this side prunes and decodes with, as one physical predicate.
    fn predicate(&self, filters: &[Expr]) -> Result<Option<Arc<dyn PhysicalExpr>>> {
        // Conjuncts calling a function are left to DataFusion's filter above the scan: the
        // functions they were decoded with may be an older registration (`task_context`).
        // Conjuncts on the location columns are DataFusion's too: the files know none.
        let usable = filters
            .iter()
            .flat_map(split_conjunction)
            .filter(|e| !calls_a_function(e) && self.on_table_columns(e))
            .cloned();
        let Some(expr) = conjunction(usable) else {
            return Ok(None);
        };
        let df_schema = DFSchema::try_from(Arc::clone(&self.schema))?;
        // A filter this side cannot plan is still applied by DataFusion (Inexact).
        Ok(create_physical_expr(
            &expr,
            &df_schema,
            &ExecutionProps::new(),
            &PhysicalPlanningContext::default(),
        )
        .ok())
    }

    /// Whether every column `expr` names is one of the table's (not a location column).
    fn on_table_columns(&self, expr: &Expr) -> bool {
        expr.column_refs()
            .iter()
            .all(|c| self.schema.field_with_name(&c.name).is_ok())
    }

    pub fn scan_plan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut report = ScanReport {
            files_total: self.files.len() + self.pruned + self.read_exactly,
            files_read_exactly: self.read_exactly,
            files_kept: self.read_exactly,
            filters: filters.len(),
            ..Default::default()
        };
        // count(*) and the like: no column, no filter. The count is exact: every file was
        // checked against the catalog's record count and every deleted position is known.
        if projection.is_some_and(|p| p.is_empty())
            && filters.is_empty()
            && self.parquet.snapshot.is_none()
        {
            report.from_catalog = true;
            let mut rows = self.live_rows();
            if let Some(limit) = limit {
                rows = rows.min(limit as u64);
            }
            let plan = count_only(rows)?;
            let summary = report.summary();
            self.record(report);
            return Ok(Arc::new(GuardExec::new(summary, plan)));
        }

        let predicate = self.predicate(filters)?;
        let keep = self.keep(predicate.as_ref());
        let kept_indices: Vec<usize> = (0..self.files.len()).filter(|&i| keep[i]).collect();
        let kept: Vec<&LakeFile> = kept_indices.iter().map(|&i| &self.files[i]).collect();
        let on_table: Vec<Expr> = filters
            .iter()
            .filter(|e| self.on_table_columns(e))
            .cloned()
            .collect();
        // a locating scan decodes its filters' columns first and the rest, and numbers
        // only, of the rows they keep (a row change names few rows of many)
        let point_lookup =
            self.locations.is_some() || self.bounds.point_lookup(&on_table, &kept_indices);
        let kept_locations: Option<Vec<FileLocation>> = self
            .locations
            .as_ref()
            .map(|all| kept_indices.iter().map(|&i| all[i]).collect());
        // the files are read with the table's columns asked for; the location columns
        // asked for come after them (`locations`), put in the asked order below
        let table_columns = self.schema.fields().len();
        let file_projection: Option<Vec<usize>> = match (&self.locations, projection) {
            (Some(_), Some(p)) => Some(p.iter().copied().filter(|&i| i < table_columns).collect()),
            (Some(_), None) => Some((0..table_columns).collect()),
            (None, p) => p.cloned(),
        };
        report.files_kept += kept.len();
        report.files_with_deletes = kept.iter().filter(|f| f.deleted > 0).count();
        report.files_split = kept
            .iter()
            .filter(|f| f.selection.is_some() && f.row_groups.get().is_some())
            .count();
        let (whole, selected): (Vec<&&LakeFile>, Vec<&&LakeFile>) = kept
            .iter()
            .filter(|f| f.deleted > 0)
            .partition(|f| f.live.is_some());
        report.rows_skipped = selected.iter().map(|f| f.deleted).sum();
        report.files_read_whole = whole.len();
        report.rows_dropped = whole.iter().map(|f| f.deleted).sum();

        let mut inputs: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        if !kept.is_empty() {
            let stats: Vec<Arc<Statistics>> = kept_indices
                .iter()
                .map(|&i| self.file_statistics(i))
                .collect();
            let reading = Kept {
                files: &kept,
                stats: &stats,
                predicate: predicate.as_ref(),
                point_lookup,
                projection: file_projection.as_ref(),
                limit,
                min_partitions: self.min_partitions,
                locations: kept_locations.as_deref(),
            };
            let scan = self.parquet.exec(state, reading, &mut report)?;
            inputs.push(match (&file_projection, self.locations.is_some()) {
                (Some(read), true) => in_asked_order(scan, read, projection, table_columns)?,
                _ => scan,
            });
        }
        let inlined: Vec<RecordBatch> = self
            .inlined
            .iter()
            .filter(|b| b.num_rows() > 0)
            .cloned()
            .collect();
        if !inlined.is_empty() || inputs.is_empty() {
            let batches = if inlined.is_empty() {
                vec![RecordBatch::new_empty(Arc::clone(&self.output_schema))]
            } else {
                inlined
            };
            inputs.push(MemorySourceConfig::try_new_exec(
                &[batches],
                Arc::clone(&self.output_schema),
                projection.cloned(),
            )?);
        }
        let plan = UnionExec::try_new(inputs)?;
        let summary = report.summary();
        self.record(report);
        Ok(Arc::new(GuardExec::new(summary, plan)))
    }
}

/// The located scan's columns (those of `read`, then the location columns) in the order
/// `projection` asks for them (all the provider's columns when `None`).
fn in_asked_order(
    scan: Arc<dyn ExecutionPlan>,
    read: &[usize],
    projection: Option<&Vec<usize>>,
    table_columns: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    let asked: Vec<usize> = match projection {
        Some(p) => p.clone(),
        None => (0..table_columns + crate::locations::LOCATION_COLUMNS.len()).collect(),
    };
    let scanned = scan.schema();
    let order: Vec<usize> = asked
        .iter()
        .map(|&i| match read.iter().position(|&r| r == i) {
            Some(at) => at,
            None => read.len() + (i - table_columns),
        })
        .collect();
    if order.iter().copied().eq(0..scanned.fields().len()) {
        return Ok(scan);
    }
    let exprs: Vec<ProjectionExpr> = order
        .iter()
        .map(|&at| {
            let name = scanned.field(at).name();
            ProjectionExpr::new(Arc::new(Column::new(name, at)), name.clone())
        })
        .collect();
    Ok(Arc::new(ProjectionExec::try_new(exprs, scan)?))
}

/// Whether `expr` calls a scalar function anywhere (built-in or the user's).
fn calls_a_function(expr: &Expr) -> bool {
    expr.exists(|e| Ok(matches!(e, Expr::ScalarFunction(_))))
        .unwrap_or(true)
}

#[async_trait]
impl TableProvider for LakeProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.output_schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // DataFusion applies every filter again: catalog and footer statistics only prune.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        crate::guard::planning(&self.table, || {
            self.scan_plan(state, projection, filters, limit)
        })
    }
}
