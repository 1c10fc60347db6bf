//! The table provider: one DuckLake table at one snapshot, as DataFusion scans it.
//!
//! It holds what the Python planner knows of the snapshot (every live data file with its
//! size, footer size, record count and deleted positions as a row selection; safe per-file
//! bounds; the inlined rows) and builds, in `scan()`, one Parquet `DataSourceExec` over
//! the files the query's filters cannot exclude, plus the inlined rows from memory. No I/O
//! happens in `scan()`.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::TableParquetOptions;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::ScalarValue;
use datafusion::common::{DFSchema, Result, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::physical_plan::{FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::context::ExecutionProps;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::Operator;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::{BinaryExpr, Column, IsNullExpr, Literal};
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use datafusion::physical_expr_adapter::PhysicalExprAdapterFactory;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_datasource_parquet::{CachedParquetFileReaderFactory, ParquetRowSelection};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::ObjectStore;

use crate::checks::{CheckedReaderFactory, Expected};
use crate::deletes::RowGroupSelections;
use crate::guard::GuardExec;
use crate::partitions::{file_groups, Splitting};
use crate::pruning::FileBounds;
use crate::statistics;

/// Footers parsed by any provider of this process, by path (DuckLake never rewrites a
/// file in place: every file has a fresh name). The Python side checks each file against
/// the catalog before a provider is built.
const METADATA_CACHE_BYTES: usize = 256 << 20;

fn metadata_cache() -> Arc<FileMetadataCache> {
    static CACHE: OnceLock<Arc<FileMetadataCache>> = OnceLock::new();
    Arc::clone(CACHE.get_or_init(|| Arc::new(DefaultCache::new(METADATA_CACHE_BYTES))))
}

/// One live data file.
#[derive(Debug, Clone)]
pub struct LakeFile {
    pub path: Path,
    /// The catalog's URL of the file, for messages.
    pub url: String,
    pub size: u64,
    pub footer_size: Option<u64>,
    pub record_count: u64,
    /// Rows deleted at the snapshot (the selection skips them).
    pub deleted: u64,
    pub selection: Option<Arc<ParquetRowSelection>>,
    /// `selection` split into the file's row groups, once it has been opened.
    pub row_groups: RowGroupSelections,
}

impl LakeFile {
    pub fn live_rows(&self) -> u64 {
        self.record_count - self.deleted
    }

    pub fn weight(&self) -> u64 {
        if self.record_count == 0 {
            return self.size;
        }
        // bytes decoded, about: the live share of the file
        self.size.max(1) * self.live_rows() / self.record_count
    }
}

/// What the last `scan()` did, for tests and `EXPLAIN`.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    pub files_total: usize,
    pub files_kept: usize,
    pub files_with_deletes: usize,
    pub rows_skipped: u64,
    pub filters: usize,
    pub partitions: usize,
    pub from_catalog: bool,
    /// The filters are evaluated inside the Parquet decoder (`FileBounds::point_lookup`,
    /// or the session's own `pushdown_filters`).
    pub decoder_filters: bool,
    /// Files with deletes whose selection was already split into row groups.
    pub files_split: usize,
    /// Kept files the exact reader read (the caller's `inlined` batches hold their rows).
    pub files_read_exactly: usize,
    /// Byte ranges of files split across partitions (`partitions`).
    pub ranges: usize,
}

impl ScanReport {
    pub fn summary(&self) -> String {
        if self.from_catalog {
            return "count from the catalog, no file read".to_string();
        }
        format!(
            "files {} of {} ({} pruned by catalog statistics), {} with deletes, {} deleted rows skipped by row selections{}{}{}",
            self.files_kept,
            self.files_total,
            self.files_total - self.files_kept,
            self.files_with_deletes,
            self.rows_skipped,
            if self.files_read_exactly > 0 {
                format!(", {} read by the exact reader", self.files_read_exactly)
            } else {
                String::new()
            },
            if self.decoder_filters {
                ", filters evaluated while decoding"
            } else {
                ""
            },
            if self.ranges > 0 {
                format!(", {} byte ranges of large files", self.ranges)
            } else {
                String::new()
            }
        )
    }
}

pub struct LakeProvider {
    pub table: String,
    schema: SchemaRef,
    files: Vec<LakeFile>,
    bounds: FileBounds,
    inlined: Vec<RecordBatch>,
    store: Arc<dyn ObjectStore>,
    store_url: ObjectStoreUrl,
    adapter: Option<Arc<dyn PhysicalExprAdapterFactory>>,
    /// Partitions a scan is split into at least (both cores busy whatever the session's
    /// `target_partitions`).
    min_partitions: usize,
    /// Set when some file holds per-row snapshot ids (merged files): rows of later
    /// snapshots are dropped. The scan then reads `scan_schema`, the table's columns and
    /// the snapshot column (`SNAPSHOT_COLUMN`, mapped by field id).
    snapshot: Option<i64>,
    scan_schema: SchemaRef,
    /// Files on the local file system (re-checked with a stat when opened).
    local: bool,
    /// Files of the snapshot the Python planner already pruned (`lazy`): only reported.
    pub pruned: usize,
    /// Kept files the Python side read with the exact reader (rows among `inlined`):
    /// only reported.
    pub read_exactly: usize,
    /// Each file's statistics for the optimizer (`statistics`), made when first scanned.
    file_stats: Vec<OnceLock<Arc<Statistics>>>,
    last: Mutex<ScanReport>,
}

/// The hidden column of per-row snapshot ids (DuckDB's own name for it; the Python side
/// sends no table with a column named `_ducklake_*`). No NUL: names cross the FFI as C strings.
pub const SNAPSHOT_COLUMN: &str = "_ducklake_internal_snapshot_id";

impl fmt::Debug for LakeProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LakeProvider")
            .field("table", &self.table)
            .field("files", &self.files.len())
            .finish()
    }
}

impl LakeProvider {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table: String,
        schema: SchemaRef,
        files: Vec<LakeFile>,
        bounds: FileBounds,
        inlined: Vec<RecordBatch>,
        store: Arc<dyn ObjectStore>,
        adapter: Option<Arc<dyn PhysicalExprAdapterFactory>>,
        min_partitions: usize,
        snapshot: Option<i64>,
        local: bool,
    ) -> Self {
        let scan_schema = match snapshot {
            None => Arc::clone(&schema),
            Some(_) => {
                let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
                fields.push(Arc::new(Field::new(SNAPSHOT_COLUMN, DataType::Int64, true)));
                Arc::new(Schema::new(fields))
            }
        };
        let file_stats = (0..files.len()).map(|_| OnceLock::new()).collect();
        Self {
            table,
            schema,
            files,
            file_stats,
            bounds,
            inlined,
            store,
            store_url: ObjectStoreUrl::local_filesystem(),
            adapter,
            min_partitions,
            snapshot,
            scan_schema,
            local,
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
                &self.scan_schema,
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
        if projection.is_some_and(|p| p.is_empty()) && filters.is_empty() && self.snapshot.is_none()
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

        // Conjuncts calling a function are left to DataFusion's filter above the scan: the
        // functions they were decoded with may be an older registration (`task_context`).
        let usable = filters
            .iter()
            .flat_map(split_conjunction)
            .filter(|e| !calls_a_function(e))
            .cloned();
        let predicate = match conjunction(usable) {
            Some(expr) => {
                let df_schema = DFSchema::try_from(Arc::clone(&self.schema))?;
                // A filter this side cannot plan is still applied by DataFusion (Inexact).
                create_physical_expr(
                    &expr,
                    &df_schema,
                    &ExecutionProps::new(),
                    &PhysicalPlanningContext::default(),
                )
                .ok()
            }
            None => None,
        };
        let keep = self.keep(predicate.as_ref());
        let kept_indices: Vec<usize> = (0..self.files.len()).filter(|&i| keep[i]).collect();
        let kept: Vec<&LakeFile> = kept_indices.iter().map(|&i| &self.files[i]).collect();
        let point_lookup = self.bounds.point_lookup(filters, &kept_indices);
        report.files_kept += kept.len();
        report.files_with_deletes = kept.iter().filter(|f| f.selection.is_some()).count();
        report.files_split = kept
            .iter()
            .filter(|f| f.selection.is_some() && f.row_groups.get().is_some())
            .count();
        report.rows_skipped = kept.iter().map(|f| f.deleted).sum();

        let mut inputs: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        if !kept.is_empty() {
            let partitions = state
                .config_options()
                .execution
                .target_partitions
                .max(self.min_partitions);
            let stats: Vec<Arc<Statistics>> = kept_indices
                .iter()
                .map(|&i| self.file_statistics(i))
                .collect();
            let optimizer = &state.config_options().optimizer;
            let splitting = Splitting {
                enabled: optimizer.repartition_file_scans,
                min_size: optimizer.repartition_file_min_size as u64,
            };
            let groups = file_groups(
                &kept,
                &stats,
                partitions,
                splitting,
                &self.scan_schema,
                partitioned_file,
            );
            report.partitions = groups.len();
            report.ranges = groups
                .iter()
                .flat_map(|g| g.iter())
                .filter(|f| f.range.is_some())
                .count();
            let table_stats = statistics::merged(&stats, &self.scan_schema)
                .unwrap_or_else(|| Statistics::new_unknown(&self.scan_schema));
            let mut options = state.config_options().execution.parquet.clone();
            if point_lookup {
                options.pushdown_filters = true;
                options.reorder_filters = true;
            }
            report.decoder_filters = options.pushdown_filters && predicate.is_some();
            let mut source = ParquetSource::new(Arc::clone(&self.scan_schema))
                .with_table_parquet_options(TableParquetOptions {
                    global: options,
                    ..Default::default()
                })
                .with_parquet_file_reader_factory(Arc::new(CheckedReaderFactory {
                    inner: Arc::new(CachedParquetFileReaderFactory::new(
                        Arc::clone(&self.store),
                        metadata_cache(),
                    )),
                    store: Arc::clone(&self.store),
                    check_size: self.local,
                    table: self.table.clone(),
                    local: self.local.then(|| Arc::new(LocalFileSystem::new())),
                }));
            if let Some(predicate) = &predicate {
                source = source.with_predicate(Arc::clone(predicate));
            }
            let wanted: Vec<usize> = match projection {
                Some(p) => p.clone(),
                None => (0..self.schema.fields().len()).collect(),
            };
            let mut indices = wanted.clone();
            if self.snapshot.is_some() {
                indices.push(self.schema.fields().len());
            }
            let config = FileScanConfigBuilder::new(self.store_url.clone(), Arc::new(source))
                .with_file_groups(groups)
                .with_statistics(table_stats)
                .with_projection_indices(Some(indices))?
                .with_limit(if self.snapshot.is_some() { None } else { limit })
                .with_expr_adapter(self.adapter.clone())
                .build();
            let mut scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
            if let Some(snapshot) = self.snapshot {
                scan = self.drop_later_rows(scan, snapshot, &wanted)?;
            }
            inputs.push(scan);
        }
        let inlined: Vec<RecordBatch> = self
            .inlined
            .iter()
            .filter(|b| b.num_rows() > 0)
            .cloned()
            .collect();
        if !inlined.is_empty() || inputs.is_empty() {
            let batches = if inlined.is_empty() {
                vec![RecordBatch::new_empty(Arc::clone(&self.schema))]
            } else {
                inlined
            };
            inputs.push(MemorySourceConfig::try_new_exec(
                &[batches],
                Arc::clone(&self.schema),
                projection.cloned(),
            )?);
        }
        let plan = UnionExec::try_new(inputs)?;
        let summary = report.summary();
        self.record(report);
        Ok(Arc::new(GuardExec::new(summary, plan)))
    }
}

impl LakeProvider {
    /// Rows of merged files written by snapshots after `snapshot` dropped (a file without
    /// the snapshot column reads it as null: every row visible), then the column itself.
    fn drop_later_rows(
        &self,
        scan: Arc<dyn ExecutionPlan>,
        snapshot: i64,
        wanted: &[usize],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let position = wanted.len();
        let ids: Arc<dyn PhysicalExpr> = Arc::new(Column::new(SNAPSHOT_COLUMN, position));
        let visible = Arc::new(BinaryExpr::new(
            Arc::new(IsNullExpr::new(Arc::clone(&ids))),
            Operator::Or,
            Arc::new(BinaryExpr::new(
                ids,
                Operator::LtEq,
                Arc::new(Literal::new(ScalarValue::Int64(Some(snapshot)))),
            )),
        ));
        let filtered: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(visible, scan)?);
        let exprs: Vec<ProjectionExpr> = wanted
            .iter()
            .enumerate()
            .map(|(i, &index)| {
                let name = self.schema.field(index).name();
                ProjectionExpr::new(Arc::new(Column::new(name, i)), name.clone())
            })
            .collect();
        Ok(Arc::new(ProjectionExec::try_new(exprs, filtered)?))
    }
}

/// Whether `expr` calls a scalar function anywhere (built-in or the user's).
fn calls_a_function(expr: &Expr) -> bool {
    expr.exists(|e| Ok(matches!(e, Expr::ScalarFunction(_))))
        .unwrap_or(true)
}

/// Zero-column batches carrying `rows` rows.
pub fn count_only(rows: u64) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = Arc::new(arrow::datatypes::Schema::empty());
    let mut batches = Vec::new();
    let mut left = rows;
    const CHUNK: u64 = 1 << 30;
    while left > 0 {
        let n = left.min(CHUNK);
        let options = RecordBatchOptions::new().with_row_count(Some(n as usize));
        batches.push(RecordBatch::try_new_with_options(
            Arc::clone(&schema),
            vec![],
            &options,
        )?);
        left -= n;
    }
    Ok(MemorySourceConfig::try_new_exec(&[batches], schema, None)?)
}

fn partitioned_file(file: &LakeFile) -> PartitionedFile {
    let mut part = PartitionedFile::new(file.path.to_string(), file.size);
    if let Some(footer) = file.footer_size {
        // the footer, its length and the magic
        part = part.with_metadata_size_hint((footer + 8) as usize);
    }
    part = part.with_extension(Expected {
        url: file.url.clone(),
        size: file.size,
        record_count: file.record_count,
    });
    if let Some(selection) = &file.selection {
        // shared, not copied: a file's selection can hold tens of thousands of selectors
        match file.row_groups.get() {
            Some(plan) => {
                part.extensions.insert_arc(Arc::clone(plan));
            }
            // the reader derives the split when it opens the file (`CheckedReader`)
            None => {
                part.extensions.insert_arc(Arc::clone(selection));
                part = part.with_extension(file.row_groups.clone());
            }
        }
    }
    part
}

#[async_trait]
impl TableProvider for LakeProvider {
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
