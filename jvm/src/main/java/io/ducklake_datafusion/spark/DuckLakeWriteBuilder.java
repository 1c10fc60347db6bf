package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.distributions.Distributions;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A write to a DuckLake table, in one snapshot: an append; with {@code truncate()} (Spark's
 * {@code INSERT OVERWRITE} / {@code overwrite(lit(true))}) a replacement of every row; with
 * {@code overwriteDynamicPartitions()} ({@code overwritePartitions()}, or {@code INSERT
 * OVERWRITE} in Spark's dynamic mode) a replacement of the partitions the rows fall in (of an
 * unpartitioned table: its one partition, every row).
 */
final class DuckLakeWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsDynamicOverwrite {
  /**
   * Asks the planner where to write, for {@code mode}: append, overwrite, overwrite_partitions;
   * {@code loaded}: from the snapshot the table was loaded at (a query's write, which must not
   * overwrite rows committed after it read them), else from the latest (a stream's batch).
   */
  interface Begin {
    WriteTarget begin(String mode, boolean loaded);
  }

  /**
   * A streaming write's rows as its query makes them (Spark does not resolve them against the
   * table): their schema, whether the write's {@code mergeSchema} option is set, and how the
   * table takes the columns and struct fields they have and it lacks (one snapshot).
   */
  static final class StreamRows {
    final StructType schema;
    final boolean mergeSchema;
    final Consumer<StructType> addColumns;

    StreamRows(StructType schema, boolean mergeSchema, Consumer<StructType> addColumns) {
      this.schema = schema;
      this.mergeSchema = mergeSchema;
      this.addColumns = addColumns;
    }
  }

  private final String table;
  private final Begin begin;
  private final Function<WriteTarget, DuckLakeBatchWrite.Committer> committer;
  private final Function<WriteTarget, DuckLakeStreamingWrite.Committer> streamingCommitter;
  private final StreamRows streamRows;
  private boolean overwrite;
  private boolean dynamic;

  DuckLakeWriteBuilder(
      String table,
      Begin begin,
      Function<WriteTarget, DuckLakeBatchWrite.Committer> committer,
      Function<WriteTarget, DuckLakeStreamingWrite.Committer> streamingCommitter,
      StreamRows streamRows) {
    this.table = table;
    this.begin = begin;
    this.committer = committer;
    this.streamingCommitter = streamingCommitter;
    this.streamRows = streamRows;
  }

  @Override
  public WriteBuilder truncate() {
    overwrite = true;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    overwrite = true;
    dynamic = true;
    return this;
  }

  /**
   * Asks the planner where to write now (Spark asks a write for its required distribution
   * before it runs it). A partitioned table's rows are clustered and sorted by its key
   * columns, so each task meets each partition once and writes it into files of its own.
   */
  @Override
  public Write build() {
    boolean replace = overwrite;
    String mode = dynamic ? "overwrite_partitions" : replace ? "overwrite" : "append";
    return new DuckLakeWrite(begin, mode, replace, committer, streamingCommitter, streamRows);
  }

  /** One write, planned: its distribution and ordering, and its batch or streaming write. */
  private static final class DuckLakeWrite implements Write, RequiresDistributionAndOrdering {
    private final Begin begin;
    private final String mode;
    private final WriteTarget target;
    private final boolean replace;
    private final Function<WriteTarget, DuckLakeBatchWrite.Committer> committer;
    private final Function<WriteTarget, DuckLakeStreamingWrite.Committer> streamingCommitter;
    private final StreamRows streamRows;

    DuckLakeWrite(
        Begin begin,
        String mode,
        boolean replace,
        Function<WriteTarget, DuckLakeBatchWrite.Committer> committer,
        Function<WriteTarget, DuckLakeStreamingWrite.Committer> streamingCommitter,
        StreamRows streamRows) {
      this.begin = begin;
      this.mode = mode;
      this.target = begin.begin(mode, true);
      this.replace = replace;
      this.committer = committer;
      this.streamingCommitter = streamingCommitter;
      this.streamRows = streamRows;
    }

    @Override
    public String description() {
      return (replace ? "DuckLakeOverwrite(" : "DuckLakeAppend(") + target.table + ")";
    }

    @Override
    public Distribution requiredDistribution() {
      if (target.partitionColumns.length == 0) {
        return Distributions.unspecified();
      }
      if (streamRows != null) { // (Spark asks before it has the stream's write)
        target.requireColumns(streamRows.schema);
      }
      Expression[] columns = new Expression[target.partitionColumns.length];
      for (int i = 0; i < columns.length; i++) {
        columns[i] = Expressions.column(target.partitionColumns[i]);
      }
      return Distributions.clustered(columns);
    }

    @Override
    public SortOrder[] requiredOrdering() {
      SortOrder[] order = new SortOrder[target.partitionColumns.length];
      for (int i = 0; i < order.length; i++) {
        order[i] =
            Expressions.sort(
                Expressions.column(target.partitionColumns[i]), SortDirection.ASCENDING);
      }
      return order;
    }

    @Override
    public BatchWrite toBatch() {
      return new DuckLakeBatchWrite(target, committer.apply(target), SparkSession.active());
    }

    @Override
    public StreamingWrite toStreaming() {
      if (streamingCommitter == null) {
        throw new DuckLakeException(
            ErrorNames.UNSUPPORTED_FEATURE,
            target.table + " is being created: a stream writes to a table that exists",
            null);
      }
      // a batch of a stream that may run for days: from the lake's latest snapshot, whose
      // columns may not be the ones the stream started with
      WriteTarget latest = begin.begin(mode, false);
      WriteLayout layout = null;
      if (streamRows != null) {
        if (streamRows.mergeSchema && WriteLayout.lacks(streamRows.schema, latest.struct())) {
          streamRows.addColumns.accept(streamRows.schema);
          latest = begin.begin(mode, false);
        }
        layout = WriteLayout.of(streamRows.schema, latest.struct(), latest.table);
      }
      return new DuckLakeStreamingWrite(
          latest, layout, streamingCommitter.apply(latest), SparkSession.active());
    }
  }

  /**
   * The commit's author, message and extra info: the write's options ({@code author},
   * {@code commit_message}, {@code commit_extra_info}), else the session's {@code
   * spark.ducklake.*} settings of those names, else the Spark user as author and the
   * application as extra info.
   */
  static ObjectNode commitOptions(CaseInsensitiveStringMap options) {
    SparkSession session = SparkSession.active();
    ObjectNode found = PlannerProcess.JSON.createObjectNode();
    String author = setting(options, session, "author");
    found.put("author", author != null ? author : session.sparkContext().sparkUser());
    String message = setting(options, session, "commit_message");
    if (message != null) {
      found.put("commit_message", message);
    }
    String extra = setting(options, session, "commit_extra_info");
    if (extra == null) {
      ObjectNode application = PlannerProcess.JSON.createObjectNode();
      application.put("engine", "spark " + session.version());
      application.put("application", session.sparkContext().appName());
      application.put("application_id", session.sparkContext().applicationId());
      extra = application.toString();
    }
    found.put("commit_extra_info", extra);
    return found;
  }

  private static String setting(CaseInsensitiveStringMap options, SparkSession session, String key) {
    String value = options == null ? null : options.get(key);
    if (value == null) {
      value = session.conf().get("spark.ducklake." + key, null);
    }
    return value;
  }
}
