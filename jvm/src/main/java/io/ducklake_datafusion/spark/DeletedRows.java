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

  /**
   * One file's length and deleted positions: sorted (few deletes) or as a bitmap (many: the
   * smaller of the two, so a broadcast stays under a bit per row of the files with deletes).
   */
  static final class FileDeletes implements Serializable {
    private static final long serialVersionUID = 1L;
    final long length;
    private final long[] positions; // ascending, or null
    private final long[] bitmap; // bit p & 63 of word p >>> 6 set when p is deleted, or null

    FileDeletes(long length, long[] positions, long[] bitmap) {
      this.length = length;
      this.positions = positions;
      this.bitmap = bitmap;
    }

    /** A test of one reader's positions (not thread-safe: one per file read). */
    Cursor cursor() {
      return new Cursor(positions, bitmap);
    }
  }

  /** Whether positions are deleted; for sorted positions, a cursor that mostly walks. */
  static final class Cursor {
    private final long[] positions;
    private final long[] bitmap;
    private int at;

    Cursor(long[] positions, long[] bitmap) {
      this.positions = positions;
      this.bitmap = bitmap;
    }

    boolean isDeleted(long position) {
      if (bitmap != null) {
        long word = position >>> 6;
        return word < bitmap.length && (bitmap[(int) word] >>> (position & 63) & 1L) != 0;
      }
      // Positions ascend within a batch and mostly across them (a split or a skipped row
      // group jumps ahead); a step back searches again.
      if (at > 0 && positions[at - 1] >= position) {
        at = lowerBound(position);
      }
      while (at < positions.length && positions[at] < position) {
        at++;
      }
      return at < positions.length && positions[at] == position;
    }

    /**
     * The rows of a batch holding the positions {@code first} to {@code first + rows - 1} that
     * are not deleted, as offsets into the batch written to {@code selected} (at least {@code
     * rows} long); returns how many. Returns {@code rows} without writing when none of them is
     * deleted, so a batch without deletes costs a search, not a test per row.
     */
    int select(long first, int rows, int[] selected) {
      long end = first + rows;
      if (bitmap != null) {
        return selectBits(first, rows, end, selected);
      }
      if (at > 0 && positions[at - 1] >= first) {
        at = lowerBound(first);
      } else if (at < positions.length && positions[at] < first) {
        at = lowerBound(first);
      }
      if (at >= positions.length || positions[at] >= end) {
        return rows;
      }
      int kept = 0;
      int next = at;
      for (int i = 0; i < rows; i++) {
        if (next < positions.length && positions[next] == first + i) {
          next++;
        } else {
          selected[kept++] = i;
        }
      }
      at = next;
      return kept;
    }

    private int selectBits(long first, int rows, long end, int[] selected) {
      long lastWord = Math.min((end - 1) >>> 6, bitmap.length - 1L);
      boolean any = false;
      for (long word = first >>> 6; word <= lastWord && !any; word++) {
        long bits = bitmap[(int) word];
        if (word == first >>> 6) {
          bits &= -1L << (first & 63);
        }
        if (word == (end - 1) >>> 6 && (end & 63) != 0) {
          bits &= -1L >>> (64 - (end & 63));
        }
        any = bits != 0;
      }
      if (!any) {
        return rows;
      }
      int kept = 0;
      for (int i = 0; i < rows; i++) {
        long position = first + i;
        long word = position >>> 6;
        if (word >= bitmap.length || (bitmap[(int) word] >>> (position & 63) & 1L) == 0) {
          selected[kept++] = i;
        }
      }
      return kept;
    }

    private int lowerBound(long position) {
      int lo = 0;
      int hi = positions.length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (positions[mid] < position) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }
  }

  private final String scan;
  private final HashMap<String, FileDeletes> files;

  private DeletedRows(String scan, HashMap<String, FileDeletes> files) {
    this.scan = scan;
    this.files = files;
  }

  /** The deleted rows of a scan's files, keyed by their Hadoop path (to be broadcast). */
  static DeletedRows of(String scan, HashMap<String, FileDeletes> files) {
    return new DeletedRows(scan, files);
  }

  /**
   * One file's deletes: ascending {@code positions}, or a bitmap of its {@code rows} where
   * that is smaller (many deletes).
   */
  static FileDeletes fileDeletes(long length, long[] positions, long rows) {
    long words = (rows + 63) >>> 6;
    if (words < positions.length && words <= Integer.MAX_VALUE - 8) {
      long[] bitmap = new long[(int) words];
      for (long position : positions) {
        bitmap[(int) (position >>> 6)] |= 1L << (position & 63);
      }
      return new FileDeletes(length, null, bitmap);
    }
    for (int p = 1; p < positions.length; p++) {
      if (positions[p] <= positions[p - 1]) {
        throw new IllegalArgumentException("deleted positions must ascend");
      }
    }
    return new FileDeletes(length, positions, null);
  }

  /**
   * Parse {@code encoded} and broadcast it; returns the key a scan names it by.
   *
   * <p>Encoding (little-endian): the scan's name for messages ({@code table main.t (snapshot
   * 7)}) as UTF-8 length (int32) and bytes, the file count (int32), then per file the path's
   * UTF-8 length
   * (int32) and bytes, the file's length (int64; -1: not checked), then either the number of
   * deleted positions (int32) and the positions (int64 each, ascending), or minus the number
   * of words (int32) of a bitmap and the words (int64 each; bit {@code p & 63} of word {@code
   * p >>> 6} set when position p is deleted).
   */
  public static String register(byte[] encoded) {
    ByteBuffer buffer = ByteBuffer.wrap(encoded).order(ByteOrder.LITTLE_ENDIAN);
    String scan = utf8(buffer);
    int fileCount = buffer.getInt();
    HashMap<String, FileDeletes> files = new HashMap<>(fileCount * 2);
    for (int i = 0; i < fileCount; i++) {
      String url = utf8(buffer);
      long length = buffer.getLong();
      int count = buffer.getInt();
      long[] values = new long[Math.abs(count)];
      buffer.asLongBuffer().get(values);
      buffer.position(buffer.position() + values.length * Long.BYTES);
      if (count < 0) {
        files.put(new Path(url).toString(), new FileDeletes(length, null, values));
        continue;
      }
      for (int p = 1; p < values.length; p++) {
        if (values[p] <= values[p - 1]) {
          throw new IllegalArgumentException("deleted positions must ascend");
        }
      }
      files.put(new Path(url).toString(), new FileDeletes(length, values, null));
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
  Cursor of(String path, long length) {
    FileDeletes found = files.get(path);
    if (found == null) {
      throw new IllegalStateException(
          ErrorNames.text(
              ErrorNames.DATA_FILE_MISSING,
              "data file " + path + " of " + scan + " was not planned"));
    }
    if (found.length >= 0 && found.length != length) {
      throw new IllegalStateException(
          ErrorNames.text(
              ErrorNames.DATA_FILE_CORRUPT,
              "data file "
                  + path
                  + " of "
                  + scan
                  + " is "
                  + length
                  + " bytes in Spark's listing but "
                  + found.length
                  + " bytes in the catalog: it was replaced after the lake wrote it; "
                  + "restore it, or read a snapshot that does not use it"));
    }
    return found.cursor();
  }
}
