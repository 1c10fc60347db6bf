package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.Type;

/**
 * A Parquet schema's fields given the ids of a DuckLake column tree ({@code {id, children}}
 * per column: a struct's fields, a list's element, a map's key and value), for {@link
 * FieldIdWriteSupport}.
 */
final class FieldIds {
  private FieldIds() {}

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
