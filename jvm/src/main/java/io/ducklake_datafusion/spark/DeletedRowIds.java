package io.ducklake_datafusion.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The rows a row-level change deletes, as the lake names them: row id, data file id and
 * position in that file (-1 for both of a row inlined in the catalog). A task collects its
 * rows here and sends them to the driver in its commit message; the driver sends all of them
 * to the planner as one blob ({@link #blob}: the three columns one after another, each of
 * little-endian int64s, as {@code _change.deleted_rows} reads them).
 */
final class DeletedRowIds implements Serializable {
  private static final long serialVersionUID = 1L;
  private long[] rowIds = new long[16];
  private long[] fileIds = new long[16];
  private long[] positions = new long[16];
  private int size;

  void add(long rowId, long fileId, long position) {
    if (size == rowIds.length) {
      int grown = size * 2;
      rowIds = Arrays.copyOf(rowIds, grown);
      fileIds = Arrays.copyOf(fileIds, grown);
      positions = Arrays.copyOf(positions, grown);
    }
    rowIds[size] = rowId;
    fileIds[size] = fileId;
    positions[size] = position;
    size++;
  }

  void addAll(DeletedRowIds other) {
    for (int i = 0; i < other.size; i++) {
      add(other.rowIds[i], other.fileIds[i], other.positions[i]);
    }
  }

  int size() {
    return size;
  }

  byte[] blob() {
    if ((long) size * 24 > Integer.MAX_VALUE - 16) {
      throw new DuckLakeException(
          ErrorNames.UNSUPPORTED_FEATURE,
          "a change deleting " + size + " rows is more than one commit of Spark's sends "
              + "(at most " + (Integer.MAX_VALUE / 24) + "); delete them in parts",
          null);
    }
    ByteBuffer buffer = ByteBuffer.allocate(size * 24).order(ByteOrder.LITTLE_ENDIAN);
    for (long[] column : new long[][] {rowIds, fileIds, positions}) {
      for (int i = 0; i < size; i++) {
        buffer.putLong(column[i]);
      }
    }
    return buffer.array();
  }
}
