package io.ducklake_datafusion.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * A scan's input partitions: its files cut into slices and packed as Spark packs a Parquet
 * scan (next fit of slices sorted by length, each slice counted with the open cost), and the
 * planner's exact rows as one more partition.
 */
final class FileSlices {
  private FileSlices() {}

  /** A byte range of one file, read by the reader function of its group. */
  static final class Slice implements Serializable {
    private static final long serialVersionUID = 1L;
    final int group;
    final String url;
    final long start;
    final long length;
    final long fileSize;
    final boolean masked;
    /** The file's row count in the catalog (what a whole-file read must return). */
    final long fileRows;
    /** The file's catalog id (the metadata column {@code _ducklake_file_id}). */
    final long fileId;
    /** The id of the file's first row (-1: not asked for); a row's is this plus its position. */
    final long rowIdStart;

    Slice(
        int group,
        String url,
        long start,
        long length,
        long fileSize,
        boolean masked,
        long fileRows,
        long fileId,
        long rowIdStart) {
      this.group = group;
      this.url = url;
      this.start = start;
      this.length = length;
      this.fileSize = fileSize;
      this.masked = masked;
      this.fileRows = fileRows;
      this.fileId = fileId;
      this.rowIdStart = rowIdStart;
    }

    /** Whether the slice is its whole file (a reader without filters returns every row). */
    boolean wholeFile() {
      return start == 0 && length == fileSize;
    }
  }

  /** Slices of files read by Spark's Parquet reader. */
  static final class FilesPartition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final Slice[] slices;

    FilesPartition(Slice[] slices) {
      this.slices = slices;
    }
  }

  /** Rows the planner read exactly, as an Arrow IPC stream of the scan's read schema. */
  static final class RowsPartition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final byte[] ipc;

    RowsPartition(byte[] ipc) {
      this.ipc = ipc;
    }
  }

  /**
   * The longest slice of these files (Spark's {@code maxSplitBytes}): files longer than this
   * are cut into several slices.
   */
  static long maxSplit(SparkSession session, List<PlannedFiles.File> files) {
    long maxPartitionBytes = bytesConf(session, "spark.sql.files.maxPartitionBytes", 128L << 20);
    long openCost = bytesConf(session, "spark.sql.files.openCostInBytes", 4L << 20);
    int parallelism = Math.max(1, session.sparkContext().defaultParallelism());
    long total = 0;
    for (PlannedFiles.File file : files) {
      total += Math.max(file.size, 0) + openCost;
    }
    return Math.min(maxPartitionBytes, Math.max(openCost, total / parallelism));
  }

  /**
   * {@code rowIdStarts}: each file's first row id, for a scan with metadata columns (else
   * empty).
   */
  static InputPartition[] partitions(
      SparkSession session,
      List<PlannedFiles.File> files,
      int[] fileGroup,
      long[] rowIdStarts,
      byte[] exactRows) {
    long openCost = bytesConf(session, "spark.sql.files.openCostInBytes", 4L << 20);
    long maxSplit = maxSplit(session, files);
    List<Slice> slices = new ArrayList<>();
    for (int f = 0; f < files.size(); f++) {
      PlannedFiles.File file = files.get(f);
      long size = Math.max(file.size, 0);
      boolean masked = file.deleted != null;
      long rowIdStart = f < rowIdStarts.length ? rowIdStarts[f] : -1;
      long step = size <= maxSplit ? Math.max(size, 1) : maxSplit;
      for (long start = 0; start < Math.max(size, 1); start += step) {
        long length = Math.min(step, size - start);
        slices.add(
            new Slice(
                fileGroup[f],
                file.hadoopUrl,
                start,
                length,
                file.size,
                masked,
                file.recordCount,
                file.dataFileId,
                rowIdStart));
      }
    }
    slices.sort(Comparator.comparingLong((Slice s) -> s.length).reversed());
    List<InputPartition> partitions = new ArrayList<>();
    List<Slice> current = new ArrayList<>();
    long currentSize = 0;
    for (Slice slice : slices) {
      if (currentSize + slice.length > maxSplit && !current.isEmpty()) {
        partitions.add(new FilesPartition(current.toArray(new Slice[0])));
        current.clear();
        currentSize = 0;
      }
      currentSize += slice.length + openCost;
      current.add(slice);
    }
    if (!current.isEmpty()) {
      partitions.add(new FilesPartition(current.toArray(new Slice[0])));
    }
    if (exactRows != null) {
      partitions.add(new RowsPartition(exactRows));
    }
    return partitions.toArray(new InputPartition[0]);
  }

  private static long bytesConf(SparkSession session, String key, long fallback) {
    String text = session.conf().get(key, null);
    if (text == null || text.isEmpty()) {
      return fallback;
    }
    return org.apache.spark.network.util.JavaUtils.byteStringAsBytes(text);
  }
}
