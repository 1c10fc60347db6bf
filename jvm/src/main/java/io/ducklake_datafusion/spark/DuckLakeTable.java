package io.ducklake_datafusion.spark;

import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * One DuckLake table at the snapshot it was loaded at: every scan of this object reads that
 * snapshot (the planner is asked for it by id), so a query sees one table state. A write
 * begins at that snapshot too: an overwrite that reads the table ({@code INSERT OVERWRITE t
 * SELECT ... FROM t}) fails to commit if another commit changed its rows meanwhile.
 */
final class DuckLakeTable implements Table, SupportsRead, SupportsWrite {
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
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.MICRO_BATCH_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.TRUNCATE,
        TableCapability.STREAMING_WRITE,
        TableCapability.OVERWRITE_DYNAMIC);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    com.fasterxml.jackson.databind.node.ObjectNode options =
        DuckLakeWriteBuilder.commitOptions(info.options());
    String query = info.queryId();
    return new DuckLakeWriteBuilder(
        name(),
        (mode, loaded) -> catalog.beginWrite(this, mode, loaded),
        target -> files -> catalog.commitWrite(target, files, options),
        target -> (epoch, files) -> catalog.commitEpoch(target, files, options, query, epoch));
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
