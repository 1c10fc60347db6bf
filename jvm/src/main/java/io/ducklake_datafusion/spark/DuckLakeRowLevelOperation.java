package io.ducklake_datafusion.spark;

import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.DeltaWriteBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsDelta;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A {@code DELETE}, {@code UPDATE} or {@code MERGE INTO} of a DuckLake table, as Spark's
 * analyzer rewrites it (no session extension): a scan of the table at its loaded snapshot that
 * adds each row's id, data file and position ({@link RowMetadata}), and a delta write ({@link
 * DuckLakeDeltaWrite}) of the rows deleted (by those), updated (deleted, and written again
 * with their own row ids, as DuckDB writes an update) and inserted. Rows are named by their
 * row id, which every row has; file and position say where the delete goes.
 */
final class DuckLakeRowLevelOperation implements SupportsDelta {
  private final DuckLakeTable table;
  private final Command command;

  DuckLakeRowLevelOperation(DuckLakeTable table, Command command) {
    this.table = table;
    this.command = command;
  }

  @Override
  public Command command() {
    return command;
  }

  @Override
  public String description() {
    return command + " " + table.name() + " (from snapshot " + table.snapshot() + ")";
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return table.newScanBuilder(options);
  }

  @Override
  public NamedReference[] rowId() {
    return new NamedReference[] {Expressions.column(RowMetadata.ROW_ID)};
  }

  @Override
  public NamedReference[] requiredMetadataAttributes() {
    return new NamedReference[] {
      Expressions.column(RowMetadata.FILE_ID), Expressions.column(RowMetadata.POSITION)
    };
  }

  @Override
  public boolean representUpdateAsDeleteAndInsert() {
    return false;
  }

  @Override
  public DeltaWriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return new DeltaWriteBuilder() {
      @Override
      public DuckLakeDeltaWrite build() {
        return new DuckLakeDeltaWrite(table, command.toString(), info);
      }
    };
  }
}
