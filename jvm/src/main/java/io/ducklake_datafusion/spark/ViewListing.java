package io.ducklake_datafusion.spark;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.UnresolvedNamespace;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ShowViews;
import org.apache.spark.sql.catalyst.util.StringUtils;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;

/**
 * {@code SHOW VIEWS [IN lake.schema] [LIKE pattern]} for a {@link DuckLakeCatalog}: the session's
 * SQL parser, wrapped (injected by {@link DuckLakeExtensions}), answers it with the lake's views.
 *
 * <p>Spark 3.5 to 4.3 run {@code SHOW VIEWS} for the session catalog only ({@code
 * [MISSING_CATALOG_ABILITY.VIEWS]} for any other), and refuse it in their analyzer before an
 * injected resolution rule sees the plan, so the parsed statement is replaced here, before
 * analysis, by its rows ({@code namespace}, {@code viewName}, {@code isTemporary}, Spark's
 * columns). The wrapper is a dynamic proxy of Spark's {@code ParserInterface}, whose methods
 * differ by release: every call goes to Spark's parser, and only a parsed {@code SHOW VIEWS}
 * of a DuckLake catalog is changed.
 */
final class ViewListing implements InvocationHandler {
  private final SparkSession session;
  private final ParserInterface parser;

  private ViewListing(SparkSession session, ParserInterface parser) {
    this.session = session;
    this.parser = parser;
  }

  static ParserInterface wrap(SparkSession session, ParserInterface parser) {
    return (ParserInterface)
        Proxy.newProxyInstance(
            ParserInterface.class.getClassLoader(),
            new Class<?>[] {ParserInterface.class},
            new ViewListing(session, parser));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    Object result;
    try {
      result = method.invoke(parser, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    if (result instanceof ShowViews) {
      LogicalPlan listed = list((ShowViews) result);
      return listed == null ? result : listed;
    }
    return result;
  }

  /** The rows of {@code show} when it names a DuckLake catalog's namespace, else null. */
  private LogicalPlan list(ShowViews show) {
    List<String> parts;
    if (show.namespace() instanceof UnresolvedNamespace) {
      parts = ScalaBridge.javaList(((UnresolvedNamespace) show.namespace()).multipartIdentifier());
    } else if (show.namespace().getClass().getSimpleName().startsWith("CurrentNamespace")) {
      parts = new ArrayList<>();
    } else {
      return null;
    }
    CatalogPlugin plugin;
    List<String> namespace;
    if (parts.isEmpty()) {
      plugin = Catalogs.current(session);
      namespace = java.util.Arrays.asList(Catalogs.currentNamespace(session));
    } else {
      plugin = Catalogs.named(session, parts.get(0));
      namespace = parts.subList(plugin == null ? 0 : 1, parts.size());
      if (plugin == null) {
        plugin = Catalogs.current(session);
      }
    }
    if (!(plugin instanceof DuckLakeCatalog)) {
      return null;
    }
    DuckLakeCatalog catalog = (DuckLakeCatalog) plugin;
    if (namespace.size() != 1) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "SHOW VIEWS in catalog '" + catalog.name() + "' takes one schema, got "
              + String.join(".", namespace),
          null);
    }
    List<String> names = catalog.viewNames(namespace.get(0));
    if (show.pattern().isDefined()) {
      names = ScalaBridge.javaList(StringUtils.filterPattern(ScalaBridge.list(names), show.pattern().get()));
    }
    List<InternalRow> rows = new ArrayList<>();
    for (String name : names) {
      rows.add(
          new GenericInternalRow(
              new Object[] {UTF8String.fromString(namespace.get(0)), UTF8String.fromString(name), false}));
    }
    return localRelation(show, rows);
  }

  /** A {@code LocalRelation} of {@code show}'s columns (its constructor differs by release). */
  private static LogicalPlan localRelation(ShowViews show, List<InternalRow> rows) {
    for (Constructor<?> constructor : LocalRelation.class.getConstructors()) {
      int count = constructor.getParameterCount();
      if (count < 3 || constructor.getParameterTypes()[2] != boolean.class) {
        continue;
      }
      Object[] args = new Object[count];
      args[0] = show.output();
      args[1] = ScalaBridge.list(rows);
      args[2] = false;
      for (int i = 3; i < count; i++) {
        args[i] = Option.empty();
      }
      try {
        return (LogicalPlan) constructor.newInstance(args);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("ducklake: cannot build Spark's LocalRelation", e);
      }
    }
    throw new IllegalStateException("ducklake: Spark's LocalRelation has no known constructor");
  }
}
