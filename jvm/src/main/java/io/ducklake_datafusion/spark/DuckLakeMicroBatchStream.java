package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Function1;

/**
 * The rows a table's new snapshots insert, as a Structured Streaming source ({@code
 * spark.readStream.table("lake.main.t")}). Offsets are snapshot ids; a micro-batch from offset
 * {@code a} to {@code b} holds the rows the snapshots after {@code a} through {@code b}
 * inserted, as the planner's change feed gives them (computed on the driver, read as Arrow).
 *
 * <p>Options: {@code maxSnapshotsPerTrigger} (admission control: at most that many snapshots
 * per micro-batch; {@code Trigger.AvailableNow} reads up to the snapshot that was latest when
 * the query started, in as many batches), {@code startingVersion} (a snapshot id: its inserts and later ones; default
 * {@code latest}: the snapshots after the one the stream starts at) and {@code
 * skipChangeCommits} (a snapshot that deletes or updates rows fails the stream naming it,
 * unless this is true: then the snapshot is left out whole, as Delta's option does).
 */
final class DuckLakeMicroBatchStream
    implements MicroBatchStream, SupportsAdmissionControl, SupportsTriggerAvailableNow {
  private final DuckLakeTable table;
  private final StructType schema;
  private final long start;
  private final boolean skipChangeCommits;
  private final long maxSnapshotsPerTrigger;
  // Trigger.AvailableNow: the latest snapshot when the query started; none later is read
  private long availableNow = -1;

  DuckLakeMicroBatchStream(DuckLakeTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.schema = table.schema();
    String starting = options.getOrDefault("startingVersion", "latest").trim();
    if (starting.equalsIgnoreCase("latest")) {
      start = table.snapshot();
    } else {
      try {
        start = Long.parseLong(starting) - 1;
      } catch (NumberFormatException e) {
        throw new DuckLakeException(
            ErrorNames.INVALID_OPTION,
            "startingVersion of a stream of " + table.name() + " must be a snapshot id or "
                + "'latest', got '" + starting + "'",
            e);
      }
    }
    this.skipChangeCommits = options.getBoolean("skipChangeCommits", false);
    this.maxSnapshotsPerTrigger = options.getLong("maxSnapshotsPerTrigger", 0);
    if (maxSnapshotsPerTrigger < 0) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "maxSnapshotsPerTrigger of a stream of " + table.name() + " must be positive",
          null);
    }
  }

  /** A snapshot id as a stream's offset. */
  static final class SnapshotOffset extends Offset {
    final long snapshot;

    SnapshotOffset(long snapshot) {
      this.snapshot = snapshot;
    }

    @Override
    public String json() {
      return Long.toString(snapshot);
    }
  }

  @Override
  public Offset initialOffset() {
    return new SnapshotOffset(start);
  }

  @Override
  public Offset latestOffset() {
    return new SnapshotOffset(latestSnapshot());
  }

  /** The lake's latest snapshot now (as the planner resolves the table). */
  private long latestSnapshot() {
    ObjectNode request = PlannerProcess.JSON.createObjectNode();
    request.put("op", "table");
    request.put("namespace", table.namespace());
    request.put("name", table.tableName());
    return table.catalog().call(request).header.path("snapshot").asLong();
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return maxSnapshotsPerTrigger > 0
        ? ReadLimit.maxRows(maxSnapshotsPerTrigger) // (read as snapshots: see latestOffset)
        : ReadLimit.allAvailable();
  }

  /**
   * The end of the next micro-batch: the latest snapshot, at most {@code
   * maxSnapshotsPerTrigger} after {@code start}, never past the one {@code AvailableNow} saw.
   */
  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    long end = availableNow >= 0 ? availableNow : latestSnapshot();
    if (limit instanceof ReadMaxRows) {
      long from = ((SnapshotOffset) start).snapshot;
      end = Math.min(end, from + ((ReadMaxRows) limit).maxRows());
    }
    return new SnapshotOffset(end);
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    availableNow = latestSnapshot();
  }

  @Override
  public Offset deserializeOffset(String json) {
    return new SnapshotOffset(Long.parseLong(json.trim()));
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    long from = ((SnapshotOffset) start).snapshot;
    long to = ((SnapshotOffset) end).snapshot;
    if (to <= from) {
      return new InputPartition[0];
    }
    ObjectNode request = PlannerProcess.JSON.createObjectNode();
    request.put("op", "stream_rows");
    request.put("namespace", table.namespace());
    request.put("name", table.tableName());
    request.put("after", from);
    request.put("through", to);
    request.put("skip_change_commits", skipChangeCommits);
    request.put("schema", schema.json());
    PlannerProcess.Answer answer = table.catalog().call(request);
    if (answer.header.path("rows").asLong() == 0) {
      return new InputPartition[0];
    }
    return new InputPartition[] {new FileSlices.RowsPartition(answer.blobs[0])};
  }

  @Override
  @SuppressWarnings("unchecked")
  public PartitionReaderFactory createReaderFactory() {
    return new DuckLakeReaderFactory(new Function1[0], new boolean[0], schema, true, null);
  }

  @Override
  public void commit(Offset end) {}

  @Override
  public void stop() {}

  @Override
  public String toString() {
    return "DuckLakeMicroBatchStream(" + table.name() + ")";
  }
}
