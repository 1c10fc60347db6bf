package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A write to a DuckLake table: an append, or with {@code truncate()} (Spark's {@code INSERT
 * OVERWRITE} / {@code overwrite(lit(true))}) or a dynamic overwrite of an unpartitioned table
 * ({@code overwritePartitions()}: its one partition) a replacement of every row, in one
 * snapshot. Where to write is asked of the planner when Spark builds the batch write.
 */
final class DuckLakeWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsDynamicOverwrite {
  /** Asks the planner where to write: {@code true} for an overwrite. */
  interface Begin {
    WriteTarget begin(boolean overwrite);
  }

  private final String table;
  private final Begin begin;
  private final Function<WriteTarget, DuckLakeBatchWrite.Committer> committer;
  private boolean overwrite;

  DuckLakeWriteBuilder(
      String table, Begin begin, Function<WriteTarget, DuckLakeBatchWrite.Committer> committer) {
    this.table = table;
    this.begin = begin;
    this.committer = committer;
  }

  @Override
  public WriteBuilder truncate() {
    overwrite = true;
    return this;
  }

  @Override
  public WriteBuilder overwriteDynamicPartitions() {
    overwrite = true;
    return this;
  }

  @Override
  public Write build() {
    boolean replace = overwrite;
    return new Write() {
      @Override
      public String description() {
        return (replace ? "DuckLakeOverwrite(" : "DuckLakeAppend(") + table + ")";
      }

      @Override
      public BatchWrite toBatch() {
        WriteTarget target = begin.begin(replace);
        return new DuckLakeBatchWrite(target, committer.apply(target), SparkSession.active());
      }
    };
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
