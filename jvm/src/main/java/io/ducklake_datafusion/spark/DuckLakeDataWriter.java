package io.ducklake_datafusion.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;

/**
 * One task attempt's writer: its rows into new Parquet files below the table's directory,
 * a new file after each {@code target_file_size} bytes, written by Spark's own Parquet write
 * support with the table's column ids as field ids ({@link FieldIdWriteSupport}).
 *
 * <p>Each file is named anew ({@code ducklake-<uuid>.parquet}, as DuckDB names its files), so
 * a retried or speculative attempt never writes over another's file; only the attempt Spark
 * commits sends its files to the driver, and {@link #abort} deletes the files of one it does
 * not. A partitioned table's rows come sorted by its key columns (the write's required
 * ordering), and a new file starts where the partition changes. Statistics are kept whole up to {@value #STATISTICS_LENGTH} bytes (Parquet's Java
 * writer would otherwise drop a column's statistics, null count included, past 4 KB), above
 * the 256 bytes the catalog keeps of a text bound.
 */
final class DuckLakeDataWriter implements DataWriter<InternalRow> {
  static final int STATISTICS_LENGTH = 1024;
  private static final int ROWS_BETWEEN_SIZE_CHECKS = 1024;
  private final DuckLakeWriterFactory job;
  private final Configuration conf;
  /** A stream's rows into the table's layout (null: they are in it). */
  private final UnsafeProjection layout;
  private final List<WrittenFile> written = new ArrayList<>();
  private final List<Path> started = new ArrayList<>();
  private ParquetWriter<InternalRow> writer;
  private Path current;
  private String currentName;
  private long rows;
  private Object[] partition;
  private String partitionRow;

  DuckLakeDataWriter(DuckLakeWriterFactory job, Configuration conf) {
    this.job = job;
    this.conf = conf;
    this.layout = job.layout == null ? null : job.layout.projection();
  }

  @Override
  public void write(InternalRow given) throws IOException {
    InternalRow row = layout == null ? given : layout.apply(given);
    if (!job.partitionKeys.isEmpty()) {
      Object[] key = job.partitionKeys.of(row);
      if (writer != null && !Arrays.deepEquals(key, partition)) {
        finish(); // rows come sorted by the keys' columns: this partition is complete
      }
      if (writer == null) {
        partition = key;
        partitionRow = job.partitionKeys.raw(row).toString();
      }
    }
    if (writer == null) {
      open();
    }
    writer.write(row);
    rows++;
    if (rows % ROWS_BETWEEN_SIZE_CHECKS == 0 && writer.getDataSize() >= job.targetFileSize) {
      finish();
    }
  }

  @Override
  public WriterCommitMessage commit() throws IOException {
    return new WrittenFile.Message(finishAll());
  }

  /** Close the open file; every file this writer wrote. */
  List<WrittenFile> finishAll() throws IOException {
    finish();
    return written;
  }

  @Override
  public void abort() throws IOException {
    closeQuietly();
    List<String> left = delete(started, conf);
    started.clear();
    if (!left.isEmpty()) {
      throw new IOException(
          "ducklake: a failed write to " + job.table + " could not delete its files " + left
              + "; no snapshot refers to them (ducklake_delete_orphaned_files removes them)");
    }
  }

  @Override
  public void close() {
    closeQuietly();
  }

  private void open() throws IOException {
    currentName = "ducklake-" + UUID.randomUUID() + ".parquet";
    current = new Path(job.directory + currentName);
    started.add(current);
    OutputFile file = HadoopOutputFile.fromPath(current, conf);
    writer =
        new Builder(file)
            .withConf(conf)
            .withWriteMode(ParquetFileWriter.Mode.CREATE)
            .withCompressionCodec(CompressionCodecName.SNAPPY)
            .withRowGroupSize(Math.min(job.targetFileSize, ParquetWriter.DEFAULT_BLOCK_SIZE))
            .withStatisticsTruncateLength(STATISTICS_LENGTH)
            .build();
    rows = 0;
  }

  /** Close the open file, if any, and keep its facts for the commit message. */
  private void finish() throws IOException {
    if (writer == null) {
      return;
    }
    ParquetWriter<InternalRow> closing = writer;
    writer = null;
    closing.close();
    FileSystem fs = current.getFileSystem(conf);
    long size = fs.getFileStatus(current).getLen();
    written.add(
        new WrittenFile(
            currentName, size, footer(fs, current, size), partitionRow, job.rowIds));
  }

  /** The file's footer: its Thrift metadata, before a 4-byte length and the magic. */
  static byte[] footer(FileSystem fs, Path path, long size) throws IOException {
    try (FSDataInputStream in = fs.open(path)) {
      byte[] tail = new byte[8];
      in.readFully(size - 8, tail);
      int length =
          (tail[0] & 0xff) | (tail[1] & 0xff) << 8 | (tail[2] & 0xff) << 16 | (tail[3] & 0xff) << 24;
      if (length <= 0 || length > size - 12 || tail[4] != 'P' || tail[5] != 'A' || tail[6] != 'R'
          || tail[7] != '1') {
        throw new IOException("ducklake: " + path + " does not end as a Parquet file");
      }
      byte[] footer = new byte[length];
      in.readFully(size - 8 - length, footer);
      return footer;
    }
  }

  private void closeQuietly() {
    if (writer != null) {
      try {
        writer.close();
      } catch (IOException | RuntimeException e) {
        // the file is deleted by abort, or never committed
      }
      writer = null;
    }
  }

  /** Delete {@code paths}; the ones that could not be deleted (and still exist). */
  static List<String> delete(List<Path> paths, Configuration conf) {
    List<String> left = new ArrayList<>();
    for (Path path : paths) {
      try {
        FileSystem fs = path.getFileSystem(conf);
        if (!fs.delete(path, false) && fs.exists(path)) {
          left.add(path.toString());
        }
      } catch (IOException | RuntimeException e) {
        left.add(path.toString());
      }
    }
    return left;
  }

  /** Parquet's writer builder over {@link FieldIdWriteSupport}. */
  static final class Builder extends ParquetWriter.Builder<InternalRow, Builder> {
    Builder(OutputFile file) {
      super(file);
    }

    @Override
    protected Builder self() {
      return this;
    }

    /**
     * Spark's write support takes its calendar rebase from the session's SQL settings when
     * built: built here under settings that write dates and timestamps as they are (the
     * proleptic Gregorian calendar DuckDB reads), never shifted to the Julian calendar
     * (LEGACY) nor refused before 1582 (EXCEPTION, Spark 3.5's default).
     */
    @Override
    protected WriteSupport<InternalRow> getWriteSupport(Configuration conf) {
      // (an executor's settings are read-only: a copy with the two rebase settings changed)
      SQLConf settings = new SQLConf();
      SQLConf.get()
          .getAllConfs()
          .foreach(
              (scala.Function1<scala.Tuple2<String, String>, Object>)
                  entry -> {
                    settings.setConfString(entry._1(), entry._2());
                    return null;
                  });
      settings.setConfString("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED");
      settings.setConfString("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED");
      return SQLConf.withExistingConf(settings, () -> new FieldIdWriteSupport());
    }
  }
}
