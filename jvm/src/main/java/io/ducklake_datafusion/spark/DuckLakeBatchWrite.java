package io.ducklake_datafusion.spark;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One Spark job's write: executors write files ({@link DuckLakeDataWriter}), and the driver
 * commits them all once ({@link Committer}: the planner's {@code write_commit}, or a staged
 * table that commits with its creation).
 *
 * <p>Spark's commit coordinator lets one attempt of each task commit, so each row is in
 * exactly one committed file however often a task was retried or run speculatively. When the
 * commit fails, {@link #abort} deletes the job's files, except when the commit's outcome is
 * unknown ({@link #outcomeUnknown}): the snapshot may then exist, and deleting its files would
 * break it, so they stay, named in the error (the rule of {@code write/_cleanup.py}).
 */
final class DuckLakeBatchWrite implements BatchWrite {
  /** What the driver does with the files of a successful job. */
  interface Committer {
    void commit(List<WrittenFile> files);
  }

  private final WriteTarget target;
  private final Committer committer;
  private final SparkSession session;
  private volatile boolean outcomeUnknown;

  DuckLakeBatchWrite(WriteTarget target, Committer committer, SparkSession session) {
    this.target = target;
    this.committer = committer;
    this.session = session;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    return target.factory(session);
  }

  @Override
  public boolean useCommitCoordinator() {
    return true;
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    List<WrittenFile> files = WrittenFile.of(messages);
    try {
      committer.commit(files);
    } catch (RuntimeException e) {
      outcomeUnknown = outcomeUnknown(e);
      throw outcomeUnknown ? keptFiles(e, "the commit to " + target.table, files, target) : e;
    }
  }

  /**
   * The error of a commit whose outcome is unknown: its files stay (the snapshot may exist and
   * need them), named here, and {@link #abort} keeps them.
   */
  static DuckLakeException keptFiles(
      RuntimeException e, String what, List<WrittenFile> files, WriteTarget target) {
    StringBuilder names = new StringBuilder();
    for (int i = 0; i < files.size() && i < 5; i++) {
      names.append(i == 0 ? "" : ", ").append(files.get(i).path);
    }
    if (files.size() > 5) {
      names.append(", ...");
    }
    return new DuckLakeException(
        ErrorNames.COMMIT_STATE_UNKNOWN,
        what + " may or may not have happened (the planner failed while committing: "
            + e.getMessage() + "); its " + files.size() + " files under " + target.directory
            + " were kept (" + names + "): check the table's latest snapshot",
        e);
  }

  /**
   * Whether a failed commit may still have happened: the planner could not be heard after
   * being asked to commit (its process or pipe failed), or it says the catalog's COMMIT went
   * unanswered ({@code CommitStateUnknownError}). A planner that ran the commit and raised
   * anything else committed nothing.
   */
  static boolean outcomeUnknown(RuntimeException e) {
    if (e instanceof PlannerProcess.Refused) {
      return ErrorNames.COMMIT_STATE_UNKNOWN.equals(((PlannerProcess.Refused) e).errorClass());
    }
    return true;
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    List<WrittenFile> files = WrittenFile.of(messages);
    if (outcomeUnknown) {
      return; // (its files stay: the commit's error names them)
    }
    target.deleteUncommitted(files, session, "a failed write to " + target.table);
  }

  @Override
  public String toString() {
    return "DuckLakeBatchWrite(" + target.table + ")";
  }
}
