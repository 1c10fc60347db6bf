package io.ducklake_datafusion.spark;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows {@code selected} of a column, in order: a view, nothing copied.
 *
 * <p>{@link KeptRows} copies the kept rows of fixed-width columns; the rows of the other
 * columns of a batch with deletes (strings, decimals, nested values) are seen through this
 * view, so such a column costs one int per kept row instead of a copy of every value (nested
 * values included: structs reach their fields through {@link #getChild}, which is a view
 * too). The view does not own the vector: closing it closes nothing.
 */
final class SelectedColumnVector extends ColumnVector {
  private final ColumnVector base;
  private final int[] selected;
  private final int rows;

  SelectedColumnVector(ColumnVector base, int[] selected, int rows) {
    super(base.dataType());
    this.base = base;
    this.selected = selected;
    this.rows = rows;
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return base.hasNull();
  }

  @Override
  public int numNulls() {
    if (!base.hasNull()) {
      return 0;
    }
    int nulls = 0;
    for (int i = 0; i < rows; i++) {
      if (base.isNullAt(selected[i])) {
        nulls++;
      }
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return base.isNullAt(selected[rowId]);
  }

  @Override
  public boolean getBoolean(int rowId) {
    return base.getBoolean(selected[rowId]);
  }

  @Override
  public byte getByte(int rowId) {
    return base.getByte(selected[rowId]);
  }

  @Override
  public short getShort(int rowId) {
    return base.getShort(selected[rowId]);
  }

  @Override
  public int getInt(int rowId) {
    return base.getInt(selected[rowId]);
  }

  @Override
  public long getLong(int rowId) {
    return base.getLong(selected[rowId]);
  }

  @Override
  public float getFloat(int rowId) {
    return base.getFloat(selected[rowId]);
  }

  @Override
  public double getDouble(int rowId) {
    return base.getDouble(selected[rowId]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return base.getArray(selected[rowId]);
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    return base.getMap(selected[rowId]);
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return base.getDecimal(selected[rowId], precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return base.getUTF8String(selected[rowId]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    return base.getBinary(selected[rowId]);
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    ColumnVector child = base.getChild(ordinal);
    return child == null ? null : new SelectedColumnVector(child, selected, rows);
  }
}
