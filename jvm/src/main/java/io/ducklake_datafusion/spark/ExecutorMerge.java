package io.ducklake_datafusion.spark;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.SparkSession;

/**
 * A merge whose files Spark's executors write ({@code merge_adjacent_files} with {@code
 * on_executors}): the planner plans it on the driver and answers {@code maintain} with one
 * opaque group per file to write and a token; a Spark job writes them, each task starting the
 * package's Python on its executor ({@code python -m ducklake_datafusion.maintain._group_worker})
 * for its groups; the outcomes go back to the planner ({@code maintain_written}), which commits
 * the files as one snapshot, or deletes them all and raises the first task's error.
 *
 * <p>The executors need the package installed (as the {@code ducklake} data source's Python
 * does); the interpreter is Spark's {@code spark.pyspark.python}, else the executor's {@code
 * PYSPARK_PYTHON}, else the catalog's. A job that fails as a whole (no Python there) is told
 * to the planner, which commits nothing; files its finished tasks wrote are then orphans
 * ({@code delete_orphaned_files} removes them).
 */
final class ExecutorMerge {
  static final String MODULE = "ducklake_datafusion.maintain._group_worker";

  private ExecutorMerge() {}

  /** Run the procedure's {@code maintain} request with its files written by the executors. */
  static PlannerProcess.Answer run(DuckLakeCatalog catalog, Protocol.Request request) {
    PlannerProcess.Answer answer = catalog.call(request.put("on_executors", true));
    while (answer.header.has("token")) {
      Protocol.Request written =
          Protocol.request("maintain_written").put("token", answer.header.text("token"));
      List<byte[]> outcomes = null;
      try {
        outcomes = write(Arrays.asList(answer.blobs), catalog.pythonExecutable());
      } catch (RuntimeException e) { // the job failed whole: the planner commits nothing
        written.put("failed", String.valueOf(e.getMessage()));
      }
      if (outcomes != null) {
        outcomes.forEach(written::blob);
      }
      answer = catalog.call(written);
    }
    return answer;
  }

  /** Whether a procedure that may run on the executors does, by default: on a cluster. */
  static boolean byDefault() {
    return !SparkSession.active().sparkContext().isLocal();
  }

  /** Each group written by a Spark task; their outcomes in the groups' order. */
  private static List<byte[]> write(List<byte[]> groups, String python) {
    SparkSession session = SparkSession.active();
    JavaSparkContext context = JavaSparkContext.fromSparkContext(session.sparkContext());
    String configured = session.conf().get("spark.pyspark.python", "");
    int tasks = Math.max(1, Math.min(groups.size(), context.defaultParallelism()));
    context.setJobDescription("ducklake merge_adjacent_files: " + groups.size() + " files");
    try {
      return context
          .parallelize(groups, tasks)
          .mapPartitions(new Task(configured.isEmpty() ? null : configured, python))
          .collect();
    } finally {
      context.setJobDescription(null);
    }
  }

  /** One task: its groups through one Python process (their pickles in, outcomes out). */
  static final class Task implements FlatMapFunction<Iterator<byte[]>, byte[]> {
    private static final long serialVersionUID = 1L;
    private final String configured;
    private final String driverPython;

    Task(String configured, String driverPython) {
      this.configured = configured;
      this.driverPython = driverPython;
    }

    @Override
    public Iterator<byte[]> call(Iterator<byte[]> groups) throws Exception {
      List<byte[]> inputs = new ArrayList<>();
      groups.forEachRemaining(inputs::add);
      if (inputs.isEmpty()) {
        return inputs.iterator();
      }
      Process process =
          new ProcessBuilder(python(), "-m", MODULE)
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      // (fed from a thread of its own: the process answers while it reads)
      Thread feeder = new Thread(() -> feed(process.getOutputStream(), inputs), "ducklake-merge-feed");
      feeder.setDaemon(true);
      feeder.start();
      List<byte[]> outcomes = new ArrayList<>();
      try (DataInputStream in = new DataInputStream(process.getInputStream())) {
        for (int i = 0; i < inputs.size(); i++) {
          outcomes.add(readFrame(in));
        }
      } catch (EOFException e) {
        process.waitFor();
        throw new DuckLakeException(
            ErrorNames.DUCKLAKE,
            "the package's Python (" + python() + " -m " + MODULE + ") ended after "
                + outcomes.size() + " of " + inputs.size() + " merged files (exit code "
                + process.exitValue() + "; its error is in the executor's log): is "
                + "ducklake-datafusion installed for the executors' Python?",
            e);
      }
      feeder.join();
      process.waitFor();
      return outcomes.iterator();
    }

    private String python() {
      if (configured != null) {
        return configured;
      }
      String env = System.getenv("PYSPARK_PYTHON");
      return env != null && !env.isEmpty() ? env : driverPython;
    }

    private static void feed(OutputStream stdin, List<byte[]> inputs) {
      try (DataOutputStream out = new DataOutputStream(stdin)) {
        for (byte[] input : inputs) {
          out.writeLong(input.length);
          out.write(input);
        }
      } catch (IOException e) {
        // the process ended early: its answers say how far it got
      }
    }

    private static byte[] readFrame(DataInputStream in) throws IOException {
      long length = in.readLong();
      if (length < 0 || length > Integer.MAX_VALUE) {
        throw new IOException("ducklake: a merge task answered a frame of " + length + " bytes");
      }
      byte[] frame = new byte[(int) length];
      in.readFully(frame);
      return frame;
    }
  }
}
