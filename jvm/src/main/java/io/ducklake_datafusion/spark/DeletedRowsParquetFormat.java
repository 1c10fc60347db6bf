package io.ducklake_datafusion.spark;

import java.io.Serializable;
import org.apache.spark.TaskContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.vectorized.OffHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.TaskCompletionListener;
import scala.Function1;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * Spark's own Parquet reader that also says, per row, whether the row was deleted.
 *
 * <p>The read schema carries two columns no data file has: {@value #ROW_INDEX}, which Spark's
 * reader fills with each row's position in its file, and {@value #KEEP}, which this format
 * fills from the file's deleted positions ({@link DeletedRows}, named by the read option
 * {@value #DELETED_ROWS_OPTION}). A filter on {@value #KEEP} then drops the deleted rows: on
 * columnar batches that is one boolean per row, set by a loop over the batch's positions, in
 * place of a per-row join to a mask table.
 */
public class DeletedRowsParquetFormat extends ScalaParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String DELETED_ROWS_OPTION = "ducklake.deleted_rows";
  public static final String ROW_INDEX = "_tmp_metadata_row_index";
  public static final String KEEP = "__ducklake_keep";

  @Override
  protected Function1<PartitionedFile, Iterator<InternalRow>> wrapReader(
      Function1<PartitionedFile, Iterator<InternalRow>> read,
      StructType requiredSchema,
      scala.collection.immutable.Map<String, String> options) {
    Broadcast<DeletedRows> deleted =
        DeletedRows.registered(options.get(DELETED_ROWS_OPTION).getOrElse(() -> null));
    int rowIndex = fieldIndex(requiredSchema, ROW_INDEX);
    int keep = fieldIndex(requiredSchema, KEEP);
    return new KeepReader(read, deleted, rowIndex, keep);
  }

  private static int fieldIndex(StructType schema, String name) {
    for (int i = 0; i < schema.fields().length; i++) {
      if (schema.fields()[i].name().equals(name)) {
        return i;
      }
    }
    throw new IllegalStateException("ducklake: the scan's read schema lacks " + name);
  }

  @Override
  public String shortName() {
    return "parquet-deleted-rows";
  }

  @Override
  public String toString() {
    return "Parquet, deleted rows flagged";
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof DeletedRowsParquetFormat;
  }

  @Override
  public int hashCode() {
    return DeletedRowsParquetFormat.class.hashCode();
  }

  /** The reader of one file: Spark's, with {@value #KEEP} set on every batch or row. */
  static final class KeepReader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> read;
    private final Broadcast<DeletedRows> deleted;
    private final int rowIndex;
    private final int keep;

    KeepReader(
        Function1<PartitionedFile, Iterator<InternalRow>> read,
        Broadcast<DeletedRows> deleted,
        int rowIndex,
        int keep) {
      this.read = read;
      this.deleted = deleted;
      this.rowIndex = rowIndex;
      this.keep = keep;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Iterator<InternalRow> apply(PartitionedFile file) {
      DeletedRows.Cursor deletes = deleted.value().of(file.toPath().toString(), file.fileSize());
      // Spark's reader yields columnar batches typed as rows (the scan casts them back).
      Iterator<Object> batches = (Iterator<Object>) (Iterator<?>) read.apply(file);
      return (Iterator<InternalRow>) (Iterator<?>) new KeepIterator(batches, deletes, rowIndex, keep);
    }
  }

  /** Sets {@value #KEEP} from the row positions of each batch (or row) Spark's reader yields. */
  static final class KeepIterator extends AbstractIterator<Object> {
    private final Iterator<Object> rows;
    private final DeletedRows.Cursor deletes;
    private final int rowIndex;
    private final int keep;
    private WritableColumnVector flags;
    private int flagsCapacity;

    KeepIterator(Iterator<Object> rows, DeletedRows.Cursor deletes, int rowIndex, int keep) {
      this.rows = rows;
      this.deletes = deletes;
      this.rowIndex = rowIndex;
      this.keep = keep;
    }

    @Override
    public boolean hasNext() {
      return rows.hasNext();
    }

    @Override
    public Object next() {
      Object next = rows.next();
      if (next instanceof ColumnarBatch) {
        return mark((ColumnarBatch) next);
      }
      InternalRow row = ((InternalRow) next).copy();
      row.setBoolean(keep, !deletes.isDeleted(row.getLong(rowIndex)));
      return row;
    }

    /**
     * The batch with its {@value #KEEP} column replaced by the flags of its rows. Spark's
     * reader fills a column no file has with a vector marked missing (always null), so the
     * flags go into a vector of this iterator, of the class Spark's generated code expects.
     */
    private ColumnarBatch mark(ColumnarBatch batch) {
      int rows = batch.numRows();
      ColumnVector positionsOfRows = batch.column(rowIndex);
      WritableColumnVector out = flags(batch.column(keep), rows);
      for (int i = 0; i < rows; i++) {
        out.putBoolean(i, !deletes.isDeleted(positionsOfRows.getLong(i)));
      }
      ColumnVector[] columns = new ColumnVector[batch.numCols()];
      for (int i = 0; i < columns.length; i++) {
        columns[i] = i == keep ? out : batch.column(i);
      }
      return new ColumnarBatch(columns, rows);
    }

    private WritableColumnVector flags(ColumnVector like, int rows) {
      if (flags == null || flagsCapacity < rows) {
        if (flags != null) {
          flags.close();
        }
        flagsCapacity = Math.max(rows, 4096);
        flags =
            like instanceof OffHeapColumnVector
                ? new OffHeapColumnVector(flagsCapacity, DataTypes.BooleanType)
                : new OnHeapColumnVector(flagsCapacity, DataTypes.BooleanType);
        TaskContext task = TaskContext.get();
        WritableColumnVector allocated = flags;
        if (task != null) {
          task.addTaskCompletionListener((TaskCompletionListener) context -> allocated.close());
        }
      }
      return flags;
    }
  }
}
