package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * A table {@code CREATE TABLE ... AS SELECT} (or {@code writeTo(...).create()}) is creating:
 * its rows are written first, then {@link #commitStagedChanges} commits the new table and its
 * files as one snapshot, so no reader ever sees the table without its rows, and a failed job
 * leaves no table behind.
 */
final class StagedDuckLakeTable implements StagedTable, SupportsWrite {
  private final DuckLakeCatalog catalog;
  private final Identifier ident;
  private final StructType schema;
  private final Transform[] partitions;
  private final String[] partitionKeys;
  private final Map<String, String> properties;
  private WriteTarget target;
  private List<WrittenFile> files;
  private ObjectNode options;
  private boolean outcomeUnknown;

  StagedDuckLakeTable(
      DuckLakeCatalog catalog,
      Identifier ident,
      StructType schema,
      Transform[] partitions,
      String[] partitionKeys,
      Map<String, String> properties) {
    this.catalog = catalog;
    this.ident = ident;
    this.schema = schema;
    this.partitions = partitions;
    this.partitionKeys = partitionKeys;
    this.properties = properties == null ? Collections.emptyMap() : properties;
  }

  @Override
  public String name() {
    return catalog.name() + "." + String.join(".", ident.namespace()) + "." + ident.name();
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Transform[] partitioning() {
    return partitions;
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_WRITE);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    options = DuckLakeWriteBuilder.commitOptions(info.options());
    return new DuckLakeWriteBuilder(
        name(),
        (mode, loaded) -> {
          target = catalog.beginCreate(ident, schema, partitionKeys);
          return target;
        },
        begun -> written -> files = written,
        null,
        null);
  }

  @Override
  public void commitStagedChanges() {
    if (target == null) {
      catalog.createEmpty(ident, schema, partitionKeys);
      return;
    }
    try {
      catalog.commitWrite(target, files, options);
    } catch (RuntimeException e) {
      outcomeUnknown = DuckLakeBatchWrite.outcomeUnknown(e);
      throw e;
    }
  }

  @Override
  public void abortStagedChanges() {
    if (target == null || files == null || outcomeUnknown) {
      return;
    }
    target.deleteUncommitted(files, SparkSession.active(), "a failed CREATE TABLE AS of " + name());
  }
}
