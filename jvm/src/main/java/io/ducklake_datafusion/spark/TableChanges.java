package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.ColumnDefaultValue;
import org.apache.spark.sql.connector.catalog.TableChange;

/**
 * Spark's {@link TableChange}s as the planner's {@code schema_change} request reads them
 * ({@code spark/planner/_ddl.py}): one JSON object each, its {@code op}, the column's {@code
 * path} and the op's values, a type as Spark's JSON of it. A change the planner cannot know is
 * sent as {@code unsupported}, with its class in {@code what}: the planner refuses it by name
 * before anything commits, so every refusal is worded once, there.
 */
final class TableChanges {
  private TableChanges() {}

  static void addTo(ArrayNode out, TableChange[] changes) {
    for (TableChange change : changes) {
      out.add(json(change));
    }
  }

  static ObjectNode json(TableChange change) {
    ObjectNode node = PlannerProcess.JSON.createObjectNode();
    if (change instanceof TableChange.ColumnChange) {
      ArrayNode path = node.putArray("path");
      for (String name : ((TableChange.ColumnChange) change).fieldNames()) {
        path.add(name);
      }
    }
    if (change instanceof TableChange.AddColumn) {
      TableChange.AddColumn add = (TableChange.AddColumn) change;
      node.put("op", "add_column");
      node.put("type", add.dataType().json());
      node.put("nullable", add.isNullable());
      putText(node, "comment", add.comment());
      if (add.position() != null) {
        node.put("position", add.position().toString());
      }
      ColumnDefaultValue value = add.defaultValue();
      putText(node, "default", value == null ? null : value.getSql());
    } else if (change instanceof TableChange.DeleteColumn) {
      node.put("op", "drop_column");
      node.put("if_exists", Boolean.TRUE.equals(((TableChange.DeleteColumn) change).ifExists()));
    } else if (change instanceof TableChange.RenameColumn) {
      node.put("op", "rename_column");
      node.put("new_name", ((TableChange.RenameColumn) change).newName());
    } else if (change instanceof TableChange.UpdateColumnType) {
      node.put("op", "set_type");
      node.put("type", ((TableChange.UpdateColumnType) change).newDataType().json());
    } else if (change instanceof TableChange.UpdateColumnNullability) {
      node.put("op", "set_nullable");
      node.put("nullable", ((TableChange.UpdateColumnNullability) change).nullable());
    } else if (change instanceof TableChange.UpdateColumnDefaultValue) {
      // (Spark's empty text drops the default)
      node.put("op", "set_default");
      putText(node, "default", ((TableChange.UpdateColumnDefaultValue) change).newDefaultValue());
    } else if (change instanceof TableChange.UpdateColumnComment) {
      node.put("op", "set_comment");
      putText(node, "comment", ((TableChange.UpdateColumnComment) change).newComment());
    } else if (change instanceof TableChange.SetProperty) {
      TableChange.SetProperty set = (TableChange.SetProperty) change;
      node.put("op", "set_property");
      node.put("property", set.property());
      putText(node, "value", set.value());
    } else if (change instanceof TableChange.RemoveProperty) {
      node.put("op", "remove_property");
      node.put("property", ((TableChange.RemoveProperty) change).property());
    } else {
      node.put("op", "unsupported");
      node.put("what", change.getClass().getSimpleName());
    }
    return node;
  }

  private static void putText(ObjectNode node, String name, String value) {
    if (value != null) {
      node.put(name, value);
    }
  }
}
