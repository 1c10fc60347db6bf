package io.ducklake_datafusion.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;

/**
 * The session's catalog manager, asked by reflection: it is a class up to Spark 4.1 and an
 * interface from 4.2, so one compiled call cannot serve both.
 */
final class Catalogs {
  private Catalogs() {}

  /** The current catalog ({@code USE}). */
  static CatalogPlugin current(SparkSession session) {
    return (CatalogPlugin) call(session, "currentCatalog");
  }

  /** The current namespace of the current catalog. */
  static String[] currentNamespace(SparkSession session) {
    return (String[]) call(session, "currentNamespace");
  }

  /** The catalog registered (or configured) as {@code name}; Spark's error if there is none. */
  static CatalogPlugin load(SparkSession session, String name) {
    return (CatalogPlugin) call(session, "catalog", name);
  }

  /** The catalog registered (or configured) as {@code name}; null if there is none. */
  static CatalogPlugin named(SparkSession session, String name) {
    try {
      return load(session, name);
    } catch (RuntimeException e) {
      return null; // CatalogNotFoundException: the name is a namespace, not a catalog
    }
  }

  private static Object call(SparkSession session, String method, String... args) {
    Object manager = session.sessionState().catalogManager();
    try {
      Class<?>[] types = new Class<?>[args.length];
      java.util.Arrays.fill(types, String.class);
      return manager.getClass().getMethod(method, types).invoke(manager, (Object[]) args);
    } catch (java.lang.reflect.InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException(cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("ducklake: Spark's catalog manager has no " + method, e);
    }
  }
}
