package io.ducklake_datafusion.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.TimeZoneAwareExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * How the rows a write receives become rows of the table's files: its columns matched to the
 * table's by name, case-insensitively (as DuckDB matches column names).
 *
 * <p>Spark resolves a batch write's query against the table before the writer sees it (the
 * table's columns, in its order, of its types), so its layout is the table's. A streaming
 * write's rows come as the stream's query made them: Spark leaves their resolution to the
 * connector, and the table may have gained (or lost) columns since the stream started. Every
 * column of the rows must be a column of the table, of the same type (nested fields in the same
 * order) or one that widens to it exactly ({@link #widens}); the table's columns the rows lack
 * get their default, as DuckDB's INSERT gives it, else NULL; the others are taken by name
 * whatever their position. Anything else is refused by name before a file is written (with
 * the {@code mergeSchema} option, the rows' new columns are added to the table first: {@link
 * #lacks}).
 */
final class WriteLayout implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The rows' schema, as Spark's JSON of it. */
  private final String rows;
  /** For each column of the table, the ordinal of the rows' column written there (-1: none). */
  private final int[] ordinals;
  /** The table's schema (its file columns), as Spark's JSON of it. */
  private final String table;
  /** For each column of the table the rows lack, its default (null: NULL). */
  private final Literal[] defaults;

  private WriteLayout(String rows, int[] ordinals, String table, Literal[] defaults) {
    this.rows = rows;
    this.ordinals = ordinals;
    this.table = table;
    this.defaults = defaults;
  }

  /**
   * The layout of rows of {@code rows}' schema written to a table of {@code table}'s, or null
   * when the rows are laid out as the table's columns already (nothing to do per row).
   *
   * @throws DuckLakeException a column the table lacks, one given twice, or a type that
   *     differs from the table's (the write's query must cast it)
   */
  static WriteLayout of(StructType rows, StructType table, String name) {
    Map<String, Integer> byName = new HashMap<>();
    StructField[] fields = rows.fields();
    for (int i = 0; i < fields.length; i++) {
      if (byName.put(key(fields[i].name()), i) != null) {
        throw refused(name, "the rows have column '" + fields[i].name() + "' twice");
      }
    }
    StructField[] columns = table.fields();
    Map<String, Integer> tableColumns = new HashMap<>();
    for (int i = 0; i < columns.length; i++) {
      tableColumns.put(key(columns[i].name()), i);
    }
    for (StructField field : fields) {
      Integer column = tableColumns.get(key(field.name()));
      if (column == null) {
        throw refused(
            name,
            "it has no column '" + field.name() + "' (its columns: "
                + String.join(", ", table.fieldNames()) + "); add it to the table first, or "
                + "write with the option mergeSchema=true, which adds the rows' new columns");
      }
      DataType expected = columns[column].dataType();
      if (!loose(field.dataType()).equals(loose(expected))
          && !widens(field.dataType(), expected)) {
        throw refused(
            name,
            "its column '" + columns[column].name() + "' is " + expected.simpleString()
                + " but the rows' is " + field.dataType().simpleString() + "; cast it in the "
                + "query"
                + (expected instanceof StructType
                    ? " (mergeSchema adds a struct's new fields last, in the rows' order)"
                    : ""));
      }
    }
    int[] ordinals = new int[columns.length];
    Literal[] defaults = new Literal[columns.length];
    boolean same = columns.length == fields.length;
    for (int i = 0; i < columns.length; i++) {
      Integer ordinal = byName.get(key(columns[i].name()));
      ordinals[i] = ordinal == null ? -1 : ordinal;
      if (ordinal == null) {
        defaults[i] = defaultOf(columns[i], name);
      }
      same &=
          ordinals[i] == i && !widens(fields[i].dataType(), columns[i].dataType());
    }
    return same ? null : new WriteLayout(rows.json(), ordinals, table.json(), defaults);
  }

  /**
   * Whether the rows have a column, or a field of a struct column, that the table lacks (what
   * {@code mergeSchema} adds, as {@code append(..., schema_mode="merge")} does).
   */
  static boolean lacks(StructType rows, StructType table) {
    Map<String, StructField> have = new HashMap<>();
    for (StructField column : table.fields()) {
      have.put(key(column.name()), column);
    }
    for (StructField field : rows.fields()) {
      StructField column = have.get(key(field.name()));
      if (column == null) {
        return true;
      }
      if (field.dataType() instanceof StructType
          && column.dataType() instanceof StructType
          && lacks((StructType) field.dataType(), (StructType) column.dataType())) {
        return true;
      }
    }
    return false;
  }

  /** A projection of one task's rows into the table's layout (not thread-safe: one per task). */
  UnsafeProjection projection() {
    StructType rowSchema = (StructType) DataType.fromJson(rows);
    StructType tableSchema = (StructType) DataType.fromJson(table);
    List<Expression> columns = new ArrayList<>();
    for (int i = 0; i < ordinals.length; i++) {
      if (ordinals[i] < 0) {
        Literal value = defaults[i];
        columns.add(value != null ? value : new Literal(null, tableSchema.fields()[i].dataType()));
      } else {
        DataType type = rowSchema.fields()[ordinals[i]].dataType();
        DataType column = tableSchema.fields()[i].dataType();
        Expression value = new BoundReference(ordinals[i], type, true);
        columns.add(
            widens(type, column) ? new Cast(value, column, scala.Option.apply("UTC")) : value);
      }
    }
    return UnsafeProjection.create(ScalaBridge.list(columns));
  }

  /**
   * A column's default as the value rows that lack it get (the planner puts DuckLake's in the
   * column's {@code CURRENT_DEFAULT} metadata as a Spark literal, as for Spark's INSERT), or
   * null for none: evaluated once, here on the driver, in UTC.
   */
  private static Literal defaultOf(StructField column, String table) {
    if (!column.metadata().contains(CURRENT_DEFAULT)) {
      return null;
    }
    String sql = column.metadata().getString(CURRENT_DEFAULT);
    try {
      Expression expression =
          SparkSession.active().sessionState().sqlParser().parseExpression(sql);
      if (expression instanceof TimeZoneAwareExpression) {
        expression = (Expression) ((TimeZoneAwareExpression) expression).withTimeZone("UTC");
      }
      return new Literal(expression.eval(null), column.dataType());
    } catch (RuntimeException | org.apache.spark.sql.catalyst.parser.ParseException e) {
      throw new DuckLakeException(
          ErrorNames.DUCKLAKE,
          "a write to " + table + " could not evaluate the default " + sql + " of column '"
              + column.name() + "' for rows that lack it: " + e.getMessage(),
          e);
    }
  }

  /** The field metadata a column's default is in (Spark's own key for it). */
  private static final String CURRENT_DEFAULT = "CURRENT_DEFAULT";

  private static String key(String name) {
    return name.toLowerCase(Locale.ROOT);
  }

  /**
   * Whether a value of {@code from} becomes one of {@code to} exactly, as a batch write casts
   * it: a wider integer, a float as a double, a number as a decimal that holds it. (Not a whole
   * number as a floating-point one, which may round, nor anything that needs a time zone.)
   */
  static boolean widens(DataType from, DataType to) {
    if (from.equals(to) || !Cast.canUpCast(from, to)) {
      return false;
    }
    boolean whole = from instanceof IntegralType;
    return (whole && (to instanceof IntegralType || to instanceof DecimalType))
        || (from instanceof DecimalType && to instanceof DecimalType)
        || (from instanceof FloatType && to instanceof DoubleType);
  }

  /** A type with every nullability flag set and no field metadata: what a column's type is. */
  private static DataType loose(DataType type) {
    if (type instanceof StructType) {
      StructField[] fields = ((StructType) type).fields();
      StructField[] open = new StructField[fields.length];
      for (int i = 0; i < fields.length; i++) {
        open[i] = new StructField(fields[i].name(), loose(fields[i].dataType()), true, Metadata.empty());
      }
      return new StructType(open);
    }
    if (type instanceof ArrayType) {
      return new ArrayType(loose(((ArrayType) type).elementType()), true);
    }
    if (type instanceof MapType) {
      MapType map = (MapType) type;
      return new MapType(loose(map.keyType()), loose(map.valueType()), true);
    }
    return type;
  }

  private static DuckLakeException refused(String table, String why) {
    return new DuckLakeException(
        ErrorNames.INVALID_OPTION, "a write to " + table + " was refused: " + why, null);
  }
}
