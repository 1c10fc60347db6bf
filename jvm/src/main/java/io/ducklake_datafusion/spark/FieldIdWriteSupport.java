package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.api.WriteSupport;
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
      fields.add(FieldIds.withIds(schema.getType(i), ids.get(i)));
    }
    return new WriteSupport.WriteContext(
        new MessageType(schema.getName(), fields), context.getExtraMetaData());
  }
}
