package io.ducklake_datafusion.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * The files of a plan export ({@code ducklake_datafusion/read/_export.py}, form {@value
 * #VERSION}) that Spark's reader reads: each file's catalog id, size, row count, deleted
 * positions and the physical column holding each table column.
 */
final class PlannedFiles {
  static final String VERSION = "1";
  private static final String VERSION_KEY = "ducklake_datafusion.plan_version";

  /** One data file as the planner exported it. */
  static final class File {
    final long dataFileId;
    final String hadoopUrl;
    final long size;
    final long recordCount;
    final long[] deleted; // ascending, or null
    final String[] physical; // per table column: the file's column, or null (a NULL default)

    File(
        long dataFileId,
        String hadoopUrl,
        long size,
        long recordCount,
        long[] deleted,
        String[] physical) {
      this.dataFileId = dataFileId;
      this.hadoopUrl = hadoopUrl;
      this.size = size;
      this.recordCount = recordCount;
      this.deleted = deleted;
      this.physical = physical;
    }
  }

  private PlannedFiles() {}

  /**
   * Parse {@code export}; {@code hadoopUrls} are its files' URLs as Hadoop spells them, in
   * order (the planner's header).
   */
  static List<File> parse(byte[] export, List<String> hadoopUrls, String table) {
    List<File> files = new ArrayList<>();
    try (RootAllocator allocator = new RootAllocator(Long.MAX_VALUE);
        ArrowStreamReader reader =
            new ArrowStreamReader(new ByteArrayInputStream(export), allocator)) {
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      Map<String, String> metadata = root.getSchema().getCustomMetadata();
      String version = metadata == null ? null : metadata.get(VERSION_KEY);
      if (!VERSION.equals(version)) {
        throw new DuckLakeException(
            ErrorNames.UNSUPPORTED_FEATURE,
            "the planner sent a plan export of version "
                + version
                + " for table "
                + table
                + ", but this jar reads version "
                + VERSION
                + "; use the jar of the same ducklake-datafusion release as the Python package",
            null);
      }
      while (reader.loadNextBatch()) {
        BigIntVector ids = (BigIntVector) root.getVector("data_file_id");
        BigIntVector sizes = (BigIntVector) root.getVector("size");
        BigIntVector records = (BigIntVector) root.getVector("record_count");
        ListVector deleted = (ListVector) root.getVector("deleted");
        BigIntVector positions = (BigIntVector) deleted.getDataVector();
        StructVector layout = (StructVector) root.getVector("layout");
        ListVector sources = (ListVector) layout.getChild("sources");
        StructVector source = (StructVector) sources.getDataVector();
        VarCharVector physicalNames = (VarCharVector) source.getChild("physical");
        BitVector casts = (BitVector) source.getChild("cast");
        VarCharVector snapshotColumn = (VarCharVector) layout.getChild("snapshot_column");
        for (int i = 0; i < root.getRowCount(); i++) {
          if (layout.isNull(i) || !snapshotColumn.isNull(i)) {
            throw contract(table, "file " + files.size() + " has no layout Spark's reader maps");
          }
          long[] gone = null;
          if (!deleted.isNull(i)) {
            int start = deleted.getElementStartIndex(i);
            gone = new long[deleted.getElementEndIndex(i) - start];
            for (int j = 0; j < gone.length; j++) {
              gone[j] = positions.get(start + j);
            }
          }
          int first = sources.getElementStartIndex(i);
          String[] physical = new String[sources.getElementEndIndex(i) - first];
          for (int j = 0; j < physical.length; j++) {
            if (casts.get(first + j) != 0) {
              throw contract(table, "a file needing a cast was handed to Spark's reader");
            }
            physical[j] =
                physicalNames.isNull(first + j)
                    ? null
                    : new String(physicalNames.get(first + j), StandardCharsets.UTF_8);
          }
          if (files.size() >= hadoopUrls.size()) {
            throw contract(table, "more files than Hadoop URLs");
          }
          files.add(
              new File(
                  ids.get(i),
                  hadoopUrls.get(files.size()),
                  sizes.isNull(i) ? -1 : sizes.get(i),
                  records.get(i),
                  gone,
                  physical));
        }
      }
    } catch (java.nio.channels.ClosedByInterruptException | java.io.InterruptedIOException e) {
      // the thread was interrupted (a streaming query stopped): not a broken plan, and
      // Spark recognises the stop by this cause
      throw new java.io.UncheckedIOException(e);
    } catch (IOException e) {
      throw contract(table, "the plan export cannot be read: " + e.getMessage());
    }
    if (files.size() != hadoopUrls.size()) {
      throw contract(table, files.size() + " files but " + hadoopUrls.size() + " Hadoop URLs");
    }
    return files;
  }

  private static DuckLakeException contract(String table, String what) {
    return new DuckLakeException(
        ErrorNames.INVALID_OPTION, "the plan of table " + table + " breaks its form: " + what, null);
  }
}
