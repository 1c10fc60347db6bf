package io.ducklake_datafusion.spark;

import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A table's new snapshots as a Structured Streaming source ({@code
 * spark.readStream.table("lake.main.t")}). Offsets are snapshot ids; a micro-batch from offset
 * {@code a} to {@code b} holds what the snapshots after {@code a} through {@code b} changed, as
 * the planner plans it ({@code spark/planner/_stream.py}): by default the rows they inserted,
 * the files of snapshots that only added files read by Spark's Parquet reader like a batch
 * scan (deletes applied inside it), the rest as rows the planner computed exactly; for the
 * change feed ({@link ChangeFeedTable}) every change, with {@code _change_type}, {@code
 * _commit_snapshot_id}, {@code _commit_timestamp} and {@code _rowid} after the table's columns.
 *
 * <p>By default a new query starts with the table's rows at the latest snapshot, as one
 * micro-batch (a scan), then reads the snapshots after it, as Delta's streams do. Options:
 * {@code startingVersion} (a snapshot id: its changes and later ones; {@code latest}: only the
 * snapshots after the latest) or {@code startingTimestamp} (the first snapshot at or after it);
 * admission control with {@code maxSnapshotsPerTrigger}, {@code maxFilesPerTrigger} (new data
 * files) and {@code maxBytesPerTrigger} (their bytes; {@code 1g} and such), at least one
 * snapshot per micro-batch, and {@code Trigger.AvailableNow} reads up to the snapshot that was
 * latest when the query started, in as many batches; {@code skipChangeCommits} (a snapshot
 * that deletes or updates rows fails a stream of inserts naming it, unless this is true: then
 * the snapshot is left out whole, as Delta's option does).
 */
final class DuckLakeMicroBatchStream
    implements MicroBatchStream, SupportsAdmissionControl, SupportsTriggerAvailableNow {
  /** The offset before a stream's first batch that reads the table's rows (the planner's). */
  static final long BEFORE_THE_TABLE = -1;

  private final DuckLakeTable table;
  private final StructType schema;
  private final boolean changes;
  // Resolved only for a new query (initialOffset): a restarted one goes on from its checkpoint
  private final String startingVersion;
  private final String startingTimestamp;
  private final boolean skipChangeCommits;
  private final long maxSnapshots;
  private final long maxFiles;
  private final long maxBytes;
  // Trigger.AvailableNow: the latest snapshot when the query started; none later is read
  private long availableNow = -1;

  DuckLakeMicroBatchStream(
      DuckLakeTable table, CaseInsensitiveStringMap options, boolean changes) {
    this.table = table;
    this.changes = changes;
    this.schema = changes ? withChangeColumns(table.schema()) : table.schema();
    this.startingVersion = options.get("startingVersion");
    this.startingTimestamp = options.get("startingTimestamp");
    this.skipChangeCommits = options.getBoolean("skipChangeCommits", false);
    this.maxSnapshots = limit(options, "maxSnapshotsPerTrigger", false);
    this.maxFiles = limit(options, "maxFilesPerTrigger", false);
    this.maxBytes = limit(options, "maxBytesPerTrigger", true);
  }

  /** The change feed's columns after the table's (as the planner's {@code STREAM_CHANGE_FIELDS}). */
  static StructType withChangeColumns(StructType table) {
    return table
        .add(new StructField("_change_type", DataTypes.StringType, true, emptyMetadata()))
        .add(new StructField("_commit_snapshot_id", DataTypes.LongType, true, emptyMetadata()))
        .add(new StructField("_commit_timestamp", DataTypes.TimestampType, true, emptyMetadata()))
        .add(new StructField("_rowid", DataTypes.LongType, true, emptyMetadata()));
  }

  private static org.apache.spark.sql.types.Metadata emptyMetadata() {
    return org.apache.spark.sql.types.Metadata.empty();
  }

  private long limit(CaseInsensitiveStringMap options, String key, boolean bytes) {
    String text = options.get(key);
    if (text == null) {
      return 0;
    }
    try {
      long value = bytes ? JavaUtils.byteStringAsBytes(text.trim()) : Long.parseLong(text.trim());
      if (value > 0) {
        return value;
      }
    } catch (NumberFormatException e) {
      // falls through to the error below
    }
    throw new DuckLakeException(
        ErrorNames.INVALID_OPTION,
        key + " of a stream of " + table.name() + " must be a positive "
            + (bytes ? "size (bytes, or such as 512m, 1g)" : "integer") + ", got '" + text + "'",
        null);
  }

  private Protocol.Request request(String op) {
    return Protocol.request(op).put("namespace", table.namespace()).put("name", table.tableName());
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

  /** Where a new query starts: the planner's {@code stream_start}. */
  @Override
  public Offset initialOffset() {
    Protocol.Request request = request("stream_start");
    if (startingVersion != null) {
      request.put("starting_version", startingVersion);
    }
    if (startingTimestamp != null) {
      request.put("starting_timestamp", startingTimestamp);
    }
    return new SnapshotOffset(table.catalog().call(request).header.integer("after"));
  }

  @Override
  public Offset latestOffset() {
    return new SnapshotOffset(end(-1, false));
  }

  /** The end of a micro-batch after {@code after}: the planner's {@code stream_end}. */
  private long end(long after, boolean limited) {
    Protocol.Request request = request("stream_end");
    request.put("after", after);
    if (availableNow >= 0) {
      request.put("until", availableNow);
    }
    if (limited) {
      request.put("max_snapshots", maxSnapshots);
      request.put("max_files", maxFiles);
      request.put("max_bytes", maxBytes);
    }
    return table.catalog().call(request).header.integer("end");
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    // The limits themselves are this stream's fields (Spark has no snapshot limit); Spark
    // only tells, by ReadAllAvailable, when a trigger wants everything.
    return maxSnapshots > 0 || maxFiles > 0 || maxBytes > 0
        ? ReadLimit.maxFiles((int) Math.min(Integer.MAX_VALUE, Math.max(maxFiles, 1)))
        : ReadLimit.allAvailable();
  }

  /**
   * The end of the next micro-batch: the latest snapshot, within the admission limits, never
   * past the one {@code AvailableNow} saw.
   */
  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    long from = ((SnapshotOffset) start).snapshot;
    // the table's rows come as one micro-batch: limits apply to the snapshots after them
    boolean limited = from != BEFORE_THE_TABLE && !(limit instanceof ReadAllAvailable);
    return new SnapshotOffset(end(from, limited));
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    availableNow = end(-1, false);
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
    Protocol.Request request = request("stream_rows");
    request.put("after", from);
    request.put("through", to);
    request.put("mode", changes ? "changes" : "inserts");
    request.put("skip_change_commits", skipChangeCommits);
    request.put("schema", schema.json());
    request.put("hadoop_schemes", table.catalog().hadoopSchemes());
    request.put("hadoop_version", org.apache.hadoop.util.VersionInfo.getVersion());
    DuckLakeScan.Plan plan = new DuckLakeScan.Plan(table.catalog().call(request), table.name());
    if (plan.files.isEmpty() && plan.exactRows == null) {
      return new InputPartition[0];
    }
    DuckLakeScan.build(plan, table, schema, new Filter[0]);
    InputPartition[] partitions = new InputPartition[plan.partitions.length];
    for (int i = 0; i < partitions.length; i++) {
      partitions[i] = new BatchPartition(plan.partitions[i], plan.factory);
    }
    return partitions;
  }

  /** One partition of a micro-batch, with the reader factory its batch was planned with. */
  static final class BatchPartition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final InputPartition inner;
    final PartitionReaderFactory factory;

    BatchPartition(InputPartition inner, PartitionReaderFactory factory) {
      this.inner = inner;
      this.factory = factory;
    }

    @Override
    public String[] preferredLocations() {
      return inner.preferredLocations();
    }
  }

  /** Reads each partition with its own batch's factory (each micro-batch has its files). */
  static final class BatchReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      BatchPartition batch = (BatchPartition) partition;
      return batch.factory.createReader(batch.inner);
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      BatchPartition batch = (BatchPartition) partition;
      return batch.factory.createColumnarReader(batch.inner);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      BatchPartition batch = (BatchPartition) partition;
      return batch.factory.supportColumnarReads(batch.inner);
    }
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new BatchReaderFactory();
  }

  @Override
  public void commit(Offset end) {}

  @Override
  public void stop() {}

  @Override
  public String toString() {
    return "DuckLakeMicroBatchStream(" + table.name() + (changes ? ", change feed)" : ")");
  }
}
