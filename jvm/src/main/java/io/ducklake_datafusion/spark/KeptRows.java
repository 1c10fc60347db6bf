package io.ducklake_datafusion.spark;

import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The rows of a batch that were not deleted, as a batch of their own: fixed-width columns
 * copied into dense vectors that one file reader reuses batch after batch, the other columns
 * (strings, decimals, nested values) seen through a {@link SelectedColumnVector}.
 *
 * <p>Why copy: Spark's generated code reads a column through virtual calls, which the JIT
 * inlines while every batch brings the same vector class. Views on some batches and Spark's
 * vectors on the others made those calls polymorphic, and a grouped aggregate over a table
 * with deletes spent a third of its time in the view's calls; a copy of a fixed-width value
 * costs less than that. Strings and nested values would be copied byte by byte, so they keep
 * the view (one int per kept row).
 *
 * <p>Not thread-safe, and a returned batch lives until the next call (as Spark's own reader
 * reuses its vectors).
 */
final class KeptRows {
  private OnHeapColumnVector[] dense = new OnHeapColumnVector[0];
  private int capacity;

  /** The batch's first {@code width} columns at the rows {@code selected[0..kept)}. */
  ColumnarBatch of(ColumnarBatch batch, int width, int[] selected, int kept) {
    if (dense.length < width) {
      OnHeapColumnVector[] grown = new OnHeapColumnVector[width];
      System.arraycopy(dense, 0, grown, 0, dense.length);
      dense = grown;
    }
    if (capacity < kept) {
      close();
      capacity = Math.max(kept, batch.numRows());
    }
    ColumnVector[] columns = new ColumnVector[width];
    for (int c = 0; c < width; c++) {
      ColumnVector source = batch.column(c);
      DataType type = source.dataType();
      if (!fixedWidth(type)) {
        columns[c] = new SelectedColumnVector(source, selected, kept);
        continue;
      }
      OnHeapColumnVector target = dense[c];
      if (target == null || !target.dataType().equals(type)) {
        if (target != null) {
          target.close();
        }
        target = new OnHeapColumnVector(capacity, type);
        dense[c] = target;
      }
      target.reset();
      copy(source, target, type, selected, kept);
      columns[c] = target;
    }
    return new ColumnarBatch(columns, kept);
  }

  /** Types whose values are one primitive each in Spark's vectors. */
  private static boolean fixedWidth(DataType type) {
    return type instanceof BooleanType
        || type instanceof ByteType
        || type instanceof ShortType
        || type instanceof IntegerType
        || type instanceof DateType
        || type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType
        || type instanceof FloatType
        || type instanceof DoubleType;
  }

  /**
   * Copies the selected rows. A null row's value is not read: a dictionary-encoded vector
   * holds no valid dictionary id there.
   */
  private static void copy(
      ColumnVector source, OnHeapColumnVector target, DataType type, int[] selected, int kept) {
    boolean nulls = source.hasNull();
    if (type instanceof IntegerType || type instanceof DateType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putInt(i, source.getInt(row));
        }
      }
    } else if (type instanceof LongType
        || type instanceof TimestampType
        || type instanceof TimestampNTZType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putLong(i, source.getLong(row));
        }
      }
    } else if (type instanceof DoubleType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putDouble(i, source.getDouble(row));
        }
      }
    } else if (type instanceof FloatType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putFloat(i, source.getFloat(row));
        }
      }
    } else if (type instanceof ShortType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putShort(i, source.getShort(row));
        }
      }
    } else if (type instanceof ByteType) {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putByte(i, source.getByte(row));
        }
      }
    } else {
      for (int i = 0; i < kept; i++) {
        int row = selected[i];
        if (nulls && source.isNullAt(row)) {
          target.putNull(i);
        } else {
          target.putBoolean(i, source.getBoolean(row));
        }
      }
    }
  }

  /** Frees the dense vectors (a later batch allocates them again). */
  void close() {
    for (int c = 0; c < dense.length; c++) {
      if (dense[c] != null) {
        dense[c].close();
        dense[c] = null;
      }
    }
  }
}
