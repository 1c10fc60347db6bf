package io.ducklake_datafusion.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.apache.spark.TaskContext;

/**
 * Faults a test asks the writing tasks of a row change to act out, named by the Spark local
 * property {@value #PROPERTY} of the thread that runs the statement
 * ({@code SparkContext.setLocalProperty}: only that thread's jobs see it). A row change writes
 * after a shuffle, in a stage that runs no user code, so a test cannot fail or slow one of its
 * tasks otherwise ({@code tests/support/spark_write_job.py}). Unset, as in every user's job,
 * nothing happens. Each acts in the first attempt of a task that writes rows:
 *
 * <ul>
 *   <li>{@code slow-while-writing}: at its first row, it waits until its task is killed, or
 *       120 s (Spark starts a speculative copy, which commits, and kills this one);
 *   <li>{@code fail-after-write}: once its files are closed, Spark's commit coordinator let it
 *       commit, it fails (Spark retries it, and its files must go);
 *   <li>{@code block-after-write:PATH}: then it creates the file PATH and waits until its task
 *       is killed (the test cancels the job when PATH appears).
 * </ul>
 */
final class TaskFaults {
  static final String PROPERTY = "ducklake.test.fault";

  private TaskFaults() {}

  /** The fault a first attempt acts out, or null. */
  private static String fault(TaskContext task) {
    String fault = task == null ? null : task.getLocalProperty(PROPERTY);
    return fault == null || task.attemptNumber() > 0 ? null : fault;
  }

  /** At a task attempt's first row. */
  static void whileWriting() {
    TaskContext task = TaskContext.get();
    if ("slow-while-writing".equals(fault(task))) {
      sleep(120_000, task);
    }
  }

  /** When a task attempt wrote {@code files} and is about to commit them. */
  static void afterWrite(List<WrittenFile> files) throws IOException {
    TaskContext task = TaskContext.get();
    String fault = fault(task);
    if (fault == null || files.isEmpty() || fault.equals("slow-while-writing")) {
      return;
    }
    if (fault.equals("fail-after-write")) {
      throw new IOException("ducklake: the fault " + fault + " of a test, in its first attempt");
    } else if (fault.startsWith("block-after-write:")) {
      Files.createFile(Paths.get(fault.substring("block-after-write:".length())));
      sleep(600_000, task);
    } else {
      throw new IllegalArgumentException("ducklake: no test fault is named " + fault);
    }
  }

  /** Wait, or until the task is killed (its kill then ends it). */
  private static void sleep(long millis, TaskContext task) {
    long end = System.currentTimeMillis() + millis;
    while (System.currentTimeMillis() < end) {
      task.killTaskIfInterrupted();
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        task.killTaskIfInterrupted();
        return;
      }
    }
  }
}
