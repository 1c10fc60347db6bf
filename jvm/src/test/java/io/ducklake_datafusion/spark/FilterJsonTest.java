package io.ducklake_datafusion.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.junit.jupiter.api.Test;

/**
 * The JSON the planner prunes with ({@code spark/planner/_filters_json.py} reads it): every
 * filter Spark pushes that has one meaning on both sides is spelled, anything else is not.
 */
class FilterJsonTest {
  private static String json(Filter filter) {
    ObjectNode node = FilterJson.of(filter);
    return node == null ? null : node.toString();
  }

  @Test
  void comparisonsSpellTheirOpAttributeAndLiteral() {
    assertEquals("{\"op\":\"EqualTo\",\"attr\":\"k\",\"value\":{\"long\":5}}", json(new EqualTo("k", 5L)));
    assertEquals(
        "{\"op\":\"EqualNullSafe\",\"attr\":\"k\",\"value\":{\"long\":5}}",
        json(new EqualNullSafe("k", 5)));
    assertEquals(
        "{\"op\":\"GreaterThan\",\"attr\":\"k\",\"value\":{\"long\":7}}",
        json(new GreaterThan("k", (short) 7)));
    assertEquals(
        "{\"op\":\"GreaterThanOrEqual\",\"attr\":\"k\",\"value\":{\"long\":-1}}",
        json(new GreaterThanOrEqual("k", (byte) -1)));
    assertEquals(
        "{\"op\":\"LessThan\",\"attr\":\"s\",\"value\":{\"string\":\"p3\"}}",
        json(new LessThan("s", "p3")));
    assertEquals(
        "{\"op\":\"LessThanOrEqual\",\"attr\":\"b\",\"value\":{\"bool\":true}}",
        json(new LessThanOrEqual("b", true)));
  }

  @Test
  void literalsKeepTheirExactText() {
    assertEquals("{\"double\":\"0.1\"}", FilterJson.of(new EqualTo("f", 0.1d)).get("value").toString());
    assertEquals("{\"double\":\"1.1\"}", FilterJson.of(new EqualTo("f", 1.1f)).get("value").toString());
    assertEquals(
        "{\"decimal\":\"12345678901234567890.25\"}",
        FilterJson.of(new EqualTo("x", new BigDecimal("12345678901234567890.25")))
            .get("value")
            .toString());
    assertEquals(
        "{\"date\":\"2024-02-10\"}",
        FilterJson.of(new EqualTo("d", java.sql.Date.valueOf("2024-02-10"))).get("value").toString());
    assertEquals(
        "{\"date\":\"1969-07-20\"}",
        FilterJson.of(new EqualTo("d", java.time.LocalDate.of(1969, 7, 20))).get("value").toString());
  }

  @Test
  void literalsWithoutOneMeaningOnBothSidesAreNotSent() {
    assertNull(json(new EqualTo("f", Double.NaN)));
    assertNull(json(new GreaterThan("f", Double.POSITIVE_INFINITY)));
    assertNull(json(new EqualTo("t", new java.sql.Timestamp(0))));
    assertNull(json(new EqualTo("bin", new byte[] {1, 2})));
    assertNull(json(new EqualTo("k", null)));
  }

  @Test
  void unaryStringAndInFilters() {
    assertEquals("{\"op\":\"IsNull\",\"attr\":\"k\"}", json(new IsNull("k")));
    assertEquals("{\"op\":\"IsNotNull\",\"attr\":\"k\"}", json(new IsNotNull("k")));
    assertEquals(
        "{\"op\":\"StringStartsWith\",\"attr\":\"s\",\"value\":{\"string\":\"ab\"}}",
        json(new StringStartsWith("s", "ab")));
    assertEquals(
        "{\"op\":\"StringEndsWith\",\"attr\":\"s\",\"value\":{\"string\":\"yz\"}}",
        json(new StringEndsWith("s", "yz")));
    assertEquals(
        "{\"op\":\"StringContains\",\"attr\":\"s\",\"value\":{\"string\":\"m\"}}",
        json(new StringContains("s", "m")));
    assertEquals(
        "{\"op\":\"In\",\"attr\":\"k\",\"values\":[{\"long\":5},{\"long\":3500}]}",
        json(new In("k", new Object[] {5L, 3500L})));
    assertNull(json(new In("k", new Object[] {5L, new java.sql.Timestamp(0)})));
  }

  @Test
  void andKeepsTheSideThatTranslatesOrNeedsBoth() {
    Filter k = new GreaterThan("k", 1L);
    Filter untranslatable = new EqualTo("t", new java.sql.Timestamp(0));
    assertEquals(json(k), json(new And(k, untranslatable)));
    assertEquals(json(k), json(new And(untranslatable, k)));
    assertNull(json(new And(untranslatable, untranslatable)));
    assertNull(json(new Or(k, untranslatable)));
    assertEquals(
        "{\"op\":\"Or\",\"left\":" + json(k) + ",\"right\":{\"op\":\"IsNull\",\"attr\":\"k\"}}",
        json(new Or(k, new IsNull("k"))));
    assertEquals(
        "{\"op\":\"And\",\"left\":" + json(k) + ",\"right\":{\"op\":\"IsNull\",\"attr\":\"s\"}}",
        json(new And(k, new IsNull("s"))));
  }

  @Test
  void aDeleteSendsItsWholeConditionOrNothing() {
    Filter k = new GreaterThan("k", 1L);
    Filter untranslatable = new EqualTo("t", new java.sql.Timestamp(0));
    // pruning may keep one side of an AND; a delete by it would match more rows
    assertNull(FilterJson.whole(new And(k, untranslatable)));
    assertNull(FilterJson.whole(new Or(k, new And(k, untranslatable))));
    assertNull(FilterJson.whole(new Not(new And(untranslatable, k))));
    Filter both = new And(k, new Not(new IsNull("s")));
    assertEquals(json(both), FilterJson.whole(both).toString());
  }

  @Test
  void notNeedsAChildThatTranslates() {
    assertEquals(
        "{\"op\":\"Not\",\"child\":{\"op\":\"In\",\"attr\":\"k\",\"values\":[{\"long\":1}]}}",
        json(new Not(new In("k", new Object[] {1L}))));
    assertNull(json(new Not(new EqualTo("t", new java.sql.Timestamp(0)))));
  }
}
