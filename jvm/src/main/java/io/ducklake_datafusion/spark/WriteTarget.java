package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Where one write goes, as the planner's {@code write_begin} / {@code create_begin} answered:
 * the table's directory (a Hadoop URL), the schema and column ids its files are written with,
 * the target file size, the Hadoop options of the lake's store, and {@code target}, the facts
 * the planner needs back at commit (it keeps nothing between requests).
 */
final class WriteTarget {
  final String table;
  final JsonNode target;
  final String directory;
  final String schema;
  final String fieldIds;
  final long targetFileSize;
  final PartitionKeys partitionKeys;
  final String[] partitionColumns;
  private final Map<String, String> hadoopOptions;

  WriteTarget(String table, Protocol.Reply answer) {
    this.table = table;
    this.target = answer.raw("target");
    this.directory = answer.text("directory");
    this.schema = answer.text("schema");
    this.fieldIds = answer.raw("field_ids").toString();
    this.targetFileSize = answer.integer("target_file_size");
    this.hadoopOptions = answer.textMap("hadoop_options");
    StructType struct = (StructType) DataType.fromJson(schema);
    this.partitionKeys = PartitionKeys.of(answer.records("partition_keys"), struct);
    this.partitionColumns = partitionKeys.columns(struct);
  }

  /** The schema the table's files are written with. */
  StructType struct() {
    return (StructType) DataType.fromJson(schema);
  }

  /**
   * Refuse, by name, rows that lack a partition key column of the table (Spark clusters a
   * write's rows by those columns before the writer sees them).
   */
  void requireColumns(StructType rows) {
    java.util.Set<String> have = new java.util.HashSet<>();
    for (String name : rows.fieldNames()) {
      have.add(name.toLowerCase(java.util.Locale.ROOT));
    }
    for (String key : partitionColumns) {
      if (!have.contains(key.toLowerCase(java.util.Locale.ROOT))) {
        throw new DuckLakeException(
            ErrorNames.INVALID_OPTION,
            "a write to " + table + " was refused: the rows lack its partition key column '"
                + key + "'",
            null);
      }
    }
  }

  /** The session's Hadoop configuration with the lake's store options. */
  Configuration hadoop(SparkSession session) {
    Configuration conf = session.sessionState().newHadoopConf();
    hadoopOptions.forEach(conf::set);
    return conf;
  }

  /** The executors' writer factory (refused, naming what is missing, without a connector). */
  DuckLakeWriterFactory factory(SparkSession session) {
    Configuration conf = hadoop(session);
    parquetSettings(session.sessionState().conf(), conf);
    Connectors.prepare(conf, Collections.singletonList(directory), table);
    // (files carry Spark's schema in their footer: without the planner's default metadata)
    StructType plain = new StructType();
    for (org.apache.spark.sql.types.StructField field : struct().fields()) {
      plain = plain.add(field.name(), field.dataType(), field.nullable());
    }
    return new DuckLakeWriterFactory(
        table, directory, plain.json(), fieldIds, targetFileSize, partitionKeys, conf);
  }

  /**
   * Spark's Parquet writer reads its settings from the Hadoop configuration, where Spark's own
   * file writer puts them: the session's value of each of this Spark's {@code PARQUET_*}
   * settings (which ones exist differs by release, so they are found, not listed).
   */
  static void parquetSettings(SQLConf sql, Configuration conf) {
    Object settings;
    try {
      settings = Class.forName("org.apache.spark.sql.internal.SQLConf$").getField("MODULE$").get(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("ducklake: Spark's SQLConf is not where it was", e);
    }
    for (Method method : settings.getClass().getMethods()) {
      if (method.getParameterCount() != 0
          || !method.getName().startsWith("PARQUET_")
          || !ConfigEntry.class.isAssignableFrom(method.getReturnType())) {
        continue;
      }
      try {
        String key = ((ConfigEntry<?>) method.invoke(settings)).key();
        conf.set(key, sql.getConfString(key));
      } catch (ReflectiveOperationException | RuntimeException e) {
        // a setting without a value or default: Spark's writer does not read it either
      }
    }
  }

  /**
   * Delete the files of a write that did not commit (no snapshot refers to them), or say
   * which could not be deleted. {@code write} names it: "a failed write to lake.main.t".
   */
  void deleteUncommitted(List<WrittenFile> files, SparkSession session, String write) {
    List<Path> paths = new ArrayList<>();
    for (WrittenFile file : files) {
      paths.add(new Path(directory + file.path));
    }
    List<String> left = DuckLakeDataWriter.delete(paths, hadoop(session));
    if (!left.isEmpty()) {
      throw new DuckLakeException(
          ErrorNames.STORAGE,
          write + " could not delete its files " + left
              + "; no snapshot refers to them (ducklake_delete_orphaned_files removes them)",
          null);
    }
  }
}
