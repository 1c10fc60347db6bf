package io.ducklake_datafusion.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A table's change feed as a stream: {@code spark.readStream.table("lake.main.t.changes")}.
 *
 * <p>A table of its own because Spark fixes a stream's columns from the table before it reads
 * any option, so an option such as Delta's {@code readChangeFeed} cannot add the change columns
 * to {@code lake.main.t}; Iceberg names its change tables the same way. Its columns are the
 * table's, then {@code _change_type}, {@code _commit_snapshot_id}, {@code _commit_timestamp}
 * and {@code _rowid}; its read options are the stream's ({@link DuckLakeMicroBatchStream}).
 */
final class ChangeFeedTable implements Table, SupportsRead {
  static final String SUFFIX = "changes";
  private final DuckLakeTable table;
  private final StructType schema;

  ChangeFeedTable(DuckLakeTable table) {
    this.table = table;
    this.schema = DuckLakeMicroBatchStream.withChangeColumns(table.schema());
  }

  @Override
  public String name() {
    return table.name() + "." + SUFFIX;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.MICRO_BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () ->
        new Scan() {
          @Override
          public StructType readSchema() {
            return schema;
          }

          @Override
          public String description() {
            return "DuckLake change feed of " + table.name();
          }

          @Override
          public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
            return new DuckLakeMicroBatchStream(table, options, true);
          }
        };
  }
}
