package io.ducklake_datafusion.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.collection.Iterator;

/**
 * Spark's Parquet format with the one signature that differs by Scala version in one place.
 *
 * <p>{@code buildReaderWithPartitionValues} takes the pushed filters as a Scala {@code Seq}:
 * Spark 3.5 (Scala 2.12) declares it with {@code scala.collection.Seq}. This class (one copy per Scala version, in {@code jvm/src/scala-<version>/java},
 * the only source that differs) overrides it and hands Spark's own reader to {@link
 * #wrapReader}, so {@link DeletedRowsParquetFormat} is the same source for both.
 */
public abstract class ScalaParquetFileFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;

  @Override
  public final Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession session,
      StructType dataSchema,
      StructType partitionSchema,
      StructType requiredSchema,
      scala.collection.Seq<Filter> filters,
      scala.collection.immutable.Map<String, String> options,
      Configuration hadoopConf) {
    return wrapReader(
        super.buildReaderWithPartitionValues(
            session, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf),
        requiredSchema,
        options);
  }

  /** The reader of this format: Spark's Parquet reader {@code read}, wrapped. */
  protected abstract Function1<PartitionedFile, Iterator<InternalRow>> wrapReader(
      Function1<PartitionedFile, Iterator<InternalRow>> read,
      StructType requiredSchema,
      scala.collection.immutable.Map<String, String> options);
}
