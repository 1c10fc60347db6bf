package io.ducklake_datafusion.spark;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * A streaming query's writes to a DuckLake table: each micro-batch (epoch) is written by the
 * executors as a batch write is, and committed by the driver as one snapshot that records the
 * query's id and the batch's ({@link Committer}).
 *
 * <p>Exactly once across restarts: a query that dies after a batch's commit and before its
 * checkpoint runs the batch again when restarted; the planner finds the snapshot of that
 * query and batch, commits nothing, and the batch's new files are deleted here. A commit whose
 * outcome is unknown (the planner died or could not be heard after being asked to commit, or
 * the catalog's COMMIT went unanswered) keeps the epoch's files, as a batch write does: Spark
 * aborts the epoch, and the restarted query finds the batch committed or writes it again.
 */
final class DuckLakeStreamingWrite implements StreamingWrite {
  /** Commits one epoch's files; false when that epoch of the query was committed already. */
  interface Committer {
    boolean commit(long epochId, List<WrittenFile> files);
  }

  private final WriteTarget target;
  private final WriteLayout layout;
  private final Committer committer;
  private final SparkSession session;
  /** Epochs whose commit may have happened: their files are never deleted. */
  private final java.util.Set<Long> outcomeUnknown =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  DuckLakeStreamingWrite(
      WriteTarget target, WriteLayout layout, Committer committer, SparkSession session) {
    this.target = target;
    this.layout = layout;
    this.committer = committer;
    this.session = session;
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    return new Factory(target.factory(session).withLayout(layout));
  }

  @Override
  public boolean useCommitCoordinator() {
    return true;
  }

  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    List<WrittenFile> files = WrittenFile.of(messages);
    boolean committed;
    try {
      committed = committer.commit(epochId, files);
    } catch (RuntimeException e) {
      if (DuckLakeBatchWrite.outcomeUnknown(e)) {
        outcomeUnknown.add(epochId);
        throw e;
      }
      try { // the planner ran the commit and raised: nothing was committed
        target.deleteUncommitted(files, session, "a refused micro-batch of " + target.table);
      } catch (DuckLakeException orphans) {
        e.addSuppressed(orphans);
      }
      throw e;
    }
    if (!committed) { // a replayed batch: its rows are in the lake already
      target.deleteUncommitted(files, session, "a replayed micro-batch of " + target.table);
    }
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    List<WrittenFile> files = WrittenFile.of(messages);
    if (outcomeUnknown.contains(epochId)) {
      throw new DuckLakeException(
          ErrorNames.DUCKLAKE,
          "the commit of micro-batch " + epochId + " to " + target.table + " may or may not "
              + "have happened (the planner failed while committing); its " + files.size()
              + " files under " + target.directory + " were kept: the restarted query finds "
              + "the batch committed, or writes it again",
          null);
    }
    target.deleteUncommitted(files, session, "a failed micro-batch of " + target.table);
  }

  @Override
  public String toString() {
    return "DuckLakeStreamingWrite(" + target.table + ")";
  }

  /** The executors' writers of one epoch: the batch writer's, per epoch. */
  private static final class Factory implements StreamingDataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final DuckLakeWriterFactory files;

    Factory(DuckLakeWriterFactory files) {
      this.files = files;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
      return files.createWriter(partitionId, taskId);
    }
  }
}
