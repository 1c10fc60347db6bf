package io.ducklake_datafusion.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.DeltaWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One task attempt's part of a row-level change: the rows it deletes (named by row id, file
 * and position, sent to the driver), an update's new rows (written with their own row ids:
 * {@link DuckLakeWriterFactory#withRowIds}) and inserted rows (written as an append writes
 * them). Rows arrive in no particular order, so a partitioned table's rows go to one file
 * writer per partition.
 */
final class DuckLakeDeltaWriter implements DeltaWriter<InternalRow> {
  /** What every task of the change needs: the append's writer factory, the metadata's order. */
  static final class Factory implements DeltaWriterFactory {
    private static final long serialVersionUID = 1L;
    private final DuckLakeWriterFactory inserts;
    private final DuckLakeWriterFactory updates;
    private final int fileIdOrdinal;
    private final int positionOrdinal;

    Factory(DuckLakeWriterFactory inserts, int fileIdOrdinal, int positionOrdinal) {
      this.inserts = inserts;
      this.updates = inserts.withRowIds();
      this.fileIdOrdinal = fileIdOrdinal;
      this.positionOrdinal = positionOrdinal;
    }

    @Override
    public DeltaWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new DuckLakeDeltaWriter(this, partitionId, taskId);
    }
  }

  /** A task's commit message: its files and its deleted rows. */
  static final class Message implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final List<WrittenFile> files;
    final DeletedRowIds deleted;

    Message(List<WrittenFile> files, DeletedRowIds deleted) {
      this.files = files;
      this.deleted = deleted;
    }
  }

  private final Factory job;
  private final Fanout inserts;
  private final Fanout updates;
  private final DeletedRowIds deleted = new DeletedRowIds();
  private final JoinedRow withRowId = new JoinedRow();
  private boolean writing;

  private DuckLakeDeltaWriter(Factory job, int partitionId, long taskId) {
    this.job = job;
    this.inserts = new Fanout(job.inserts, partitionId, taskId);
    this.updates = new Fanout(job.updates, partitionId, taskId);
  }

  @Override
  public void delete(InternalRow metadata, InternalRow id) {
    boolean inlined = metadata.isNullAt(job.fileIdOrdinal);
    if (inlined != metadata.isNullAt(job.positionOrdinal) || id.isNullAt(0)) {
      throw new IllegalStateException("ducklake: a row to change came without its row id or place");
    }
    deleted.add(
        id.getLong(0),
        inlined ? -1 : metadata.getLong(job.fileIdOrdinal),
        inlined ? -1 : metadata.getLong(job.positionOrdinal));
  }

  @Override
  public void update(InternalRow metadata, InternalRow id, InternalRow row) throws IOException {
    delete(metadata, id);
    firstRow();
    updates.write(withRowId.apply(row, id));
  }

  @Override
  public void insert(InternalRow row) throws IOException {
    firstRow();
    inserts.write(row);
  }

  private void firstRow() {
    if (!writing) {
      writing = true;
      TaskFaults.whileWriting();
    }
  }

  @Override
  public WriterCommitMessage commit() throws IOException {
    List<WrittenFile> files = new ArrayList<>(inserts.finish());
    files.addAll(updates.finish());
    TaskFaults.afterWrite(files);
    return new Message(files, deleted);
  }

  @Override
  public void abort() throws IOException {
    IOException failure = null;
    for (Fanout fanout : new Fanout[] {inserts, updates}) {
      try {
        fanout.abort();
      } catch (IOException e) {
        failure = failure == null ? e : failure;
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public void close() {
    inserts.close();
    updates.close();
  }

  /** One file writer per partition of a partitioned table (one for an unpartitioned one). */
  private static final class Fanout {
    private final DuckLakeWriterFactory factory;
    private final int partitionId;
    private final long taskId;
    private final Map<List<Object>, DuckLakeDataWriter> writers = new LinkedHashMap<>();

    Fanout(DuckLakeWriterFactory factory, int partitionId, long taskId) {
      this.factory = factory;
      this.partitionId = partitionId;
      this.taskId = taskId;
    }

    void write(InternalRow row) throws IOException {
      Object[] values = factory.partitionKeys.of(row);
      for (int i = 0; i < values.length; i++) {
        if (values[i] instanceof byte[]) { // (compared by content, as the writer compares)
          values[i] = java.nio.ByteBuffer.wrap((byte[]) values[i]);
        }
      }
      List<Object> key = Arrays.asList(values);
      DuckLakeDataWriter writer = writers.get(key);
      if (writer == null) {
        writer = (DuckLakeDataWriter) factory.createWriter(partitionId, taskId);
        writers.put(key, writer);
      }
      writer.write(row);
    }

    List<WrittenFile> finish() throws IOException {
      List<WrittenFile> files = new ArrayList<>();
      for (DuckLakeDataWriter writer : writers.values()) {
        files.addAll(writer.finishAll());
      }
      return files;
    }

    void abort() throws IOException {
      IOException failure = null;
      for (DuckLakeDataWriter writer : writers.values()) {
        try {
          writer.abort();
        } catch (IOException e) {
          failure = failure == null ? e : failure;
        }
      }
      if (failure != null) {
        throw failure;
      }
    }

    void close() {
      writers.values().forEach(DuckLakeDataWriter::close);
    }
  }
}
