package io.ducklake_datafusion.spark;

import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The Hadoop filesystem connector of each store a scan reads, checked on the driver before
 * any task runs (the JVM half of {@code spark/parquet/_hadoop.py}'s connector rules).
 *
 * <p>Hadoop 3.5 names Apache's own GCS connector ({@code hadoop-gcp}) for {@code gs://} and
 * spells some {@code fs.gs.*} sizes with units that Google's {@code gcs-connector} cannot
 * parse: where only Google's connector is on the classpath, the read names it and passes those
 * sizes as plain numbers. A scheme with no connector at all is an error that says which one to
 * add, before Spark fails inside a task.
 */
final class Connectors {
  private static final String GOOGLE_GCS = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem";
  private static final String[] GCS_SIZES = {
    "fs.gs.block.size",
    "fs.gs.rewrite.max.chunk.size",
    "fs.gs.outputstream.buffer.size",
    "fs.gs.inputstream.inplace.seek.limit",
    "fs.gs.inputstream.min.range.request.size",
  };

  private Connectors() {}

  /** Check (and, for GCS, settle) the connector of every scheme among {@code urls}. */
  static void prepare(Configuration conf, Iterable<String> urls, String table) {
    Set<String> schemes = new LinkedHashSet<>();
    for (String url : urls) {
      String scheme = new Path(url).toUri().getScheme();
      if (scheme != null && !scheme.equals("file")) {
        schemes.add(scheme);
      }
    }
    for (String scheme : schemes) {
      String found = filesystemClass(conf, scheme);
      if (scheme.equals("gs") && !GOOGLE_GCS.equals(found)) {
        if (found == null && conf.getClassByNameOrNull(GOOGLE_GCS) != null) {
          conf.set("fs.gs.impl", GOOGLE_GCS);
          found = GOOGLE_GCS;
        }
      }
      if (found == null) {
        throw new DuckLakeException(
            ErrorNames.MISSING_DEPENDENCY,
            "table "
                + table
                + " has files on "
                + scheme
                + "://, and this Spark has no Hadoop connector for it; add it to spark.jars "
                + "(s3a: hadoop-aws and its AWS SDK bundle, gs: gcs-connector, abfs: "
                + "hadoop-azure)",
            null);
      }
      if (GOOGLE_GCS.equals(found)) {
        for (String key : GCS_SIZES) {
          String value = conf.get(key);
          if (value != null && !value.trim().matches("\\d+")) {
            conf.set(key, Long.toString(conf.getLongBytes(key, 0)));
          }
        }
      }
    }
  }

  /**
   * The object-store schemes whose Hadoop connector this JVM has (or, for {@code gs}, can be
   * named): the planner reads files on any other store exactly instead.
   */
  static java.util.List<String> available(Configuration conf) {
    java.util.List<String> found = new java.util.ArrayList<>();
    for (String scheme : new String[] {"s3a", "gs", "abfs", "abfss"}) {
      if (filesystemClass(conf, scheme) != null
          || (scheme.equals("gs") && conf.getClassByNameOrNull(GOOGLE_GCS) != null)) {
        found.add(scheme);
      }
    }
    return found;
  }

  private static String filesystemClass(Configuration conf, String scheme) {
    try {
      return FileSystem.getFileSystemClass(scheme, conf).getName();
    } catch (Exception | LinkageError e) {
      return null; // no implementation named, or the named one is not on the classpath
    }
  }
}
