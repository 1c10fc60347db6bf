package io.ducklake_datafusion.spark;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Option;
import scala.Tuple3;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions = io.ducklake_datafusion.spark.DuckLakeExtensions}: the change
 * feed in SQL, as Delta registers {@code table_changes}, and the lake's views ({@link
 * DuckLakeViews}, listed by {@code SHOW VIEWS} through {@link ViewListing}), which Spark does not
 * resolve in a DataSourceV2 catalog by itself.
 *
 * <pre>
 * SELECT * FROM ducklake_table_changes('lake.main.orders', 3, 7)
 * SELECT * FROM ducklake_table_changes('lake.main.orders', '2026-11-01 00:00:00')  -- to latest
 * </pre>
 *
 * <p>The first argument names a table of a {@link DuckLakeCatalog} ({@code catalog.schema.table},
 * or {@code schema.table} in the current catalog); the bounds are inclusive snapshot ids or
 * times. The rows are those of {@code read_changes}: {@code snapshot_id}, {@code rowid}, {@code
 * change_type}, then the table's columns at the end snapshot, computed by the planner.
 */
public class DuckLakeExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  public static final String TABLE_CHANGES = "ducklake_table_changes";

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    ExpressionInfo info =
        new ExpressionInfo(
            DuckLakeExtensions.class.getName(),
            null,
            TABLE_CHANGES,
            "_FUNC_(table, start[, end]) - the change feed of a DuckLake table from snapshot "
                + "start through end (snapshot ids or times; no end: the latest)",
            "");
    scala.Function1 builder = new Builder();
    extensions.injectTableFunction(new Tuple3(new FunctionIdentifier(TABLE_CHANGES), info, builder));
    extensions.injectParser(
        new scala.runtime.AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
          @Override
          public ParserInterface apply(SparkSession session, ParserInterface parser) {
            return ViewListing.wrap(session, parser);
          }
        });
    extensions.injectResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new DuckLakeViews(session);
          }
        });
    return BoxedUnit.UNIT;
  }

  /** The arguments to a relation of the feed. */
  private static final class Builder
      extends AbstractFunction1<scala.collection.Seq<Expression>, LogicalPlan> {
    @Override
    public LogicalPlan apply(scala.collection.Seq<Expression> arguments) {
      List<Expression> args =
          scala.collection.JavaConverters.seqAsJavaListConverter(arguments).asJava();
      if (args.size() < 2 || args.size() > 3) {
        throw usage("takes 2 or 3 arguments, got " + args.size());
      }
      String[] values = new String[args.size()];
      for (int i = 0; i < values.length; i++) {
        Expression arg = args.get(i);
        Object value = arg.foldable() ? arg.eval(null) : null;
        if (value == null) {
          throw usage("argument " + (i + 1) + " must be a constant, not " + arg.sql());
        }
        values[i] = value.toString();
      }
      SparkSession session = SparkSession.active();
      List<String> parts;
      try {
        scala.collection.Seq<String> parsed =
            session.sessionState().sqlParser().parseMultipartIdentifier(values[0]);
        parts = scala.collection.JavaConverters.seqAsJavaListConverter(parsed).asJava();
      } catch (Exception e) {
        throw usage("'" + values[0] + "' is not a table name: " + e.getMessage());
      }
      CatalogPlugin plugin;
      String[] namespace;
      if (parts.size() == 3) {
        plugin = Catalogs.load(session, parts.get(0));
        namespace = new String[] {parts.get(1)};
      } else if (parts.size() == 2) {
        plugin = Catalogs.current(session);
        namespace = new String[] {parts.get(0)};
      } else {
        throw usage("name the table as catalog.schema.table, got '" + values[0] + "'");
      }
      if (!(plugin instanceof DuckLakeCatalog)) {
        throw usage(
            "catalog '" + plugin.name() + "' is not a DuckLake catalog (" + DuckLakeCatalog.class.getName() + ")");
      }
      DuckLakeCatalog catalog = (DuckLakeCatalog) plugin;
      Identifier ident = Identifier.of(namespace, parts.get(parts.size() - 1));
      ChangesTable table = catalog.loadChanges(ident, values[1], values.length > 2 ? values[2] : null);
      return DataSourceV2Relation.create(table, Option.apply(catalog), Option.apply(ident));
    }
  }

  private static DuckLakeException usage(String what) {
    return new DuckLakeException(
        ErrorNames.INVALID_OPTION,
        TABLE_CHANGES + "('catalog.schema.table', start[, end]) " + what,
        null);
  }
}
