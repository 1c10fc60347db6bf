package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDeleteV2;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRowLevelOperations;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.RowLevelOperationBuilder;
import org.apache.spark.sql.connector.write.RowLevelOperationInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * One DuckLake table at the snapshot it was loaded at: every scan of this object reads that
 * snapshot (the planner is asked for it by id), so a query sees one table state. A write
 * begins at that snapshot too: an overwrite that reads the table ({@code INSERT OVERWRITE t
 * SELECT ... FROM t}) fails to commit if another commit changed its rows meanwhile.
 *
 * <p>{@code DELETE FROM} (and {@code TRUNCATE TABLE}) ends whole data files, decided by
 * catalog metadata alone, where the catalog decides it ({@link SupportsDeleteV2}: the
 * planner's {@code delete_where}); any other {@code DELETE}, and every {@code UPDATE} and
 * {@code MERGE INTO}, Spark rewrites into a scan and a delta write ({@link
 * SupportsRowLevelOperations}: {@link DuckLakeRowLevelOperation}).
 */
final class DuckLakeTable
    implements Table,
        SupportsRead,
        SupportsWrite,
        SupportsDeleteV2,
        SupportsMetadataColumns,
        SupportsRowLevelOperations {
  private final DuckLakeCatalog catalog;
  private final String catalogName;
  private final String namespace;
  private final String tableName;
  private final long snapshot;
  private final StructType schema;
  private final Map<String, String> properties = new LinkedHashMap<>();
  // Plans of this table state by request (columns, filters, read settings), last used kept.
  private final Map<String, DuckLakeScan.Plan> plans =
      new LinkedHashMap<String, DuckLakeScan.Plan>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, DuckLakeScan.Plan> eldest) {
          return size() > 16;
        }
      };

  DuckLakeTable(DuckLakeCatalog catalog, String catalogName, Protocol.Reply info, StructType schema) {
    this.catalog = catalog;
    this.catalogName = catalogName;
    this.namespace = info.text("namespace");
    this.tableName = info.text("name");
    this.snapshot = info.integer("snapshot");
    this.schema = schema;
    properties.put("provider", "ducklake");
    properties.put("ducklake.snapshot", Long.toString(snapshot));
    properties.put("ducklake.snapshot_time", info.text("snapshot_time"));
    properties.put("ducklake.table_id", Long.toString(info.integer("table_id")));
    properties.put("ducklake.table_uuid", info.text("table_uuid"));
  }

  @Override
  public String name() {
    return catalogName + "." + namespace + "." + tableName;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    Set<TableCapability> capabilities =
        EnumSet.of(
            TableCapability.BATCH_READ,
            TableCapability.MICRO_BATCH_READ,
            TableCapability.BATCH_WRITE,
            TableCapability.TRUNCATE,
            TableCapability.STREAMING_WRITE,
            TableCapability.OVERWRITE_DYNAMIC);
    if (AUTOMATIC_SCHEMA_EVOLUTION != null) {
      capabilities.add(AUTOMATIC_SCHEMA_EVOLUTION);
    }
    return capabilities;
  }

  /**
   * Spark's {@code MERGE}/{@code INSERT ... WITH SCHEMA EVOLUTION} (releases that have it)
   * alters the table through the catalog ({@code alterTable}) before it writes: null where the
   * release lacks it (Spark 3.5).
   */
  private static final TableCapability AUTOMATIC_SCHEMA_EVOLUTION = capability("AUTOMATIC_SCHEMA_EVOLUTION");

  private static TableCapability capability(String name) {
    try {
      return TableCapability.valueOf(name);
    } catch (IllegalArgumentException absent) {
      return null;
    }
  }

  /** The streaming write's option of background compaction (see {@link #compactEvery}). */
  static final String COMPACT_EVERY = "compact_every";

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    com.fasterxml.jackson.databind.node.ObjectNode options =
        DuckLakeWriteBuilder.commitOptions(info.options());
    String query = info.queryId();
    long compactEvery = compactEvery(info.options());
    return new DuckLakeWriteBuilder(
        name(),
        (mode, loaded) -> catalog.beginWrite(this, mode, loaded),
        target -> files -> catalog.commitWrite(target, files, options),
        target ->
            (epoch, files) ->
                catalog.commitEpoch(target, files, options, query, epoch, compactEvery),
        new DuckLakeWriteBuilder.StreamRows(
            info.schema(),
            mergeSchema(info.options()),
            rows -> catalog.mergeSchema(this, rows, options)));
  }

  /** The streaming write's option that adds the rows' new columns ({@link WriteLayout}). */
  static final String MERGE_SCHEMA = "mergeSchema";

  private boolean mergeSchema(CaseInsensitiveStringMap options) {
    String value = options.get(MERGE_SCHEMA);
    if (value == null || value.trim().equalsIgnoreCase("false")) {
      return false;
    }
    if (value.trim().equalsIgnoreCase("true")) {
      return true;
    }
    throw new DuckLakeException(
        ErrorNames.INVALID_OPTION,
        "the write option " + MERGE_SCHEMA + " of " + name() + " is true or false, got '"
            + value + "'",
        null);
  }

  /**
   * A streaming write's {@code compact_every} option: every that many micro-batches, the
   * planner merges the table's small files in the background (0: never, the default).
   */
  private long compactEvery(CaseInsensitiveStringMap options) {
    String value = options.get(COMPACT_EVERY);
    if (value == null || value.isEmpty()) {
      return 0;
    }
    try {
      long every = Long.parseLong(value.trim());
      if (every >= 0) {
        return every;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new DuckLakeException(
        ErrorNames.INVALID_OPTION,
        "the write option " + COMPACT_EVERY + " of " + name() + " must be a number of "
            + "micro-batches (0: never), got '" + value + "'",
        null);
  }

  /**
   * Whether every predicate has an exact form the planner reads and the catalog decides the
   * delete for every live file (whole or not at all: {@link #deleteWhere}); otherwise Spark
   * deletes the rows one by one ({@link #newRowLevelOperationBuilder}).
   */
  @Override
  public boolean canDeleteWhere(Predicate[] predicates) {
    List<ObjectNode> filters = deleteFilters(predicates);
    return filters != null && catalog.deleteDecided(this, filters);
  }

  @Override
  public MetadataColumn[] metadataColumns() {
    return RowMetadata.columns();
  }

  @Override
  public RowLevelOperationBuilder newRowLevelOperationBuilder(RowLevelOperationInfo info) {
    return () -> new DuckLakeRowLevelOperation(this, info.command());
  }

  /**
   * Delete the rows matching every predicate, as one snapshot, where catalog statistics and
   * partition values show each live file matching whole or not at all (the planner refuses,
   * by name, a delete some file matches in part: nothing is deleted then).
   */
  @Override
  public void deleteWhere(Predicate[] predicates) {
    List<ObjectNode> filters = deleteFilters(predicates);
    if (filters == null) {
      throw new DuckLakeException(
          ErrorNames.UNSUPPORTED_FEATURE,
          "DELETE FROM " + name() + ": its condition has a part the lake cannot evaluate",
          null);
    }
    catalog.deleteWhere(this, filters);
  }

  /** The predicates as the planner's filter JSON; null when one has no exact form. */
  private static List<ObjectNode> deleteFilters(Predicate[] predicates) {
    List<ObjectNode> filters = new ArrayList<>();
    for (Predicate predicate : predicates) {
      if ("ALWAYS_TRUE".equals(predicate.name())) {
        continue;
      }
      scala.Option<Filter> filter = PredicateUtils.toV1(predicate);
      ObjectNode json = filter.isDefined() ? FilterJson.whole(filter.get()) : null;
      if (json == null) {
        return null;
      }
      filters.add(json);
    }
    return filters;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return new DuckLakeScanBuilder(this, options);
  }

  synchronized DuckLakeScan.Plan plan(String key) {
    return plans.get(key);
  }

  synchronized void keepPlan(String key, DuckLakeScan.Plan plan) {
    plans.put(key, plan);
  }

  DuckLakeCatalog catalog() {
    return catalog;
  }

  String namespace() {
    return namespace;
  }

  String tableName() {
    return tableName;
  }

  long snapshot() {
    return snapshot;
  }
}
