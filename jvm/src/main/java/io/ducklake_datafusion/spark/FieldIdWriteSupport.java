package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;

/**
 * Spark's own Parquet write support, with every field's Parquet field id set to its DuckLake
 * column id.
 *
 * <p>DuckDB (and this package) map a data file onto its table by field id, nested fields
 * included: a list's element and a map's key and value are columns with ids of their own.
 * Spark writes a field id only where a {@code StructField} carries one, so list elements and
 * map entries would have none; here the whole Parquet schema Spark derives is given the ids
 * of the table's column tree ({@value #IDS}: JSON, one {@code {id, children}} per top-level
 * column, as the planner's {@code write_begin} sends it). Values are written by Spark's code
 * unchanged: only the schema's ids differ.
 */
final class FieldIdWriteSupport extends ParquetWriteSupport {
  /** The configuration key of the column id tree. */
  static final String IDS = "ducklake.write.field_ids";

  @Override
  public WriteSupport.WriteContext init(Configuration configuration) {
    WriteSupport.WriteContext context = super.init(configuration);
    JsonNode ids;
    try {
      ids = PlannerProcess.JSON.readTree(configuration.get(IDS));
    } catch (IOException e) {
      throw new IllegalStateException("ducklake: unreadable field ids in the write's configuration", e);
    }
    MessageType schema = context.getSchema();
    if (ids == null || ids.size() != schema.getFieldCount()) {
      throw new IllegalStateException(
          "ducklake: the write has " + schema.getFieldCount() + " columns and "
              + (ids == null ? 0 : ids.size()) + " column ids");
    }
    List<Type> fields = new ArrayList<>();
    for (int i = 0; i < schema.getFieldCount(); i++) {
      fields.add(withIds(schema.getType(i), ids.get(i)));
    }
    return new WriteSupport.WriteContext(
        new MessageType(schema.getName(), fields), context.getExtraMetaData());
  }

  /** {@code type} with the ids of {@code node} on it and on every field below it. */
  static Type withIds(Type type, JsonNode node) {
    int id = node.path("id").asInt();
    if (type.isPrimitive()) {
      return type.withId(id);
    }
    GroupType group = type.asGroupType();
    JsonNode children = node.path("children");
    LogicalTypeAnnotation annotation = group.getLogicalTypeAnnotation();
    if (annotation instanceof LogicalTypeAnnotation.ListLogicalTypeAnnotation) {
      // <list> (LIST) { repeated group list { <element> } }
      GroupType repeated = group.getType(0).asGroupType();
      Type element = withIds(repeated.getType(0), children.get(0));
      return group.withNewFields(repeated.withNewFields(element)).withId(id);
    }
    if (annotation instanceof LogicalTypeAnnotation.MapLogicalTypeAnnotation) {
      // <map> (MAP) { repeated group key_value { <key>; <value> } }
      GroupType entries = group.getType(0).asGroupType();
      Type key = withIds(entries.getType(0), children.get(0));
      Type value = withIds(entries.getType(1), children.get(1));
      return group.withNewFields(entries.withNewFields(key, value)).withId(id);
    }
    List<Type> fields = new ArrayList<>();
    for (int i = 0; i < group.getFieldCount(); i++) {
      fields.add(withIds(group.getType(i), children.get(i)));
    }
    return group.withNewFields(fields).withId(id);
  }
}
