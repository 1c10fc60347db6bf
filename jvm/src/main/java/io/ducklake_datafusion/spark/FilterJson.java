package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
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

/**
 * Spark's pushed {@code sources.Filter} objects as the JSON the planner prunes with ({@code
 * ducklake_datafusion/spark/planner/_filters_json.py} reads the same form).
 *
 * <p>Only what has one meaning on both sides is sent: integral, floating, string, boolean,
 * date and decimal literals. A filter on a timestamp or binary literal (or any other) is not
 * sent: it prunes nothing, and Spark applies every filter after the scan regardless.
 */
final class FilterJson {
  private FilterJson() {}

  /**
   * The JSON of all of {@code filter}, or {@code null} when some part cannot be spelled: what
   * a delete sends, which must not match more rows than its condition (where {@link #of} may
   * send one side of an {@code AND}, which prunes less but still correctly).
   */
  static ObjectNode whole(Filter filter) {
    if (filter instanceof And || filter instanceof Or) {
      boolean and = filter instanceof And;
      ObjectNode left = whole(and ? ((And) filter).left() : ((Or) filter).left());
      ObjectNode right = whole(and ? ((And) filter).right() : ((Or) filter).right());
      if (left == null || right == null) {
        return null;
      }
      return binary(PlannerProcess.JSON.createObjectNode(), and ? "And" : "Or", left, right);
    }
    if (filter instanceof Not) {
      ObjectNode child = whole(((Not) filter).child());
      return child == null ? null : negation(PlannerProcess.JSON.createObjectNode(), child);
    }
    return of(filter);
  }

  private static ObjectNode binary(ObjectNode node, String op, ObjectNode left, ObjectNode right) {
    node.put("op", op);
    node.set("left", left);
    node.set("right", right);
    return node;
  }

  private static ObjectNode negation(ObjectNode node, ObjectNode child) {
    node.put("op", "Not");
    node.set("child", child);
    return node;
  }

  /** The JSON of {@code filter}, or {@code null} when it cannot be spelled exactly. */
  static ObjectNode of(Filter filter) {
    ObjectNode node = PlannerProcess.JSON.createObjectNode();
    if (filter instanceof And || filter instanceof Or) {
      Filter left = filter instanceof And ? ((And) filter).left() : ((Or) filter).left();
      Filter right = filter instanceof And ? ((And) filter).right() : ((Or) filter).right();
      ObjectNode l = of(left);
      ObjectNode r = of(right);
      if (filter instanceof Or && (l == null || r == null)) {
        return null;
      }
      if (l == null && r == null) {
        return null;
      }
      if (l == null || r == null) {
        return l == null ? r : l; // AND: either side alone prunes correctly
      }
      return binary(node, filter instanceof And ? "And" : "Or", l, r);
    }
    if (filter instanceof Not) {
      ObjectNode child = of(((Not) filter).child());
      return child == null ? null : negation(node, child);
    }
    if (filter instanceof IsNull) {
      return unary(node, "IsNull", ((IsNull) filter).attribute());
    }
    if (filter instanceof IsNotNull) {
      return unary(node, "IsNotNull", ((IsNotNull) filter).attribute());
    }
    if (filter instanceof In) {
      In in = (In) filter;
      unary(node, "In", in.attribute());
      ArrayNode values = node.putArray("values");
      for (Object value : in.values()) {
        ObjectNode literal = literal(value);
        if (literal == null) {
          return null;
        }
        values.add(literal);
      }
      return node;
    }
    String op;
    String attribute;
    Object value;
    if (filter instanceof EqualTo) {
      op = "EqualTo";
      attribute = ((EqualTo) filter).attribute();
      value = ((EqualTo) filter).value();
    } else if (filter instanceof EqualNullSafe) {
      op = "EqualNullSafe";
      attribute = ((EqualNullSafe) filter).attribute();
      value = ((EqualNullSafe) filter).value();
    } else if (filter instanceof GreaterThan) {
      op = "GreaterThan";
      attribute = ((GreaterThan) filter).attribute();
      value = ((GreaterThan) filter).value();
    } else if (filter instanceof GreaterThanOrEqual) {
      op = "GreaterThanOrEqual";
      attribute = ((GreaterThanOrEqual) filter).attribute();
      value = ((GreaterThanOrEqual) filter).value();
    } else if (filter instanceof LessThan) {
      op = "LessThan";
      attribute = ((LessThan) filter).attribute();
      value = ((LessThan) filter).value();
    } else if (filter instanceof LessThanOrEqual) {
      op = "LessThanOrEqual";
      attribute = ((LessThanOrEqual) filter).attribute();
      value = ((LessThanOrEqual) filter).value();
    } else if (filter instanceof StringStartsWith) {
      op = "StringStartsWith";
      attribute = ((StringStartsWith) filter).attribute();
      value = ((StringStartsWith) filter).value();
    } else if (filter instanceof StringEndsWith) {
      op = "StringEndsWith";
      attribute = ((StringEndsWith) filter).attribute();
      value = ((StringEndsWith) filter).value();
    } else if (filter instanceof StringContains) {
      op = "StringContains";
      attribute = ((StringContains) filter).attribute();
      value = ((StringContains) filter).value();
    } else {
      return null;
    }
    ObjectNode literal = literal(value);
    if (literal == null) {
      return null;
    }
    unary(node, op, attribute);
    node.set("value", literal);
    return node;
  }

  private static ObjectNode unary(ObjectNode node, String op, String attribute) {
    node.put("op", op);
    node.put("attr", attribute);
    return node;
  }

  private static ObjectNode literal(Object value) {
    ObjectNode node = PlannerProcess.JSON.createObjectNode();
    if (value instanceof Long
        || value instanceof Integer
        || value instanceof Short
        || value instanceof Byte) {
      node.put("long", ((Number) value).longValue());
    } else if (value instanceof Double || value instanceof Float) {
      double number = ((Number) value).doubleValue();
      if (Double.isNaN(number) || Double.isInfinite(number)) {
        return null;
      }
      node.put("double", value instanceof Float ? Float.toString((Float) value) : Double.toString(number));
    } else if (value instanceof String) {
      node.put("string", (String) value);
    } else if (value instanceof Boolean) {
      node.put("bool", (Boolean) value);
    } else if (value instanceof java.sql.Date) {
      node.put("date", ((java.sql.Date) value).toLocalDate().toString());
    } else if (value instanceof java.time.LocalDate) {
      node.put("date", value.toString());
    } else if (value instanceof BigDecimal) {
      node.put("decimal", ((BigDecimal) value).toPlainString());
    } else {
      return null;
    }
    return node;
  }
}
