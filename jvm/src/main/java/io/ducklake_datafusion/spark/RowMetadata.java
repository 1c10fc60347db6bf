package io.ducklake_datafusion.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The metadata columns a scan of a DuckLake table adds when asked ({@code
 * SupportsMetadataColumns}): each row's id, its data file's catalog id and its position in that
 * file. Spark's row-level {@code DELETE}, {@code UPDATE} and {@code MERGE} name the rows they
 * change by them ({@link DuckLakeRowLevelOperation}); a query may select them too. The row id
 * is never null; the file and the position are null for a row inlined in the catalog. The
 * planner computes the same three for the rows it reads ({@code _scan.METADATA_COLUMNS}).
 */
final class RowMetadata {
  static final String ROW_ID = "_ducklake_rowid";
  static final String FILE_ID = "_ducklake_file_id";
  static final String POSITION = "_ducklake_position";
  private static final String[] NAMES = {ROW_ID, FILE_ID, POSITION};

  private RowMetadata() {}

  /** The columns, as Spark's catalog API declares them. */
  static MetadataColumn[] columns() {
    MetadataColumn[] columns = new MetadataColumn[NAMES.length];
    for (int i = 0; i < NAMES.length; i++) {
      final String name = NAMES[i];
      columns[i] =
          new MetadataColumn() {
            @Override
            public String name() {
              return name;
            }

            @Override
            public DataType dataType() {
              return DataTypes.LongType;
            }

            @Override
            public boolean isNullable() {
              return !ROW_ID.equals(name);
            }

            @Override
            public String comment() {
              return ROW_ID.equals(name)
                  ? "the row's id in the lake"
                  : FILE_ID.equals(name)
                      ? "the catalog id of the row's data file (null: inlined in the catalog)"
                      : "the row's position in its data file (null: inlined in the catalog)";
            }
          };
    }
    return columns;
  }

  /** Whether {@code name} is one of the columns. */
  static boolean isMetadata(String name) {
    return kind(name) >= 0;
  }

  /** The column's kind: 0 row id, 1 file id, 2 position; -1 for another name. */
  static int kind(String name) {
    for (int i = 0; i < NAMES.length; i++) {
      if (NAMES[i].equals(name)) {
        return i;
      }
    }
    return -1;
  }

  /** The kinds of {@code names}, in order. */
  static int[] kinds(List<String> names) {
    int[] kinds = new int[names.size()];
    for (int i = 0; i < kinds.length; i++) {
      kinds[i] = kind(names.get(i));
    }
    return kinds;
  }

  /** {@code data} followed by the metadata columns {@code names}, as a scan reads them. */
  static StructType withColumns(StructType data, List<String> names) {
    List<StructField> fields = new ArrayList<>(java.util.Arrays.asList(data.fields()));
    for (String name : names) {
      fields.add(new StructField(name, DataTypes.LongType, !ROW_ID.equals(name), Metadata.empty()));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }
}
