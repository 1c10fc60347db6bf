package io.ducklake_datafusion.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.hadoop.fs.Path;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import scala.Function1;
import scala.collection.Iterator;

/**
 * Reads a DuckLake scan's partitions on the executors: file slices with Spark's own Parquet
 * reader functions (built on the driver, one per group of files with the same physical
 * columns), deleted rows dropped by their row index, and the planner's exact rows from Arrow.
 *
 * <p>The position of each row of a file with deletes comes from one of two places. A whole
 * file read without filters (full scans: the common case) returns every row in file order, so
 * the positions are counted, batch by batch, and checked against the file's row count at its
 * end. A file split into slices, or read with the query's filters (Spark's reader then skips
 * row groups and pages), reads Spark's row-index column instead; Spark fills that column one
 * boxed value at a time, which cost a quarter of a full scan's time when every file with
 * deletes read it.
 *
 * <p>A batch with no deleted row is returned as it is; of a batch with deleted rows, {@link
 * KeptRows} makes a batch of the kept rows, without the row-index column. A scan with row
 * metadata columns ({@link RowMetadata}) reads every file's row index and puts the position,
 * the file's id and the row id (the file's first plus the position) in its place. In row mode (a schema Spark's vectorised reader does not
 * take) the deleted rows are skipped and the row index, where read, projected away.
 */
final class DuckLakeReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final Function1<PartitionedFile, Iterator<InternalRow>>[] readers;
  private final boolean[] rowIndex;
  private final StructType output;
  private final boolean columnar;
  private final Broadcast<DeletedRows> deletes;
  /** The metadata columns after {@code output}'s ({@link RowMetadata#kind}); none: empty. */
  private final int[] metadata;

  DuckLakeReaderFactory(
      Function1<PartitionedFile, Iterator<InternalRow>>[] readers,
      boolean[] rowIndex,
      StructType output,
      boolean columnar,
      Broadcast<DeletedRows> deletes,
      int[] metadata) {
    this.readers = readers;
    this.rowIndex = rowIndex;
    this.output = output;
    this.columnar = columnar;
    this.deletes = deletes;
    this.metadata = metadata;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return columnar;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    if (partition instanceof FileSlices.RowsPartition) {
      return new ArrowRows<>(((FileSlices.RowsPartition) partition).ipc, false);
    }
    return new FilesReader<>(((FileSlices.FilesPartition) partition).slices, false);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    if (partition instanceof FileSlices.RowsPartition) {
      return new ArrowRows<>(((FileSlices.RowsPartition) partition).ipc, true);
    }
    return new FilesReader<>(((FileSlices.FilesPartition) partition).slices, true);
  }

  /** The slices of one partition, read one after another. */
  private final class FilesReader<T> implements PartitionReader<T> {
    private final FileSlices.Slice[] slices;
    private final boolean batches;
    private int next;
    private Iterator<InternalRow> values;
    private FileSlices.Slice slice;
    private DeletedRows.Cursor cursor;
    /** Whether the slice's reader returns Spark's row index (else: positions are counted). */
    private boolean indexed;
    /** The position of the next row of a slice whose positions are counted. */
    private long position;
    private int[] selected = new int[0];
    private final KeptRows keptRows = new KeptRows();
    private UnsafeProjection dropRowIndex;
    private Object current;
    private final OnHeapColumnVector[] metadataVectors = new OnHeapColumnVector[metadata.length];
    private int metadataCapacity;

    FilesReader(FileSlices.Slice[] slices, boolean batches) {
      this.slices = slices;
      this.batches = batches;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (values != null && values.hasNext()) {
          Object value = values.next();
          current =
              metadata.length > 0
                  ? withMetadata(value)
                  : !slice.masked ? value : indexed ? keptByIndex(value) : keptByCount(value);
          if (current != null) {
            return true;
          }
          continue;
        }
        if (values != null && slice.masked && !indexed) {
          checkCounted();
        }
        if (next >= slices.length) {
          return false;
        }
        open(slices[next++]);
      }
    }

    private void open(FileSlices.Slice slice) {
      this.slice = slice;
      Path path = new Path(slice.url);
      PartitionedFile file =
          new PartitionedFile(
              InternalRow.empty(),
              SparkPath.fromPath(path),
              slice.start,
              slice.length,
              new String[0],
              0L,
              slice.fileSize,
              ScalaBridge.emptyMap());
      cursor = slice.masked ? deletes.value().of(path.toString(), slice.fileSize) : null;
      indexed = rowIndex[slice.group];
      position = 0;
      if (slice.masked && !indexed && !slice.wholeFile()) {
        throw new IllegalStateException(
            "ducklake: file " + slice.url + " is split but its row positions are counted");
      }
      values = readers[slice.group].apply(file);
    }

    /**
     * A whole file read without filters returned every one of its rows, or the positions
     * counted were not the file's: fail rather than answer with the wrong rows deleted.
     */
    private void checkCounted() {
      if (slice.fileRows >= 0 && position != slice.fileRows) {
        throw new IllegalStateException(
            ErrorNames.text(
                ErrorNames.DATA_FILE_CORRUPT,
                "data file "
                    + slice.url
                    + " returned "
                    + position
                    + " rows but the catalog says it holds "
                    + slice.fileRows
                    + ": it was replaced after the lake wrote it; restore it, or read a "
                    + "snapshot that does not use it"));
      }
    }

    /** The rows of a batch or row of counted positions that are not deleted (null: none). */
    private Object keptByCount(Object value) {
      if (value instanceof ColumnarBatch) {
        ColumnarBatch batch = (ColumnarBatch) value;
        int rows = batch.numRows();
        long first = position;
        position += rows;
        if (selected.length < rows) {
          selected = new int[rows];
        }
        int kept = cursor.select(first, rows, selected);
        return kept == rows ? batch : selectedRows(batch, batch.numCols(), kept);
      }
      return cursor.isDeleted(position++) ? null : value;
    }

    /** The kept rows of a batch's first {@code width} columns (null: none). */
    private ColumnarBatch selectedRows(ColumnarBatch batch, int width, int kept) {
      return kept == 0 ? null : keptRows.of(batch, width, selected, kept);
    }

    /** The value without its deleted rows and row index (null: nothing left). */
    private Object keptByIndex(Object value) {
      int width = output.fields().length;
      if (value instanceof ColumnarBatch) {
        ColumnarBatch batch = (ColumnarBatch) value;
        int rows = batch.numRows();
        ColumnVector positions = batch.column(width);
        if (selected.length < rows) {
          selected = new int[rows];
        }
        int kept;
        long first = rows == 0 ? 0 : positions.getLong(0);
        if (rows > 0 && positions.getLong(rows - 1) - first == rows - 1) {
          kept = cursor.select(first, rows, selected); // no row skipped inside the batch
        } else {
          kept = 0;
          for (int i = 0; i < rows; i++) {
            if (!cursor.isDeleted(positions.getLong(i))) {
              selected[kept++] = i;
            }
          }
        }
        if (kept == rows) {
          ColumnVector[] columns = new ColumnVector[width];
          for (int c = 0; c < width; c++) {
            columns[c] = batch.column(c);
          }
          return rows == 0 ? null : new ColumnarBatch(columns, rows);
        }
        return selectedRows(batch, width, kept);
      }
      InternalRow row = (InternalRow) value;
      if (cursor.isDeleted(row.getLong(width))) {
        return null;
      }
      if (dropRowIndex == null) {
        dropRowIndex = UnsafeProjection.create(output);
      }
      return dropRowIndex.apply(row);
    }

    /**
     * The value's kept rows (all, in a file without deletes) with the metadata columns in
     * place of the row index: the position is the row index, the row id the file's first row
     * id plus the position (null: nothing left).
     */
    private Object withMetadata(Object value) {
      int width = output.fields().length;
      if (!(value instanceof ColumnarBatch)) {
        InternalRow row = (InternalRow) value;
        long position = row.getLong(width);
        if (slice.masked && cursor.isDeleted(position)) {
          return null;
        }
        Object[] values = new Object[width + metadata.length];
        for (int c = 0; c < width; c++) {
          values[c] = row.isNullAt(c) ? null : row.get(c, output.fields()[c].dataType());
        }
        for (int m = 0; m < metadata.length; m++) {
          values[width + m] = metadataValue(metadata[m], position);
        }
        return new GenericInternalRow(values);
      }
      ColumnarBatch batch = (ColumnarBatch) value;
      int rows = batch.numRows();
      ColumnVector positions = batch.column(width);
      if (selected.length < rows) {
        selected = new int[rows];
      }
      int kept = 0;
      for (int i = 0; i < rows; i++) {
        if (!slice.masked || !cursor.isDeleted(positions.getLong(i))) {
          selected[kept++] = i;
        }
      }
      if (kept == 0) {
        return null;
      }
      ColumnVector[] columns = new ColumnVector[width + metadata.length];
      ColumnarBatch data = kept == rows ? batch : keptRows.of(batch, width, selected, kept);
      for (int c = 0; c < width; c++) {
        columns[c] = data.column(c);
      }
      if (metadataCapacity < kept) {
        closeMetadataVectors();
        metadataCapacity = Math.max(kept, rows);
        for (int m = 0; m < metadata.length; m++) {
          metadataVectors[m] = new OnHeapColumnVector(metadataCapacity, DataTypes.LongType);
        }
      }
      for (int m = 0; m < metadata.length; m++) {
        OnHeapColumnVector vector = metadataVectors[m];
        vector.reset();
        for (int i = 0; i < kept; i++) {
          vector.putLong(i, metadataValue(metadata[m], positions.getLong(selected[i])));
        }
        columns[width + m] = vector;
      }
      return new ColumnarBatch(columns, kept);
    }

    private long metadataValue(int kind, long position) {
      if (kind == 0) {
        if (slice.rowIdStart < 0) {
          throw new IllegalStateException(
              "ducklake: file " + slice.url + " was planned without its first row id");
        }
        return slice.rowIdStart + position;
      }
      return kind == 1 ? slice.fileId : position;
    }

    @Override
    @SuppressWarnings("unchecked")
    public T get() {
      if (batches && !(current instanceof ColumnarBatch)) {
        throw new IllegalStateException("ducklake: Spark's reader returned rows for a columnar scan");
      }
      return (T) current;
    }

    @Override
    public void close() {
      // Spark's reader functions close their files at the end of each file or of the task
      keptRows.close();
      closeMetadataVectors();
    }

    private void closeMetadataVectors() {
      for (int m = 0; m < metadataVectors.length; m++) {
        if (metadataVectors[m] != null) {
          metadataVectors[m].close();
          metadataVectors[m] = null;
        }
      }
      metadataCapacity = 0;
    }
  }

  /**
   * A vector of the stream's root, which the next batch is loaded into: closing it (as Spark
   * may close a batch it has read) must not close the root's vector, whose close drops a
   * struct's children, so the next batch would not load ("should have as many children as in
   * the schema"). The reader's {@link ArrowRows#close} closes the root.
   */
  private static final class RootColumn extends ArrowColumnVector {
    RootColumn(FieldVector vector) {
      super(vector);
    }

    @Override
    public void close() {}
  }

  /** The planner's exact rows: Arrow batches as Spark's Arrow vectors (or their rows). */
  private static final class ArrowRows<T> implements PartitionReader<T> {
    private final RootAllocator allocator = new RootAllocator(Long.MAX_VALUE);
    private final ArrowStreamReader reader;
    private final boolean batches;
    private java.util.Iterator<InternalRow> rows;
    private Object current;

    ArrowRows(byte[] ipc, boolean batches) {
      this.reader = new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator);
      this.batches = batches;
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        if (!batches && rows != null && rows.hasNext()) {
          current = rows.next();
          return true;
        }
        if (!reader.loadNextBatch()) {
          return false;
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        ColumnVector[] columns = new ColumnVector[root.getFieldVectors().size()];
        int i = 0;
        for (FieldVector vector : root.getFieldVectors()) {
          columns[i++] = new RootColumn(vector);
        }
        ColumnarBatch batch = new ColumnarBatch(columns, root.getRowCount());
        if (batches) {
          if (root.getRowCount() == 0) {
            continue;
          }
          current = batch;
          return true;
        }
        rows = batch.rowIterator();
      }
    }

    @Override
    @SuppressWarnings("unchecked")
    public T get() {
      return (T) current;
    }

    @Override
    public void close() throws IOException {
      reader.close();
      allocator.close();
    }
  }
}
