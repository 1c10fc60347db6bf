package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The lake's maintenance procedures, DuckDB's functions by their names: {@code CALL
 * lake.system.merge_adjacent_files(table => 'main.t')} on Spark 4 ({@code ProcedureSupport}
 * of the Scala 2.13 jar), {@code ducklake_datafusion.spark.call_procedure(spark, "lake",
 * "merge_adjacent_files", table="main.t")} on every release ({@link #callJson}).
 *
 * <p>Each runs in the catalog's planner ({@code maintain}), as the package's Python API runs it,
 * and answers with DuckDB's function's columns; a merge's files are written by Spark's tasks
 * when it runs on a cluster, or with {@code on_executors => true} ({@link ExecutorMerge}).
 * Arguments are by name, lower case; every one is optional, as in DuckDB (no table: every
 * table of the lake).
 */
public final class Procedures {
  /** Spark's namespace of procedures, as Iceberg's ({@code lake.system.<procedure>}). */
  static final String NAMESPACE = "system";

  /** One argument: its name, Spark type and default (SQL text, a constant). */
  static final class Parameter {
    final String name;
    final DataType type;
    final String defaultSql;
    final String comment;

    Parameter(String name, DataType type, String defaultSql, String comment) {
      this.name = name;
      this.type = type;
      this.defaultSql = defaultSql;
      this.comment = comment;
    }
  }

  /** One procedure. */
  static final class Spec {
    final String name;
    final String description;
    final List<Parameter> parameters;
    final StructType output;
    final boolean writesSnapshot;

    Spec(
        String name,
        String description,
        List<Parameter> parameters,
        StructType output,
        boolean writesSnapshot) {
      this.name = name;
      this.description = description;
      this.parameters = parameters;
      this.output = output;
      this.writesSnapshot = writesSnapshot;
    }
  }

  private static final Parameter TABLE =
      new Parameter("table", DataTypes.StringType, "NULL", "'schema.table' or 'table'; NULL: all");
  private static final Parameter SCHEMA =
      new Parameter("schema", DataTypes.StringType, "NULL", "the table's schema (default main)");
  private static final Parameter OLDER_THAN =
      new Parameter("older_than", DataTypes.TimestampType, "NULL", "default: the lake's setting");
  private static final Parameter DRY_RUN =
      new Parameter("dry_run", DataTypes.BooleanType, "false", "only say what it would do");
  private static final Parameter CLEANUP_ALL =
      new Parameter("cleanup_all", DataTypes.BooleanType, "false", "regardless of age");

  private static final StructType FILES_OUTPUT =
      new StructType()
          .add("schema_name", DataTypes.StringType)
          .add("table_name", DataTypes.StringType)
          .add("files_processed", DataTypes.LongType)
          .add("files_created", DataTypes.LongType);
  private static final StructType PATHS_OUTPUT = new StructType().add("path", DataTypes.StringType);

  /** A merge's argument of ours: its files written by Spark's tasks ({@link ExecutorMerge}). */
  static final String ON_EXECUTORS = "on_executors";

  static final Map<String, Spec> SPECS = new LinkedHashMap<>();

  static {
    add(
        new Spec(
            "merge_adjacent_files",
            "Merge a table's small files into files up to the target size (DuckDB's"
                + " ducklake_merge_adjacent_files)",
            Arrays.asList(
                TABLE,
                SCHEMA,
                new Parameter("max_compacted_files", DataTypes.LongType, "NULL", "per table"),
                new Parameter("min_file_size", DataTypes.LongType, "NULL", "bytes"),
                new Parameter("max_file_size", DataTypes.LongType, "NULL", "bytes"),
                new Parameter(
                    ON_EXECUTORS,
                    DataTypes.BooleanType,
                    "NULL",
                    "files written by Spark tasks (NULL: when Spark runs on a cluster)")),
            FILES_OUTPUT,
            true));
    add(
        new Spec(
            "rewrite_data_files",
            "Rewrite files whose deleted share reaches the threshold to their live rows"
                + " (DuckDB's ducklake_rewrite_data_files)",
            Arrays.asList(
                TABLE,
                SCHEMA,
                new Parameter(
                    "delete_threshold", DataTypes.DoubleType, "NULL", "default: the lake's")),
            FILES_OUTPUT,
            true));
    add(
        new Spec(
            "flush_inlined_data",
            "Write the rows inlined in the catalog to Parquet files (DuckDB's"
                + " ducklake_flush_inlined_data)",
            Arrays.asList(TABLE, SCHEMA),
            new StructType()
                .add("schema_name", DataTypes.StringType)
                .add("table_name", DataTypes.StringType)
                .add("rows_flushed", DataTypes.LongType),
            true));
    add(
        new Spec(
            "expire_snapshots",
            "Expire old snapshots, never the latest (DuckDB's ducklake_expire_snapshots)",
            Arrays.asList(
                OLDER_THAN,
                new Parameter(
                    "versions",
                    DataTypes.createArrayType(DataTypes.LongType),
                    "NULL",
                    "these snapshot ids"),
                DRY_RUN),
            new StructType()
                .add("snapshot_id", DataTypes.LongType)
                .add("snapshot_time", DataTypes.TimestampType)
                .add("schema_version", DataTypes.LongType)
                .add(
                    "changes",
                    DataTypes.createMapType(
                        DataTypes.StringType, DataTypes.createArrayType(DataTypes.StringType)))
                .add("author", DataTypes.StringType)
                .add("commit_message", DataTypes.StringType)
                .add("commit_extra_info", DataTypes.StringType),
            false));
    add(
        new Spec(
            "cleanup_old_files",
            "Delete the files scheduled for deletion (DuckDB's ducklake_cleanup_old_files)",
            Arrays.asList(OLDER_THAN, CLEANUP_ALL, DRY_RUN),
            PATHS_OUTPUT,
            false));
    add(
        new Spec(
            "delete_orphaned_files",
            "Delete data files no catalog row names (DuckDB's ducklake_delete_orphaned_files)",
            Arrays.asList(OLDER_THAN, CLEANUP_ALL, DRY_RUN),
            PATHS_OUTPUT,
            false));
    add(
        new Spec(
            "checkpoint",
            "Flush, expire, merge, rewrite and clean up, in DuckDB's CHECKPOINT order",
            Collections.emptyList(),
            new StructType()
                .add("operation", DataTypes.StringType)
                .add("count", DataTypes.LongType),
            true));
  }

  private Procedures() {}

  private static void add(Spec spec) {
    SPECS.put(spec.name, spec);
  }

  /** The procedure {@code name} of catalog {@code catalog}; a typed error naming the others. */
  static Spec find(String catalog, String[] namespace, String name) {
    Spec spec = SPECS.get(name.toLowerCase(Locale.ROOT));
    boolean system = namespace.length == 1 && namespace[0].equalsIgnoreCase(NAMESPACE);
    if (spec == null || !system) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "DuckLake catalog '"
              + catalog
              + "' has no procedure "
              + String.join(".", namespace)
              + (namespace.length > 0 ? "." : "")
              + name
              + "; its procedures are "
              + catalog
              + "."
              + NAMESPACE
              + ".{"
              + String.join(", ", SPECS.keySet())
              + "}",
          null);
    }
    return spec;
  }

  /**
   * Run {@code spec} with its arguments in {@link Spec#parameters}' order (Spark's internal
   * values: {@code UTF8String}, {@code long}, {@code double}, {@code boolean}, timestamps in
   * microseconds, {@code ArrayData}); its rows in {@link Spec#output}'s columns.
   */
  static InternalRow[] call(DuckLakeCatalog catalog, Spec spec, Object[] values) {
    ObjectNode arguments = PlannerProcess.JSON.createObjectNode();
    for (int i = 0; i < values.length; i++) {
      arguments.set(spec.parameters.get(i).name, json(values[i]));
    }
    JsonNode rows = run(catalog, spec, arguments);
    InternalRow[] out = new InternalRow[rows.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode row = rows.get(i);
      Object[] fields = new Object[spec.output.size()];
      for (int j = 0; j < fields.length; j++) {
        fields[j] = internal(row.get(j), spec.output.fields()[j].dataType());
      }
      out[i] = new GenericInternalRow(fields);
    }
    return out;
  }

  /**
   * For Python on any Spark release ({@code ducklake_datafusion.spark.call_procedure}): run
   * procedure {@code name} of {@code catalog} (the session's catalog plugin) with {@code
   * argumentsJson} (an object by argument name; timestamps in microseconds), answering {@code
   * {"schema": <Spark's JSON of the output>, "rows": [[...], ...]}}.
   */
  public static String callJson(CatalogPlugin catalog, String name, String argumentsJson) {
    if (!(catalog instanceof DuckLakeCatalog)) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "catalog '" + catalog.name() + "' is not a DuckLake catalog (" + catalog.getClass()
              + ")",
          null);
    }
    Spec spec = find(catalog.name(), new String[] {NAMESPACE}, name);
    ObjectNode arguments;
    try {
      arguments = (ObjectNode) PlannerProcess.JSON.readTree(argumentsJson);
    } catch (java.io.IOException | ClassCastException e) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION, "procedure arguments must be a JSON object", e);
    }
    List<String> known = new ArrayList<>();
    spec.parameters.forEach(p -> known.add(p.name));
    arguments
        .fieldNames()
        .forEachRemaining(
            key -> {
              if (!known.contains(key)) {
                throw new DuckLakeException(
                    ErrorNames.INVALID_OPTION,
                    "procedure "
                        + catalog.name()
                        + "."
                        + NAMESPACE
                        + "."
                        + spec.name
                        + " has no argument "
                        + key
                        + "; it takes "
                        + (known.isEmpty() ? "none" : String.join(", ", known)),
                    null);
              }
            });
    ObjectNode answer = PlannerProcess.JSON.createObjectNode();
    answer.put("schema", spec.output.json());
    answer.set("rows", run((DuckLakeCatalog) catalog, spec, arguments));
    return answer.toString();
  }

  private static JsonNode run(DuckLakeCatalog catalog, Spec spec, ObjectNode arguments) {
    JsonNode onExecutors = arguments.remove(ON_EXECUTORS);
    Protocol.Request request =
        Protocol.request("maintain").put("operation", spec.name).put("arguments", arguments);
    if (spec.writesSnapshot) {
      DuckLakeWriteBuilder.commitOptions(null)
          .fields()
          .forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    }
    boolean executors =
        onExecutors == null || onExecutors.isNull()
            ? spec.parameters.stream().anyMatch(p -> p.name.equals(ON_EXECUTORS))
                && ExecutorMerge.byDefault()
            : onExecutors.asBoolean();
    PlannerProcess.Answer answer =
        executors ? ExecutorMerge.run(catalog, request) : catalog.call(request);
    return answer.header.raw("rows");
  }

  private static JsonNode json(Object value) {
    if (value == null) {
      return PlannerProcess.JSON.nullNode();
    }
    if (value instanceof UTF8String) {
      return PlannerProcess.JSON.getNodeFactory().textNode(value.toString());
    }
    if (value instanceof Long || value instanceof Integer) {
      return PlannerProcess.JSON.getNodeFactory().numberNode(((Number) value).longValue());
    }
    if (value instanceof Double) {
      return PlannerProcess.JSON.getNodeFactory().numberNode((Double) value);
    }
    if (value instanceof Boolean) {
      return PlannerProcess.JSON.getNodeFactory().booleanNode((Boolean) value);
    }
    if (value instanceof ArrayData) {
      ArrayData array = (ArrayData) value;
      ArrayNode out = PlannerProcess.JSON.createArrayNode();
      for (int i = 0; i < array.numElements(); i++) {
        if (array.isNullAt(i)) {
          out.addNull();
        } else {
          out.add(array.getLong(i));
        }
      }
      return out;
    }
    throw new IllegalStateException("ducklake: a procedure argument of " + value.getClass());
  }

  private static Object internal(JsonNode value, DataType type) {
    if (value == null || value.isNull()) {
      return null;
    }
    if (type instanceof MapType) {
      DataType values = ((MapType) type).valueType();
      List<Object> keys = new ArrayList<>();
      List<Object> items = new ArrayList<>();
      value
          .fields()
          .forEachRemaining(
              e -> {
                keys.add(UTF8String.fromString(e.getKey()));
                items.add(internal(e.getValue(), values));
              });
      return new ArrayBasedMapData(
          new GenericArrayData(keys.toArray()), new GenericArrayData(items.toArray()));
    }
    if (type instanceof ArrayType) {
      DataType element = ((ArrayType) type).elementType();
      Object[] items = new Object[value.size()];
      for (int i = 0; i < items.length; i++) {
        items[i] = internal(value.get(i), element);
      }
      return new GenericArrayData(items);
    }
    if (type.equals(DataTypes.StringType)) {
      return UTF8String.fromString(value.asText());
    }
    if (type.equals(DataTypes.LongType) || type.equals(DataTypes.TimestampType)) {
      return value.asLong();
    }
    if (type.equals(DataTypes.BooleanType)) {
      return value.asBoolean();
    }
    if (type.equals(DataTypes.DoubleType)) {
      return value.asDouble();
    }
    throw new IllegalStateException("ducklake: a procedure result of type " + type);
  }
}
