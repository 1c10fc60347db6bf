package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.Serializable;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * A partitioned table's keys as a writer sees them: which partition each row belongs to, so
 * that every file holds the rows of one partition, as DuckLake requires.
 *
 * <p>The writer only needs to tell partitions apart: a key is the column's value ({@code
 * identity}) or its calendar part in UTC ({@code year}, {@code month}, {@code day}, {@code
 * hour}; DuckLake 1.1's {@code epoch_*}: whole units since 1970). The partition values the
 * catalog records are computed by the planner from each file's first row ({@link #raw}), with
 * the same code that partitions the package's own writes, so both agree with DuckDB's text.
 */
final class PartitionKeys implements Serializable {
  private static final long serialVersionUID = 1L;
  private final int[] ordinals;
  private final String[] transforms;
  private final DataType[] types;

  private PartitionKeys(int[] ordinals, String[] transforms, DataType[] types) {
    this.ordinals = ordinals;
    this.transforms = transforms;
    this.types = types;
  }

  /** The keys of the planner's {@code partition_keys} (empty: unpartitioned). */
  static PartitionKeys of(List<Protocol.Reply> keys, StructType schema) {
    int n = keys.size();
    int[] ordinals = new int[n];
    String[] transforms = new String[n];
    DataType[] types = new DataType[n];
    for (int i = 0; i < n; i++) {
      ordinals[i] = (int) keys.get(i).integer("ordinal");
      transforms[i] = keys.get(i).text("transform");
      types[i] = schema.fields()[ordinals[i]].dataType();
    }
    return of(ordinals, transforms, types);
  }

  /** The keys reading columns {@code ordinals} (of {@code types}) through {@code transforms}. */
  static PartitionKeys of(int[] ordinals, String[] transforms, DataType[] types) {
    String[] lower = new String[transforms.length];
    for (int i = 0; i < lower.length; i++) {
      lower[i] = transforms[i].toLowerCase(Locale.ROOT);
    }
    return new PartitionKeys(ordinals.clone(), lower, types.clone());
  }

  boolean isEmpty() {
    return ordinals.length == 0;
  }

  /** The names of the key columns, in key order. */
  String[] columns(StructType schema) {
    String[] names = new String[ordinals.length];
    for (int i = 0; i < names.length; i++) {
      names[i] = schema.fields()[ordinals[i]].name();
    }
    return names;
  }

  /** The row's partition: comparable with {@link Arrays#deepEquals}, owned (rows are reused). */
  Object[] of(InternalRow row) {
    Object[] key = new Object[ordinals.length];
    for (int i = 0; i < key.length; i++) {
      int ordinal = ordinals[i];
      if (row.isNullAt(ordinal)) {
        continue;
      }
      DataType type = types[i];
      if (transforms[i].equals("identity")) {
        Object value = row.get(ordinal, type);
        if (value instanceof byte[]) {
          value = ((byte[]) value).clone();
        } else if (type instanceof StringType || type instanceof DecimalType) {
          value = value.toString();
        }
        if (value instanceof Double || value instanceof Float) {
          // one partition for every NaN and one for both zeros, as DuckDB partitions floats
          double number = ((Number) value).doubleValue();
          value = Double.isNaN(number) ? "NaN" : (Object) (number + 0.0); // -0.0 + 0.0 is 0.0
        }
        key[i] = value;
      } else {
        key[i] = calendar(transforms[i], type instanceof DateType
            ? ZonedDateTime.of(LocalDate.ofEpochDay(row.getInt(ordinal)).atStartOfDay(), ZoneOffset.UTC)
            : micros(row.getLong(ordinal)));
      }
    }
    return key;
  }

  private static ZonedDateTime micros(long micros) {
    long seconds = Math.floorDiv(micros, 1_000_000L);
    long nanos = Math.floorMod(micros, 1_000_000L) * 1_000L;
    return Instant.ofEpochSecond(seconds, nanos).atZone(ZoneOffset.UTC);
  }

  private static long calendar(String transform, ZonedDateTime time) {
    long years = time.getYear() - 1970L;
    switch (transform) {
      case "year":
        return time.getYear();
      case "month":
        return time.getMonthValue();
      case "day":
        return time.getDayOfMonth();
      case "hour":
        return time.getHour();
      case "epoch_year":
        return years;
      case "epoch_month":
        return years * 12 + time.getMonthValue() - 1;
      case "epoch_day":
        return Math.floorDiv(time.toEpochSecond(), 86_400L);
      case "epoch_hour":
        return Math.floorDiv(time.toEpochSecond(), 3_600L);
      default:
        throw new IllegalStateException("ducklake: no partition transform " + transform);
    }
  }

  /**
   * The key columns' values of one row, as the planner reads them back: integers, dates (days)
   * and timestamps (microseconds) as numbers, text as text, decimals as their digits, blobs in
   * base64, floats as numbers or "NaN" / "Infinity" / "-Infinity", NULL as null.
   */
  ArrayNode raw(InternalRow row) {
    ArrayNode values = PlannerProcess.JSON.createArrayNode();
    for (int i = 0; i < ordinals.length; i++) {
      int ordinal = ordinals[i];
      DataType type = types[i];
      if (row.isNullAt(ordinal)) {
        values.addNull();
      } else if (type instanceof BooleanType) {
        values.add(row.getBoolean(ordinal));
      } else if (type instanceof ByteType) {
        values.add(row.getByte(ordinal));
      } else if (type instanceof ShortType) {
        values.add(row.getShort(ordinal));
      } else if (type instanceof IntegerType || type instanceof DateType) {
        values.add(row.getInt(ordinal));
      } else if (type instanceof LongType || isTimestamp(type)) {
        values.add(row.getLong(ordinal));
      } else if (type instanceof FloatType || type instanceof DoubleType) {
        double value = type instanceof FloatType ? row.getFloat(ordinal) : row.getDouble(ordinal);
        if (Double.isNaN(value) || Double.isInfinite(value)) {
          values.add(Double.toString(value));
        } else {
          values.add(value);
        }
      } else if (type instanceof BinaryType) {
        values.add(Base64.getEncoder().encodeToString(row.getBinary(ordinal)));
      } else if (type instanceof DecimalType) {
        DecimalType decimal = (DecimalType) type;
        values.add(
            row.getDecimal(ordinal, decimal.precision(), decimal.scale())
                .toJavaBigDecimal()
                .toPlainString());
      } else {
        values.add(row.get(ordinal, type).toString());
      }
    }
    return values;
  }

  private static boolean isTimestamp(DataType type) {
    String name = type.typeName();
    return name.equals("timestamp") || name.equals("timestamp_ntz");
  }
}
