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
  private final String schema;
  private final String fieldIds;
  private final SerializableConfiguration hadoop;

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
