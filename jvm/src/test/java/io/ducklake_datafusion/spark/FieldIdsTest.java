package io.ducklake_datafusion.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;
import org.apache.parquet.schema.Type;
import org.apache.parquet.schema.Types;
import org.junit.jupiter.api.Test;

/** Every field of the Parquet schema gets its column's id: list elements and map entries too. */
class FieldIdsTest {
  @Test
  void idsReachEveryNestedField() throws Exception {
    GroupType list =
        Types.optionalGroup()
            .as(LogicalTypeAnnotation.listType())
            .addField(
                Types.repeatedGroup()
                    .addField(Types.optional(PrimitiveTypeName.INT32).named("element"))
                    .named("list"))
            .named("l");
    GroupType map =
        Types.optionalGroup()
            .as(LogicalTypeAnnotation.mapType())
            .addField(
                Types.repeatedGroup()
                    .addField(Types.required(PrimitiveTypeName.BINARY).named("key"))
                    .addField(
                        Types.optionalGroup()
                            .addField(Types.optional(PrimitiveTypeName.DOUBLE).named("x"))
                            .named("value"))
                    .named("key_value"))
            .named("m");
    Type withList =
        FieldIds.withIds(
            list, PlannerProcess.JSON.readTree("{\"id\":3,\"children\":[{\"id\":4,\"children\":[]}]}"));
    assertEquals(3, withList.getId().intValue());
    assertEquals(4, withList.asGroupType().getType(0).asGroupType().getType(0).getId().intValue());
    Type withMap =
        FieldIds.withIds(
            map,
            PlannerProcess.JSON.readTree(
                "{\"id\":5,\"children\":[{\"id\":6,\"children\":[]},"
                    + "{\"id\":7,\"children\":[{\"id\":8,\"children\":[]}]}]}"));
    GroupType entries = withMap.asGroupType().getType(0).asGroupType();
    assertEquals(5, withMap.getId().intValue());
    assertEquals(6, entries.getType(0).getId().intValue());
    assertEquals(7, entries.getType(1).getId().intValue());
    assertEquals(8, entries.getType(1).asGroupType().getType(0).getId().intValue());
    assertEquals(LogicalTypeAnnotation.mapType(), withMap.getLogicalTypeAnnotation());
  }
}
