package io.ducklake_datafusion.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * The jar splits a partitioned table's rows into files where the catalog's partition texts
 * differ, and nowhere else: checked on the table of cases the Python side checks against
 * DuckDB and the planner ({@code partition_keys.json}; tests/spark/test_spark_partition_keys.py).
 */
class PartitionKeysTest {
  @Test
  void rowsShareAFileExactlyWhenTheirPartitionTextsAreEqual() throws Exception {
    JsonNode cases;
    try (InputStream in = PartitionKeysTest.class.getResourceAsStream("/partition_keys.json")) {
      cases = PlannerProcess.JSON.readTree(in).path("cases");
    }
    assertTrue(cases.size() > 0, "no cases read");
    for (JsonNode test : cases) {
      String kind = test.path("type").asText();
      String transform = test.path("transform").asText();
      String what = transform + " of " + kind;
      DataType type = sparkType(kind);
      PartitionKeys keys =
          PartitionKeys.of(new int[] {0}, new String[] {transform}, new DataType[] {type});
      List<Object[]> found = new ArrayList<>();
      for (JsonNode value : test.path("values")) {
        found.add(keys.of(new GenericInternalRow(new Object[] {sparkValue(kind, value)})));
      }
      JsonNode texts = test.path("partitions");
      for (int i = 0; i < found.size(); i++) {
        for (int j = 0; j < found.size(); j++) {
          boolean sameText = Objects.equals(text(texts.get(i)), text(texts.get(j)));
          assertEquals(
              sameText,
              Arrays.deepEquals(found.get(i), found.get(j)),
              what + ": values " + test.path("values").get(i) + " and " + test.path("values").get(j));
        }
        if (!transform.equals("identity") && texts.get(i).isTextual()) {
          // a calendar key is the number the catalog records
          assertEquals(texts.get(i).asText(), String.valueOf(found.get(i)[0]), what);
        }
      }
      assertFalse(found.isEmpty(), what);
    }
  }

  private static String text(JsonNode node) {
    return node.isNull() ? null : node.asText();
  }

  private static DataType sparkType(String kind) {
    switch (kind) {
      case "TIMESTAMP":
        return DataTypes.TimestampNTZType;
      case "TIMESTAMPTZ":
        return DataTypes.TimestampType;
      case "DATE":
        return DataTypes.DateType;
      case "BIGINT":
        return DataTypes.LongType;
      case "INTEGER":
        return DataTypes.IntegerType;
      case "BOOLEAN":
        return DataTypes.BooleanType;
      case "VARCHAR":
        return DataTypes.StringType;
      case "DOUBLE":
        return DataTypes.DoubleType;
      case "FLOAT":
        return DataTypes.FloatType;
      case "DECIMAL(10,2)":
        return DataTypes.createDecimalType(10, 2);
      case "BLOB":
        return DataTypes.BinaryType;
      default:
        throw new IllegalArgumentException("no Spark type for " + kind);
    }
  }

  /** A case's value as Spark's rows hold it. */
  private static Object sparkValue(String kind, JsonNode value) {
    if (value.isNull()) {
      return null;
    }
    switch (kind) {
      case "TIMESTAMP":
      case "TIMESTAMPTZ":
        LocalDateTime time = LocalDateTime.parse(value.asText());
        return time.toEpochSecond(ZoneOffset.UTC) * 1_000_000L + time.getNano() / 1_000L;
      case "DATE":
        return (int) LocalDate.parse(value.asText()).toEpochDay();
      case "BIGINT":
        return value.asLong();
      case "INTEGER":
        return value.asInt();
      case "BOOLEAN":
        return value.asBoolean();
      case "VARCHAR":
        return UTF8String.fromString(value.asText());
      case "DOUBLE":
        return value.isNumber() ? value.asDouble() : Double.parseDouble(value.asText());
      case "FLOAT":
        return value.isNumber() ? value.floatValue() : Float.parseFloat(value.asText());
      case "DECIMAL(10,2)":
        return Decimal.apply(new BigDecimal(value.asText()), 10, 2);
      case "BLOB":
        return Base64.getDecoder().decode(value.asText());
      default:
        throw new IllegalArgumentException("no Spark value for " + kind);
    }
  }
}
