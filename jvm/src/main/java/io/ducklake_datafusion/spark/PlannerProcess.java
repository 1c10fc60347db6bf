package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;

/**
 * The package's Python planner, run as a child process of the driver, asked over a pipe.
 *
 * <p>DuckLake planning (catalog queries, snapshot resolution, pruning, deletes, layouts) is the
 * Python package's: this JVM side writes no second planner. It starts {@code python -m
 * ducklake_datafusion.spark.planner} once per catalog, as Spark runs Python data-source
 * planning in a Python worker, and sends it requests as frames: a big-endian int32 length and
 * UTF-8 JSON. Each answer is a JSON frame, then as many binary blobs (int64 length, bytes) as
 * its {@code blobs} field says. The child's standard error is passed to this process's, its
 * last lines kept for the message if it dies.
 *
 * <p>At most {@value #MAX_LIVE} planners live in one JVM. Each holds ~190 MB; a driver reading
 * many lakes (one runtime catalog per lake for {@code read_table}) kept one process per lake
 * until each had been idle its timeout: 53 at once in the test suite, 10 GB. A catalog that
 * starts while {@value #MAX_LIVE} live takes over the process of the same interpreter unused
 * longest ({@link #recycle}: it opens its own lake there, its imports done; the catalog it was
 * taken from starts another when asked). Python's imports cost a second of CPU a process:
 * starting one per lake was a quarter of the CPU of the test suite's Spark catalog module.
 * A JVM that opened a second catalog also keeps one process started ahead for the next
 * ({@link #keepOneAhead}) while fewer than {@value #MAX_LIVE} live.
 */
final class PlannerProcess implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper();
  private static final int KEPT_LINES = 40;

  /** One answer: its header, checked against the protocol, and its binary blobs. */
  static final class Answer {
    final Protocol.Reply header;
    final byte[][] blobs;

    Answer(Protocol.Reply header, byte[][] blobs) {
      this.header = header;
      this.blobs = blobs;
    }
  }

  /** The process ended of its own accord (idle) before answering: ask a new one. */
  static final class Exited extends DuckLakeException {
    private static final long serialVersionUID = 1L;

    Exited(String message, Throwable cause) {
      super(ErrorNames.DUCKLAKE, message, cause);
    }
  }

  /**
   * The planner answered with an error: it ran the request and raised (so a commit it was
   * asked for did not happen), unlike a pipe or process failure, after which nothing is known.
   */
  static final class Refused extends DuckLakeException {
    private static final long serialVersionUID = 1L;

    Refused(String errorClass, String message) {
      super(errorClass, message, null);
    }
  }

  /** Every planner started and not closed, closed when the JVM exits. */
  private static final java.util.Set<PlannerProcess> LIVE = new java.util.HashSet<>();
  private static boolean hookAdded;
  /** The most planners one JVM keeps (see the class comment). */
  static final int MAX_LIVE = 8;

  /** Close the planners unused longest until one more may start. */
  private static void makeRoom() {
    while (true) {
      PlannerProcess oldest = null;
      synchronized (LIVE) {
        if (LIVE.size() < MAX_LIVE) {
          return;
        }
        for (PlannerProcess planner : LIVE) {
          // nanoTime values compare by their difference (they may wrap)
          if (oldest == null || planner.lastUsed - oldest.lastUsed < 0) {
            oldest = planner;
          }
        }
      }
      oldest.evict();
    }
  }

  private static void closeAll() {
    java.util.List<PlannerProcess> all;
    synchronized (LIVE) {
      all = new java.util.ArrayList<>(LIVE);
    }
    synchronized (AHEAD) {
      all.addAll(AHEAD.values());
      AHEAD.clear();
    }
    all.forEach(PlannerProcess::close);
  }

  private final String python;
  private final Process process;
  private final DataOutputStream requests;
  private final DataInputStream answers;
  private final Deque<String> lastErrorLines;
  /** When the last answer came ({@link System#nanoTime}). */
  private volatile long lastUsed = System.nanoTime();
  /** Closed to make room for another planner: its catalog starts a new one. */
  private volatile boolean evicted;
  /** Guards {@link #closed} and {@link #handedOver} (not the monitor a request holds). */
  private final Object state = new Object();
  private boolean closed;
  /** Its process serves another catalog now ({@link #recycle}): closing this leaves it be. */
  private boolean handedOver;

  private PlannerProcess(String python, Process process) {
    this.python = python;
    this.process = process;
    this.requests = new DataOutputStream(new BufferedOutputStream(process.getOutputStream()));
    this.answers = new DataInputStream(new BufferedInputStream(process.getInputStream(), 1 << 16));
    this.lastErrorLines = new ArrayDeque<>();
    Thread errors = new Thread(this::passErrors, "ducklake-planner-stderr");
    errors.setDaemon(true);
    errors.start();
  }

  /** The process of {@code previous} (its pipes, its error lines), for another catalog. */
  private PlannerProcess(PlannerProcess previous) {
    this.python = previous.python;
    this.process = previous.process;
    this.requests = previous.requests;
    this.answers = previous.answers;
    this.lastErrorLines = previous.lastErrorLines;
  }

  /**
   * Start the planner with {@code python} and open the lake from {@code options}; it exits
   * after {@code idleSeconds} without a request (0: never). A process started ahead ({@link
   * #keepOneAhead}) is taken when there is one: its imports are done, so the catalog's first
   * answer comes in tens of milliseconds instead of most of a second.
   */
  static PlannerProcess start(String python, Map<String, String> options, double idleSeconds) {
    PlannerProcess planner = null;
    for (PlannerProcess taken; planner == null && (taken = recycle(python)) != null; ) {
      try {
        planner = open(taken, options, idleSeconds);
      } catch (Exited e) {
        // it idled out as it was taken: take another, or start one
      }
    }
    if (planner != null) {
      return planner;
    }
    makeRoom();
    PlannerProcess ahead = takeAhead(python);
    if (ahead != null) {
      try {
        // (it was started with a wait of its own: it learns its catalog's idle time now)
        planner = open(ahead, options, idleSeconds);
      } catch (Exited e) {
        // it idled out as it was taken: start one now
      }
    }
    if (planner == null) {
      planner = open(launch(python, idleSeconds), options, null);
    }
    keepOneAhead(python, options);
    return planner;
  }

  /**
   * While {@value #MAX_LIVE} planners live: the live one of {@code python} unused longest, taken
   * from its catalog once a request in progress has its answer (that catalog's next request
   * starts another), to open a new catalog's lake; null when fewer live or none of {@code
   * python} (a process of another interpreter, or with other settings, serves only its own).
   */
  private static PlannerProcess recycle(String python) {
    while (true) {
      PlannerProcess oldest = null;
      synchronized (LIVE) {
        if (LIVE.size() < MAX_LIVE) {
          return null;
        }
        for (PlannerProcess planner : LIVE) {
          if (planner.python.equals(python)
              && (oldest == null || planner.lastUsed - oldest.lastUsed < 0)) {
            oldest = planner;
          }
        }
        if (oldest == null) {
          return null;
        }
        LIVE.remove(oldest);
      }
      PlannerProcess taken = oldest.handOver();
      if (taken != null) {
        return taken;
      }
    }
  }

  /**
   * This planner's process as a new planner, this one evicted (its catalog starts another),
   * once a request in progress has its answer; null if it was closed or its process ended.
   */
  private PlannerProcess handOver() {
    synchronized (this) {
      synchronized (state) {
        if (closed || !process.isAlive()) {
          closed = true;
          evicted = true;
        } else {
          evicted = true;
          handedOver = true;
          return new PlannerProcess(this);
        }
      }
    }
    close(); // (a process that ended: its pipes)
    return null;
  }

  /** Processes started ahead of their catalogs, one per Python interpreter. */
  private static final Map<String, PlannerProcess> AHEAD = new java.util.HashMap<>();
  /** The options of the first catalog this JVM opened, until a second one's came. */
  private static Map<String, String> firstCatalog;
  private static boolean severalCatalogs;
  /** How long a process started ahead waits for a catalog before it exits. */
  static final double AHEAD_IDLE_SECONDS = 60;

  /**
   * Once a second catalog (other options) opens, keep one process of {@code python} started
   * ahead for the next: a driver that opens many lakes ({@code read_table} of one runtime
   * catalog per lake, the test suite's hundreds) waits for Python's imports once, not per
   * lake. A JVM of one catalog never starts one, however often its planner restarts.
   */
  private static void keepOneAhead(String python, Map<String, String> options) {
    synchronized (AHEAD) {
      if (firstCatalog == null) {
        firstCatalog = new java.util.HashMap<>(options);
      } else if (!severalCatalogs && !firstCatalog.equals(options)) {
        severalCatalogs = true;
        firstCatalog = java.util.Collections.emptyMap(); // (kept no longer)
      }
      if (!severalCatalogs || AHEAD.containsKey(python)) {
        return;
      }
    }
    synchronized (LIVE) {
      if (LIVE.size() >= MAX_LIVE) {
        return; // (the next catalog takes over a live process: recycle)
      }
    }
    PlannerProcess ahead;
    try {
      ahead = launch(python, AHEAD_IDLE_SECONDS);
    } catch (DuckLakeException e) {
      return; // (its catalog's own start reports it)
    }
    synchronized (AHEAD) {
      if (AHEAD.putIfAbsent(python, ahead) == null) {
        return;
      }
    }
    ahead.close(); // (another thread's came first)
  }

  private static PlannerProcess takeAhead(String python) {
    PlannerProcess ahead;
    synchronized (AHEAD) {
      ahead = AHEAD.remove(python);
    }
    if (ahead != null && !ahead.process.isAlive()) {
      ahead.close();
      return null;
    }
    return ahead;
  }

  /** A planner process of {@code python}, not yet opened, closed when the JVM exits. */
  private static PlannerProcess launch(String python, double idleSeconds) {
    ProcessBuilder builder =
        new ProcessBuilder(
            python,
            "-m",
            "ducklake_datafusion.spark.planner",
            "--idle-seconds",
            Double.toString(idleSeconds));
    Process process;
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new DuckLakeException(
          ErrorNames.MISSING_DEPENDENCY,
          "cannot start the DuckLake planner with the Python interpreter '"
              + python
              + "' ("
              + e.getMessage()
              + "); set spark.sql.catalog.<name>.python to an interpreter that has "
              + "ducklake-datafusion installed",
          e);
    }
    synchronized (LIVE) {
      if (!hookAdded) {
        Runtime.getRuntime().addShutdownHook(new Thread(PlannerProcess::closeAll, "ducklake-planners-stop"));
        hookAdded = true;
      }
    }
    return new PlannerProcess(python, process);
  }

  /**
   * Open the lake of {@code options} in {@code planner} (closed if that fails); {@code
   * idleSeconds}, when not null, replaces the wait it was started with (a planner of an older
   * release, which knows no such field, is only ever started for its catalog: so it answers
   * with its protocol's version, refused by name below).
   */
  private static PlannerProcess open(
      PlannerProcess planner, Map<String, String> options, Double idleSeconds) {
    Protocol.Request open = Protocol.request("open");
    ObjectNode values = open.object("options");
    options.forEach(values::put);
    if (idleSeconds != null) {
      open.put("idle_seconds", idleSeconds.doubleValue());
    }
    synchronized (LIVE) {
      LIVE.add(planner);
    }
    Answer opened;
    try {
      opened = planner.call(open);
    } catch (RuntimeException e) {
      planner.close();
      throw e;
    }
    long version = opened.header.integer("protocol");
    if (version != Protocol.VERSION) {
      planner.close();
      throw new DuckLakeException(
          ErrorNames.MISSING_DEPENDENCY,
          "the DuckLake planner of "
              + planner.python
              + " (ducklake-datafusion "
              + opened.header.text("package")
              + ") speaks protocol "
              + version
              + ", this Spark jar protocol "
              + Protocol.VERSION
              + ": the jar and the package are of different releases; use the jar of the "
              + "installed package (ducklake_datafusion.spark_jar()) or install the package "
              + "of the jar's release",
          null);
    }
    return planner;
  }

  /** Send one request; the answer, or our exception named by the planner's error class. */
  synchronized Answer call(Protocol.Request request) {
    if (evicted) {
      throw new Exited("the DuckLake planner was closed to make room for another", null);
    }
    JsonNode header;
    byte[][] blobs;
    try {
      byte[] body = JSON.writeValueAsBytes(request.json());
      requests.writeInt(body.length);
      requests.write(body);
      for (byte[] blob : request.blobs) {
        requests.writeLong(blob.length);
        requests.write(blob);
      }
      requests.flush();
      byte[] answer = new byte[answers.readInt()];
      answers.readFully(answer);
      header = JSON.readTree(answer);
      blobs = new byte[header.path("blobs").asInt(0)][];
      for (int i = 0; i < blobs.length; i++) {
        long length = answers.readLong();
        if (length > Integer.MAX_VALUE - 16) {
          throw new IOException("an answer of " + length + " bytes is more than one array holds");
        }
        blobs[i] = new byte[(int) length];
        answers.readFully(blobs[i]);
      }
    } catch (EOFException e) {
      throw died(e);
    } catch (IOException e) {
      if (!process.isAlive()) {
        throw died(e);
      }
      throw new DuckLakeException(
          ErrorNames.STORAGE, "the pipe to the DuckLake planner failed: " + e.getMessage(), e);
    }
    lastUsed = System.nanoTime();
    JsonNode error = header.get("error");
    if (error != null) {
      throw new Refused(
          error.path("class").asText(ErrorNames.DUCKLAKE), error.path("message").asText(""));
    }
    return new Answer(Protocol.reply(request.message, header), blobs);
  }

  private DuckLakeException died(Exception cause) {
    String tail;
    synchronized (lastErrorLines) {
      tail = String.join("\n", lastErrorLines);
    }
    Integer code = null;
    try {
      process.waitFor(java.util.concurrent.TimeUnit.SECONDS.toMillis(2), java.util.concurrent.TimeUnit.MILLISECONDS);
      code = process.isAlive() ? null : process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (code != null && code == 0) {
      return new Exited("the DuckLake planner exited (idle) before answering", cause);
    }
    boolean missing = tail.contains("No module named");
    return new DuckLakeException(
        missing ? ErrorNames.MISSING_DEPENDENCY : ErrorNames.DUCKLAKE,
        "the DuckLake planner ("
            + python
            + " -m ducklake_datafusion.spark.planner) exited"
            + (code == null ? "" : " with code " + code)
            + (missing
                ? "; install ducklake-datafusion for that interpreter, or set "
                    + "spark.sql.catalog.<name>.python to one that has it"
                : "")
            + (tail.isEmpty() ? "" : "; its last output:\n" + tail),
        cause);
  }

  private void passErrors() {
    try (BufferedReader lines =
        new BufferedReader(
            new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = lines.readLine()) != null) {
        System.err.println(line);
        synchronized (lastErrorLines) {
          lastErrorLines.addLast(line);
          while (lastErrorLines.size() > KEPT_LINES) {
            lastErrorLines.removeFirst();
          }
        }
      }
    } catch (IOException e) {
      // the process ended: nothing more to pass on
    }
  }

  boolean alive() {
    return !evicted && process.isAlive();
  }

  /** Close this planner for another, once any request in progress has its answer. */
  private void evict() {
    synchronized (this) {
      evicted = true;
    }
    close();
  }

  @Override
  public void close() {
    synchronized (LIVE) {
      LIVE.remove(this);
    }
    synchronized (state) {
      closed = true;
      if (handedOver) {
        return;
      }
    }
    try {
      requests.close();
    } catch (IOException e) {
      // already closed
    }
    try {
      if (!process.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroy();
      }
    } catch (InterruptedException e) {
      process.destroy();
      Thread.currentThread().interrupt();
    }
  }
}
