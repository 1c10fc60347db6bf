package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;

/**
 * The catalog's writes as planner requests: where to write ({@code write_begin}, {@code
 * create_begin}), the one commit ({@code write_commit}), an empty table ({@code
 * create_table}); and Spark's partition transforms as DuckDB's {@code PARTITIONED BY} keys.
 */
final class LakeWrites {
  private final DuckLakeCatalog catalog;

  LakeWrites(DuckLakeCatalog catalog) {
    this.catalog = catalog;
  }

  /**
   * Where a write of {@code mode} (append, overwrite, overwrite_partitions; delete: a
   * row-level change that only deletes, for which no column type or store is checked) to
   * {@code table} goes, from the snapshot it was loaded at ({@code loaded}) or the latest.
   */
  WriteTarget beginWrite(DuckLakeTable table, String mode, boolean loaded) {
    Protocol.Request request =
        request("write_begin", table.namespace(), table.tableName()).put("mode", mode);
    if (loaded) {
      request.put("snapshot", table.snapshot());
    }
    return new WriteTarget(table.name(), catalog.call(request).header);
  }

  /** Where the rows of a table being created go. */
  WriteTarget beginCreate(Identifier ident, StructType schema, String[] partitionKeys) {
    Protocol.Request request = creation("create_begin", ident, schema, partitionKeys);
    return new WriteTarget(label(ident), catalog.call(request).header);
  }

  /** Create an empty table, as one snapshot. */
  void createEmpty(Identifier ident, StructType schema, String[] partitionKeys) {
    catalog.call(creation("create_table", ident, schema, partitionKeys));
  }

  /**
   * Commit the job's files (of a streaming query's batch {@code stream}: its query and batch
   * ids, or null); the planner's answer ({@code snapshot}, and {@code replayed} when that
   * batch of that query was committed before).
   */
  Protocol.Reply commit(
      WriteTarget target, List<WrittenFile> files, ObjectNode options, ObjectNode stream) {
    Protocol.Request request = Protocol.request("write_commit").put("target", target.target);
    if (options != null) {
      options.fields().forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    }
    if (stream != null) {
      request.put("stream", stream);
    }
    addFiles(request.array("files"), files);
    return catalog.call(request).header;
  }

  /**
   * Commit a row-level change (a {@code DELETE}, {@code UPDATE} or {@code MERGE} rewritten by
   * Spark): the files the executors wrote, and the deleted rows as one blob of {@code
   * deletes} rows ({@link DeletedRowIds#blob}), at most once for a streaming query's batch
   * {@code stream} (its query and batch ids, or null); the planner's answer.
   */
  Protocol.Reply commitChange(
      WriteTarget target,
      String command,
      List<WrittenFile> files,
      DeletedRowIds deletes,
      ObjectNode options,
      ObjectNode stream) {
    Protocol.Request request =
        Protocol.request("change_commit")
            .put("target", target.target)
            .put("command", command)
            .put("deletes", deletes.size())
            .blob(deletes.blob());
    if (stream != null) {
      request.put("stream", stream);
    }
    if (options != null) {
      options.fields().forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    }
    addFiles(request.array("files"), files);
    return catalog.call(request).header;
  }

  private static void addFiles(ArrayNode list, List<WrittenFile> files) {
    Base64.Encoder base64 = Base64.getEncoder();
    for (WrittenFile file : files == null ? java.util.Collections.<WrittenFile>emptyList() : files) {
      ObjectNode entry = list.addObject();
      entry.put("path", file.path);
      entry.put("size", file.size);
      entry.put("footer", base64.encodeToString(file.footer));
      if (file.rowIds) {
        entry.put("row_ids", true);
      }
      if (file.partitionRow != null) {
        try {
          entry.set("partition_row", PlannerProcess.JSON.readTree(file.partitionRow));
        } catch (java.io.IOException e) {
          throw new IllegalStateException("ducklake: unreadable partition values", e);
        }
      }
    }
  }

  private Protocol.Request creation(String op, Identifier ident, StructType schema, String[] keys) {
    for (org.apache.spark.sql.types.StructField field : schema.fields()) {
      if (field.metadata().contains(CURRENT_DEFAULT)) {
        throw new DuckLakeException(
            ErrorNames.UNSUPPORTED_FEATURE,
            label(ident) + ": a new table's column defaults are not written yet (column "
                + field.name() + " DEFAULT " + field.metadata().getString(CURRENT_DEFAULT)
                + "); create it without them, then ALTER TABLE ... ALTER COLUMN "
                + field.name() + " SET DEFAULT ...",
            null);
      }
    }
    return request(op, namespace(ident), ident.name())
        .put("schema", schema.json())
        .put("partitioning", java.util.Arrays.asList(keys));
  }

  /** The field metadata that carries a column's default in Spark (its SQL text). */
  private static final String CURRENT_DEFAULT = "CURRENT_DEFAULT";

  private Protocol.Request request(String op, String namespace, String name) {
    return Protocol.request(op).put("namespace", namespace).put("name", name);
  }

  private String namespace(Identifier ident) {
    if (ident.namespace().length != 1) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          label(ident) + ": a DuckLake table is named <catalog>.<schema>.<table>",
          null);
    }
    return ident.namespace()[0];
  }

  private String label(Identifier ident) {
    return catalog.name() + "." + String.join(".", ident.namespace()) + "." + ident.name();
  }

  /**
   * Spark's partition transforms as DuckDB's keys: a column ({@code identity}), {@code
   * year(c)}, {@code month(c)}, {@code day(c)}, {@code hour(c)}, {@code bucket(n, c)}.
   */
  static String[] partitionKeys(Transform[] transforms, String table) {
    String[] keys = new String[transforms == null ? 0 : transforms.length];
    for (int i = 0; i < keys.length; i++) {
      Transform transform = transforms[i];
      NamedReference[] refs = transform.references();
      String name = transform.name().toLowerCase(Locale.ROOT);
      if (refs.length != 1 || refs[0].fieldNames().length != 1) {
        throw unsupported(transform, table);
      }
      String column = refs[0].fieldNames()[0];
      switch (name) {
        case "identity":
          keys[i] = column;
          break;
        case "years":
        case "months":
        case "days":
        case "hours":
          keys[i] = name.substring(0, name.length() - 1) + "(" + column + ")";
          break;
        case "bucket":
          Object count = transform.arguments()[0] instanceof Literal
              ? ((Literal<?>) transform.arguments()[0]).value()
              : null;
          if (count == null) {
            throw unsupported(transform, table);
          }
          keys[i] = "bucket(" + count + ", " + column + ")";
          break;
        default:
          throw unsupported(transform, table);
      }
    }
    return keys;
  }

  private static DuckLakeException unsupported(Transform transform, String table) {
    return new DuckLakeException(
        ErrorNames.UNSUPPORTED_FEATURE,
        "table " + table + ": partition transform " + transform.describe() + " has no DuckLake "
            + "equivalent (DuckLake partitions by a column, years, months, days, hours or bucket)",
        null);
  }
}
