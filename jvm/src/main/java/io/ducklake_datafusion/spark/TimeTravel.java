package io.ducklake_datafusion.spark;

import java.lang.reflect.Method;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.Option;

/**
 * {@code TIMESTAMP AS OF <expression>} as microseconds since the epoch, computed by Spark's
 * own {@code TimeTravelSpec.create} (the session's time zone, Spark's checks), so a view
 * reads the snapshot a table would. Called by reflection: its last parameter is the {@code
 * SQLConf} on Spark 3.5 and the session's time zone id from Spark 4.
 */
final class TimeTravel {
  private TimeTravel() {}

  static long micros(SparkSession session, Expression timestamp) {
    try {
      Class<?> spec = Class.forName("org.apache.spark.sql.catalyst.analysis.TimeTravelSpec");
      Object conf = session.sessionState().conf();
      Object found = null;
      for (Method method : spec.getMethods()) {
        if (!method.getName().equals("create") || method.getParameterCount() != 3) {
          continue;
        }
        Class<?> last = method.getParameterTypes()[2];
        Object zoneOrConf = last == String.class ? session.sessionState().conf().sessionLocalTimeZone() : conf;
        found = method.invoke(null, Option.apply(timestamp), Option.empty(), zoneOrConf);
        break;
      }
      if (!(found instanceof Option) || ((Option<?>) found).isEmpty()) {
        throw new IllegalStateException("ducklake: Spark's TimeTravelSpec.create gave no time");
      }
      Object asOf = ((Option<?>) found).get();
      return (Long) asOf.getClass().getMethod("timestamp").invoke(asOf);
    } catch (java.lang.reflect.InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new DuckLakeException(ErrorNames.INVALID_OPTION, "TIMESTAMP AS OF: " + cause.getMessage(), cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("ducklake: Spark has no TimeTravelSpec.create", e);
    }
  }
}
