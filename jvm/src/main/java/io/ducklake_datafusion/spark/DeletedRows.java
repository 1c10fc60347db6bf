package io.ducklake_datafusion.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * The deleted row positions of a scan's data files, keyed by the path Spark lists each file
 * under, with the length the driver expects of it.
 *
 * <p>The driver registers them once per scan ({@link #register}), as a broadcast variable
 * that the scan's reader function captures: the executors fetch the positions once each, and
 * the plan carries only the registration's key (a read option), never the positions. A
 * driver keeps the last {@value #KEPT} registrations.
 */
public final class DeletedRows implements Serializable {
  private static final long serialVersionUID = 1L;
  /** Registrations kept per driver; the oldest is dropped (and its broadcast freed) beyond. */
  static final int KEPT = 1024;

  private static final Map<String, Broadcast<DeletedRows>> REGISTERED =
      Collections.synchronizedMap(
          new LinkedHashMap<String, Broadcast<DeletedRows>>(16, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Broadcast<DeletedRows>> eldest) {
              if (size() <= KEPT) {
                return false;
              }
              eldest.getValue().destroy();
              return true;
            }
          });

  /** One file's length and its deleted positions, sorted ascending. */
  static final class FileDeletes implements Serializable {
    private static final long serialVersionUID = 1L;
    final long length;
    final long[] positions;

    FileDeletes(long length, long[] positions) {
      this.length = length;
      this.positions = positions;
    }
  }

  private final String scan;
  private final HashMap<String, FileDeletes> files;

  private DeletedRows(String scan, HashMap<String, FileDeletes> files) {
    this.scan = scan;
    this.files = files;
  }

  /**
   * Parse {@code encoded} and broadcast it; returns the key a scan names it by.
   *
   * <p>Encoding (little-endian): the scan's name for messages ({@code table main.t (snapshot
   * 7)}) as UTF-8 length (int32) and bytes, the file count (int32), then per file the path's
   * UTF-8 length
   * (int32) and bytes, the file's length (int64), the number of deleted positions (int32) and
   * the positions (int64 each, ascending). A length of -1 is not checked.
   */
  public static String register(byte[] encoded) {
    ByteBuffer buffer = ByteBuffer.wrap(encoded).order(ByteOrder.LITTLE_ENDIAN);
    String scan = utf8(buffer);
    int count = buffer.getInt();
    HashMap<String, FileDeletes> files = new HashMap<>(count * 2);
    for (int i = 0; i < count; i++) {
      String url = utf8(buffer);
      long length = buffer.getLong();
      long[] positions = new long[buffer.getInt()];
      buffer.asLongBuffer().get(positions);
      buffer.position(buffer.position() + positions.length * Long.BYTES);
      for (int p = 1; p < positions.length; p++) {
        if (positions[p] <= positions[p - 1]) {
          throw new IllegalArgumentException("deleted positions must ascend");
        }
      }
      // Keyed as Spark's scan names the file (a Hadoop Path: file:/x for file:///x).
      files.put(new Path(url).toString(), new FileDeletes(length, positions));
    }
    if (buffer.hasRemaining()) {
      throw new IllegalArgumentException("trailing bytes after the deleted positions");
    }
    JavaSparkContext context = JavaSparkContext.fromSparkContext(SparkContext.getOrCreate());
    String key = UUID.randomUUID().toString();
    REGISTERED.put(key, context.broadcast(new DeletedRows(scan, files)));
    return key;
  }

  private static String utf8(ByteBuffer buffer) {
    byte[] bytes = new byte[buffer.getInt()];
    buffer.get(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  /** The registration named {@code key}; fails when this driver holds none. */
  static Broadcast<DeletedRows> registered(String key) {
    Broadcast<DeletedRows> found = key == null ? null : REGISTERED.get(key);
    if (found == null) {
      throw new IllegalStateException(
          "ducklake: the deleted rows of this scan are no longer registered in this driver "
              + "(it keeps the last "
              + KEPT
              + " scans' and those of this application only); call read_table again");
    }
    return found;
  }

  /**
   * The deleted positions of the file Spark's scan reads as {@code path}, of {@code length}
   * bytes in Spark's listing; fails, naming the file, when the catalog holds another length.
   */
  long[] of(String path, long length) {
    FileDeletes found = files.get(path);
    if (found == null) {
      throw new IllegalStateException(
          "DataFileMissingError: data file " + path + " of " + scan + " was not planned");
    }
    if (found.length >= 0 && found.length != length) {
      throw new IllegalStateException(
          "DataFileCorruptError: data file "
              + path
              + " of "
              + scan
              + " is "
              + length
              + " bytes in Spark's listing but "
              + found.length
              + " bytes in the catalog: it was replaced after the lake wrote it; "
              + "restore it, or read a snapshot that does not use it");
    }
    return found.positions;
  }
}
