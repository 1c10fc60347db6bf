//! The Parquet half of a scan: DataFusion's `DataSourceExec` over the files the query's
//! filters could not exclude, each with its deleted rows as a row selection, in balanced
//! partitions, re-checked against the catalog when opened; and, for merged files, the
//! rows of later snapshots dropped. It holds where and how files are read (the store,
//! the field-id adapter), not which files there are: the provider chooses those.
//! No I/O happens here: this only builds the plan.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::Session;
use datafusion::common::config::TableParquetOptions;
use datafusion::common::{Result, ScalarValue, Statistics};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::physical_plan::{FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, IsNullExpr, Literal};
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_adapter::PhysicalExprAdapterFactory;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_datasource_parquet::CachedParquetFileReaderFactory;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

use crate::checks::CheckedReaderFactory;
use crate::drop_deleted::{file_field, position_field, DropDeletedExec};
use crate::file::{partitioned_file, LakeFile};
use crate::locations::{FileLocation, LocateExec};
use crate::partitions::{file_groups, Splitting};
use crate::report::ScanReport;
use crate::statistics;

/// Footers parsed by any provider of this process, by path (DuckLake never rewrites a
/// file in place: every file has a fresh name). The Python side checks each file against
/// the catalog before a provider is built.
const METADATA_CACHE_BYTES: usize = 256 << 20;

fn metadata_cache() -> Arc<FileMetadataCache> {
    static CACHE: OnceLock<Arc<FileMetadataCache>> = OnceLock::new();
    Arc::clone(CACHE.get_or_init(|| Arc::new(DefaultCache::new(METADATA_CACHE_BYTES))))
}

/// The hidden column of per-row snapshot ids (DuckDB's own name for it; the Python side
/// sends no table with a column named `_ducklake_*`). No NUL: names cross the FFI as C strings.
pub const SNAPSHOT_COLUMN: &str = "_ducklake_internal_snapshot_id";

/// How one table's files are read.
pub struct ParquetScan {
    pub table: String,
    /// The table's columns.
    schema: SchemaRef,
    /// What is read from the files: the table's columns, and the snapshot column
    /// (`SNAPSHOT_COLUMN`, mapped by field id) when `snapshot` is set.
    scan_schema: SchemaRef,
    store: Arc<dyn ObjectStore>,
    store_url: ObjectStoreUrl,
    adapter: Option<Arc<dyn PhysicalExprAdapterFactory>>,
    /// Set when some file holds per-row snapshot ids (merged files): rows of later
    /// snapshots are dropped.
    pub snapshot: Option<i64>,
    /// Files on the local file system (re-checked with a stat when opened).
    local: bool,
}

/// What one scan reads of the files: those kept, with their statistics, and what the
/// query asks.
pub struct Kept<'a> {
    pub files: &'a [&'a LakeFile],
    pub stats: &'a [Arc<Statistics>],
    pub predicate: Option<&'a Arc<dyn PhysicalExpr>>,
    /// Evaluate the filters inside the decoder (`FileBounds::point_lookup`).
    pub point_lookup: bool,
    pub projection: Option<&'a Vec<usize>>,
    pub limit: Option<usize>,
    /// Partitions to split into at least.
    pub min_partitions: usize,
    /// Each kept file's location, when every row's location is asked for (`locations`):
    /// the table's columns are followed by `locations::LOCATION_COLUMNS`.
    pub locations: Option<&'a [FileLocation]>,
}

impl ParquetScan {
    pub fn new(
        table: String,
        schema: SchemaRef,
        store: Arc<dyn ObjectStore>,
        adapter: Option<Arc<dyn PhysicalExprAdapterFactory>>,
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
        Self {
            table,
            schema,
            scan_schema,
            store,
            store_url: ObjectStoreUrl::local_filesystem(),
            adapter,
            snapshot,
            local,
        }
    }

    pub fn scan_schema(&self) -> &SchemaRef {
        &self.scan_schema
    }

    /// The plan reading `kept`, its partitions and byte ranges counted in `report`.
    pub fn exec(
        &self,
        state: &dyn Session,
        kept: Kept<'_>,
        report: &mut ScanReport,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let partitions = state
            .config_options()
            .execution
            .target_partitions
            .max(kept.min_partitions);
        let optimizer = &state.config_options().optimizer;
        let splitting = Splitting {
            enabled: optimizer.repartition_file_scans,
            min_size: optimizer.repartition_file_min_size as u64,
        };
        // files with scattered deletes are decoded whole, each row with its file and
        // position, and their deleted rows dropped after decoding (`drop_deleted`); every
        // row is numbered too when its location is asked for (`locations`)
        let drop_deleted = kept.files.iter().any(|f| f.live.is_some());
        let read_whole = drop_deleted || kept.locations.is_some();
        if kept.locations.is_some() && self.snapshot.is_some() {
            return Err(datafusion::common::DataFusionError::Internal(format!(
                "locating the rows of {}: files with per-row snapshots are the exact path's",
                self.table
            )));
        }
        let groups = file_groups(
            kept.files,
            kept.stats,
            partitions,
            splitting,
            &self.scan_schema,
            |index, file| {
                let mut part = partitioned_file(file);
                if read_whole {
                    part.partition_values = vec![ScalarValue::UInt32(Some(index as u32))];
                }
                part
            },
        );
        report.partitions = groups.len();
        report.ranges = groups
            .iter()
            .flat_map(|g| g.iter())
            .filter(|f| f.range.is_some())
            .count();
        let table_stats = statistics::merged(kept.stats, &self.scan_schema)
            .unwrap_or_else(|| Statistics::new_unknown(&self.scan_schema));
        let mut options = state.config_options().execution.parquet.clone();
        if kept.point_lookup {
            options.pushdown_filters = true;
            options.reorder_filters = true;
        }
        report.decoder_filters = options.pushdown_filters && kept.predicate.is_some();
        let table_schema = if read_whole {
            TableSchema::builder(Arc::clone(&self.scan_schema))
                .with_table_partition_cols(vec![file_field()])
                .with_virtual_columns(vec![position_field()])
                .build()
        } else {
            TableSchema::from(Arc::clone(&self.scan_schema))
        };
        let mut source = ParquetSource::new(table_schema)
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
        if let Some(predicate) = kept.predicate {
            source = source.with_predicate(Arc::clone(predicate));
        }
        let wanted: Vec<usize> = match kept.projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let mut indices = wanted.clone();
        if self.snapshot.is_some() {
            indices.push(self.schema.fields().len());
        }
        if read_whole {
            let columns = self.scan_schema.fields().len();
            indices.extend([columns, columns + 1]);
        }
        let config = FileScanConfigBuilder::new(self.store_url.clone(), Arc::new(source))
            .with_file_groups(groups)
            .with_statistics(table_stats)
            .with_projection_indices(Some(indices))?
            // a limit counts decoded rows: not when some are dropped above the scan
            .with_limit(if self.snapshot.is_some() || drop_deleted {
                None
            } else {
                kept.limit
            })
            .with_expr_adapter(self.adapter.clone())
            .build();
        let mut scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
        if drop_deleted {
            let live = kept.files.iter().map(|f| f.live.clone()).collect();
            let keep_positions = kept.locations.is_some();
            let table = self.table.clone();
            scan = Arc::new(DropDeletedExec::try_new(scan, live, table, keep_positions)?);
        }
        if let Some(locations) = kept.locations {
            let table = self.table.clone();
            scan = Arc::new(LocateExec::try_new(scan, locations.to_vec(), table)?);
        }
        match self.snapshot {
            Some(snapshot) => self.drop_later_rows(scan, snapshot, &wanted),
            None => Ok(scan),
        }
    }

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

/// Zero-column batches carrying `rows` rows.
pub fn count_only(rows: u64) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = Arc::new(Schema::empty());
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
