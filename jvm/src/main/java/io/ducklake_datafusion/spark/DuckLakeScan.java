package io.ducklake_datafusion.spark;

import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.collection.Iterator;

/**
 * One planned scan of a DuckLake table: the planner's plan for the query's columns and
 * filters, read by Spark's own Parquet reader where that is exact, the rest as rows the
 * planner read exactly.
 *
 * <p>The plan is made once, when Spark builds the scan (so statistics and {@code EXPLAIN} see
 * it): the planner prunes the files with the pushed filters, checks each kept file against the
 * catalog, and exports them ({@link PlannedFiles}). Files are split and packed into partitions
 * as Spark packs a Parquet scan ({@code spark.sql.files.maxPartitionBytes}, {@code
 * openCostInBytes}, the default parallelism). Each group of files with the same physical
 * columns gets one reader function of Spark's {@link ParquetFileFormat}; {@link
 * DuckLakeReaderFactory} drops the deleted rows of files with deletes, by the row index Spark's
 * reader returns for files read with filters or in slices, by counting the rows of the others.
 */
final class DuckLakeScan implements Scan, Batch, SupportsReportStatistics {
  private final CaseInsensitiveStringMap options;
  private static final String MISSING = "__ducklake_missing_column_";
  static final String ROW_INDEX = "_tmp_metadata_row_index";

  private final DuckLakeTable table;
  /** The table's columns read (the metadata columns follow them in {@link #readSchema()}). */
  private final StructType readSchema;
  private final List<String> metadata;
  private final Filter[] pushed;
  private final Protocol.Request request;
  private Plan plan; // made on first use: a stream of the table never needs the batch plan

  /**
   * The planner's answer for one (snapshot, columns, filters) and what the reads need of it,
   * built once: kept by the {@link DuckLakeTable} (one loaded table: one snapshot), so a
   * DataFrame queried again is not planned again. Before reuse, the local files are checked
   * to still have the planned length (as {@code read_table} re-checks them); a changed file
   * is planned anew, where the planner's checks raise our typed error.
   */
  static final class Plan {
    final Protocol.Reply header;
    final List<PlannedFiles.File> files;
    final byte[] exactRows;
    /** Per file: its first row id (a scan with metadata columns; else empty). */
    final long[] rowIdStarts;
    InputPartition[] partitions;
    DuckLakeReaderFactory factory;

    Plan(PlannerProcess.Answer answer, String table) {
      this.header = answer.header;
      List<String> urls = header.texts("hadoop_urls");
      this.files =
          answer.blobs[0].length == 0
              ? Collections.<PlannedFiles.File>emptyList()
              : PlannedFiles.parse(answer.blobs[0], urls, table);
      this.exactRows = header.integer("exact_rows") > 0 ? answer.blobs[1] : null;
      this.rowIdStarts = header.integers("row_id_starts");
    }

    /** Every local file still has its planned length (object stores are not re-listed). */
    boolean localFilesUnchanged() {
      for (PlannedFiles.File file : files) {
        if (!file.hadoopUrl.startsWith("file:")) {
          continue;
        }
        java.io.File local = new java.io.File(new Path(file.hadoopUrl).toUri().getPath());
        if (!local.isFile() || (file.size >= 0 && local.length() != file.size)) {
          return false;
        }
      }
      return true;
    }
  }

  DuckLakeScan(
      DuckLakeTable table,
      StructType required,
      List<String> metadata,
      List<ObjectNode> filters,
      Filter[] pushed,
      CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
    this.readSchema = fullFields(required, table.schema());
    this.metadata = new ArrayList<>(metadata);
    this.pushed = pushed;
    Protocol.Request request =
        Protocol.request("scan")
            .put("namespace", table.namespace())
            .put("name", table.tableName())
            .put("snapshot", table.snapshot())
            .put("columns", java.util.Arrays.asList(readSchema.fieldNames()))
            .put("hadoop_schemes", table.catalog().hadoopSchemes());
    ArrayNode pushedJson = request.array("filters");
    filters.forEach(pushedJson::add);
    if (!metadata.isEmpty()) {
      request.put("metadata", metadata);
    }
    // Which ABFS modes this Hadoop has (a Blob endpoint needs 3.4.2+): the planner reads
    // the files Spark's connector cannot reach exactly instead.
    request.put("hadoop_version", org.apache.hadoop.util.VersionInfo.getVersion());
    this.request = request;
  }

  /** The planner's plan of this scan, asked once (or reused from the table's). */
  private synchronized Plan plan() {
    if (plan == null) {
      String key = request.text() + readSettings();
      Plan found = table.plan(key);
      if (found == null || !found.localFilesUnchanged()) {
        found = new Plan(table.catalog().call(request), table.name());
        table.keepPlan(key, found);
      }
      plan = found;
    }
    return plan;
  }

  /** The session settings a plan's reads depend on (part of its cache key). */
  private static String readSettings() {
    SparkSession session = SparkSession.active();
    StringBuilder key = new StringBuilder();
    for (String name :
        new String[] {
          "spark.sql.parquet.enableVectorizedReader",
          "spark.sql.parquet.enableNestedColumnVectorizedReader",
          "spark.sql.parquet.filterPushdown",
          "spark.sql.files.maxPartitionBytes",
          "spark.sql.files.openCostInBytes",
          "spark.sql.codegen.wholeStage",
          "spark.sql.codegen.maxFields",
          "spark.sql.parquet.columnarReaderBatchSize",
          "spark.sql.caseSensitive"
        }) {
      key.append('\u0000').append(session.conf().getOption(name).getOrElse(() -> ""));
    }
    return key.append('\u0000').append(session.sparkContext().defaultParallelism()).toString();
  }

  /** The table's own type of each required column: nested fields are not pruned here. */
  private static StructType fullFields(StructType required, StructType table) {
    StructField[] fields = new StructField[required.fields().length];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = table.apply(required.fields()[i].name());
    }
    return new StructType(fields);
  }

  @Override
  public StructType readSchema() {
    return RowMetadata.withColumns(readSchema, metadata);
  }

  @Override
  public String description() {
    Plan plan = plan();
    StringBuilder text = new StringBuilder("DuckLake ");
    text.append(table.name()).append(" snapshot ").append(plan.header.integer("snapshot"));
    text.append(" [files: ").append(plan.header.integer("files_spark")).append(" read by Spark");
    long exact = plan.header.integer("files_exact");
    if (exact > 0) {
      text.append(", ").append(exact).append(" read exactly by the planner");
    }
    text.append(", ").append(plan.header.integer("files_pruned")).append(" pruned of ");
    text.append(plan.header.integer("files_live")).append(" live");
    long rows = plan.header.integer("exact_rows");
    if (rows > 0) {
      text.append("; ").append(rows).append(" rows from the planner");
    }
    for (String reason : plan.header.texts("exact_reasons")) {
      text.append("; ").append(reason);
    }
    if (plan.header.has("filter")) {
      text.append("; pruned with ").append(plan.header.text("filter"));
    }
    return text.append("]").toString();
  }

  /** The table's inserts as a stream (its read options: {@link DuckLakeMicroBatchStream}). */
  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    if (options.getBoolean("readChangeFeed", false)) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "readChangeFeed cannot add the change columns to a stream of " + table.name()
              + ", whose columns Spark fixed from the table: stream the table "
              + table.name() + "." + ChangeFeedTable.SUFFIX + " instead",
          null);
    }
    return new DuckLakeMicroBatchStream(table, options, false);
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public Statistics estimateStatistics() {
    Plan plan = plan();
    final long bytes = plan.header.integer("bytes");
    final long rows = plan.header.integer("rows");
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(Math.max(bytes, 1));
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.of(rows);
      }
    };
  }

  @Override
  public InputPartition[] planInputPartitions() {
    Plan plan = plan();
    synchronized (plan) {
      if (plan.partitions == null) {
        build();
      }
      return plan.partitions.clone();
    }
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    Plan plan = plan();
    synchronized (plan) {
      if (plan.factory == null) {
        build();
      }
      return plan.factory;
    }
  }

  private void build() {
    build(plan(), table, readSchema, pushed, RowMetadata.kinds(metadata));
  }

  /** A stream's micro-batch plan: as a scan's, without metadata columns. */
  static void build(Plan plan, DuckLakeTable table, StructType readSchema, Filter[] pushed) {
    build(plan, table, readSchema, pushed, new int[0]);
  }

  /**
   * A plan's read groups, their reader functions, the deleted rows and the partitions, for
   * the columns of {@code readSchema} (the table's own, in any order), the metadata columns
   * of {@code metadata} ({@link RowMetadata#kind}) after them, and the filters Spark pushed.
   * With metadata columns, every file is read with Spark's row index: each row's position.
   */
  static void build(
      Plan plan, DuckLakeTable table, StructType readSchema, Filter[] pushed, int[] metadata) {
    SparkSession session = SparkSession.active();
    ParquetFileFormat format = new ParquetFileFormat();
    String[] tableColumns = table.schema().fieldNames();
    Map<String, Integer> groupOf = new LinkedHashMap<>();
    List<StructType> groupSchemas = new ArrayList<>();
    List<Boolean> groupIndexed = new ArrayList<>();
    List<Boolean> groupFiltered = new ArrayList<>();
    int[] fileGroup = new int[plan.files.size()];
    long maxSplit = FileSlices.maxSplit(session, plan.files);
    for (int f = 0; f < plan.files.size(); f++) {
      PlannedFiles.File file = plan.files.get(f);
      boolean current = true;
      for (int c = 0; c < readSchema.fields().length; c++) {
        String physical = file.physical[indexOf(tableColumns, readSchema.fields()[c].name())];
        current &= readSchema.fields()[c].name().equals(physical);
      }
      // The query's filters reach Spark's reader only for files whose columns have the
      // table's names. A file with deletes reads Spark's row index where its rows can be
      // skipped (filters) or it is split; otherwise its positions are counted (no column).
      boolean filtered = current && pushed.length > 0;
      boolean indexed =
          metadata.length > 0
              || file.deleted != null && (filtered || file.size < 0 || file.size > maxSplit);
      StructField[] fields = new StructField[readSchema.fields().length + (indexed ? 1 : 0)];
      StringBuilder key = new StringBuilder(indexed ? "indexed" : "plain");
      key.append(filtered ? "\u0000filtered" : "\u0000unfiltered");
      for (int c = 0; c < readSchema.fields().length; c++) {
        StructField field = readSchema.fields()[c];
        String physical = file.physical[indexOf(tableColumns, field.name())];
        if (physical == null) {
          physical = MISSING + c;
        }
        key.append('\u0000').append(physical);
        fields[c] = new StructField(physical, field.dataType(), true, Metadata.empty());
      }
      if (indexed) {
        fields[fields.length - 1] =
            new StructField(ROW_INDEX, DataTypes.LongType, true, Metadata.empty());
      }
      Integer group = groupOf.get(key.toString());
      if (group == null) {
        group = groupSchemas.size();
        groupOf.put(key.toString(), group);
        groupSchemas.add(new StructType(fields));
        groupIndexed.add(indexed);
        groupFiltered.add(filtered);
      }
      fileGroup[f] = group;
    }
    boolean columnar = format.supportBatch(session, readSchema);
    if (metadata.length > 0 && plan.rowIdStarts.length != plan.files.size()) {
      throw new IllegalStateException(
          "ducklake: the planner sent " + plan.rowIdStarts.length + " first row ids for "
              + plan.files.size() + " files of " + table.name());
    }
    for (StructType schema : groupSchemas) {
      columnar &= format.supportBatch(session, schema);
    }
    Configuration hadoop = session.sessionState().newHadoopConf();
    plan.header.textMap("hadoop_options").forEach(hadoop::set);
    List<String> urls = new ArrayList<>();
    plan.files.forEach(file -> urls.add(file.hadoopUrl));
    Connectors.prepare(hadoop, urls, table.name());
    @SuppressWarnings("unchecked")
    Function1<PartitionedFile, Iterator<InternalRow>>[] readers = new Function1[groupSchemas.size()];
    boolean[] rowIndex = new boolean[readers.length];
    for (int g = 0; g < readers.length; g++) {
      StructType schema = groupSchemas.get(g);
      StructType dataSchema = groupIndexed.get(g) ? dropLast(schema) : schema;
      List<Filter> filters = groupFiltered.get(g) ? java.util.Arrays.asList(pushed) : Collections.<Filter>emptyList();
      readers[g] =
          format.buildReaderWithPartitionValues(
              session,
              dataSchema,
              new StructType(),
              schema,
              ScalaBridge.list(filters),
              ScalaBridge.map("returning_batch", Boolean.toString(columnar)),
              // Spark's reader writes the requested schema into this configuration and
              // broadcasts it (in local mode, the very object): one copy per group.
              new Configuration(hadoop));
      rowIndex[g] = groupIndexed.get(g);
    }
    Broadcast<DeletedRows> deletes = null;
    if (plan.files.stream().anyMatch(file -> file.deleted != null)) {
      HashMap<String, DeletedRows.FileDeletes> byPath = new HashMap<>();
      for (PlannedFiles.File file : plan.files) {
        if (file.deleted != null) {
          byPath.put(
              new Path(file.hadoopUrl).toString(),
              DeletedRows.fileDeletes(file.size, file.deleted, file.recordCount));
        }
      }
      String name =
          "table " + table.name() + " (snapshot " + plan.header.integer("snapshot") + ")";
      deletes =
          JavaSparkContext.fromSparkContext(session.sparkContext())
              .broadcast(DeletedRows.of(name, byPath));
    }
    plan.factory =
        new DuckLakeReaderFactory(readers, rowIndex, readSchema, columnar, deletes, metadata);
    plan.partitions =
        FileSlices.partitions(session, plan.files, fileGroup, plan.rowIdStarts, plan.exactRows);
  }

  private static int indexOf(String[] names, String name) {
    for (int i = 0; i < names.length; i++) {
      if (names[i].equals(name)) {
        return i;
      }
    }
    throw new IllegalStateException("ducklake: the table has no column " + name);
  }

  private static StructType dropLast(StructType schema) {
    StructField[] fields = new StructField[schema.fields().length - 1];
    System.arraycopy(schema.fields(), 0, fields, 0, fields.length);
    return new StructType(fields);
  }
}
