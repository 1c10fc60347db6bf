package io.ducklake_datafusion.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Function1;

/**
 * The change feed of one table between two snapshots, as the planner computed it: its rows
 * arrive with the feed's schema (Arrow) and are read as one partition.
 */
final class ChangesTable implements Table, SupportsRead {
  private final String name;
  private final StructType schema;
  private final byte[] rows;
  private final String description;

  ChangesTable(String catalogName, Protocol.Reply header, byte[] rows) {
    this.name =
        catalogName
            + "."
            + header.text("namespace")
            + "."
            + header.text("name");
    this.schema = (StructType) DataType.fromJson(header.text("schema"));
    this.rows = rows;
    this.description =
        "DuckLake changes of "
            + name
            + " from snapshot "
            + header.integer("first")
            + " through "
            + header.integer("last")
            + " ["
            + header.integer("rows")
            + " rows from the planner]";
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> new RowsScan();
  }

  private final class RowsScan implements Scan, Batch {
    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return description;
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return new InputPartition[] {new FileSlices.RowsPartition(rows)};
    }

    @Override
    @SuppressWarnings("unchecked")
    public PartitionReaderFactory createReaderFactory() {
      return new DuckLakeReaderFactory(
          new Function1[0], new boolean[0], schema, true, null, new int[0]);
    }
  }
}
