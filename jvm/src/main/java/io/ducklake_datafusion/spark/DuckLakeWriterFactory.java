package io.ducklake_datafusion.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * What every task of one write needs, sent to the executors: the table's directory, the
 * schema and column ids files are written with, the target file size and the Hadoop
 * configuration of the lake's store (the session's, plus the lake's own options).
 *
 * <p>Spark's Parquet settings are fixed here rather than taken from the session, so every
 * file is written as DuckDB reads it back unchanged: timestamps as INT64 microseconds (not
 * INT96), decimals as integers where they fit (not the legacy layout), and no Spark field
 * ids of its own (ours are set by {@link FieldIdWriteSupport}).
 */
final class DuckLakeWriterFactory implements DataWriterFactory {
  private static final long serialVersionUID = 1L;
  final String table;
  final String directory;
  final long targetFileSize;
  final PartitionKeys partitionKeys;
  /** Rows carry their own row id in a last column (an update's new rows). */
  final boolean rowIds;
  /** How a stream's rows become the table's (null: they are laid out as its columns). */
  final WriteLayout layout;
  private final String schema;
  private final String fieldIds;
  private final SerializableConfiguration hadoop;

  /** DuckDB's column of an updated row's own id, and its field id. */
  static final String ROW_ID_COLUMN = "_ducklake_internal_row_id";
  static final long ROW_ID_FIELD_ID = 2147483540L;

  DuckLakeWriterFactory(
      String table,
      String directory,
      String schema,
      String fieldIds,
      long targetFileSize,
      PartitionKeys partitionKeys,
      Configuration hadoop) {
    this.table = table;
    this.directory = directory;
    this.schema = schema;
    this.fieldIds = fieldIds;
    this.targetFileSize = targetFileSize;
    this.partitionKeys = partitionKeys;
    this.hadoop = new SerializableConfiguration(hadoop);
    this.rowIds = false;
    this.layout = null;
  }

  private DuckLakeWriterFactory(
      DuckLakeWriterFactory plain,
      String schema,
      String fieldIds,
      boolean rowIds,
      WriteLayout layout) {
    this.table = plain.table;
    this.directory = plain.directory;
    this.schema = schema;
    this.fieldIds = fieldIds;
    this.targetFileSize = plain.targetFileSize;
    this.partitionKeys = plain.partitionKeys;
    this.hadoop = plain.hadoop;
    this.rowIds = rowIds;
    this.layout = layout;
  }

  /** The same write's factory for rows of another layout (a stream's: {@link WriteLayout}). */
  DuckLakeWriterFactory withLayout(WriteLayout layout) {
    return layout == null ? this : new DuckLakeWriterFactory(this, schema, fieldIds, rowIds, layout);
  }

  /**
   * The same write's factory for rows followed by their own row id (an update's new rows, as
   * DuckDB writes them: a last column {@value #ROW_ID_COLUMN} of field id {@value
   * #ROW_ID_FIELD_ID}).
   */
  DuckLakeWriterFactory withRowIds() {
    StructType struct =
        ((StructType) DataType.fromJson(schema))
            .add(ROW_ID_COLUMN, org.apache.spark.sql.types.DataTypes.LongType, false);
    com.fasterxml.jackson.databind.node.ArrayNode ids;
    try {
      ids = (com.fasterxml.jackson.databind.node.ArrayNode) PlannerProcess.JSON.readTree(fieldIds);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("ducklake: unreadable field ids of a write", e);
    }
    ids.addObject().put("id", ROW_ID_FIELD_ID).putArray("children");
    return new DuckLakeWriterFactory(this, struct.json(), ids.toString(), true, layout);
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    Configuration conf = new Configuration(hadoop.value());
    ParquetWriteSupport.setSchema((StructType) DataType.fromJson(schema), conf);
    conf.set("spark.sql.parquet.writeLegacyFormat", "false");
    conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS");
    conf.set("spark.sql.parquet.fieldId.write.enabled", "false");
    conf.set(FieldIdWriteSupport.IDS, fieldIds);
    return new DuckLakeDataWriter(this, conf);
  }
}
