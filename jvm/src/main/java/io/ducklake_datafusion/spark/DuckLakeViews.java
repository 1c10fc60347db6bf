package io.ducklake_datafusion.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.AliasIdentifier;
import org.apache.spark.sql.catalyst.analysis.Analyzer;
import org.apache.spark.sql.catalyst.analysis.CTESubstitution$;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Identifier;
import scala.Option;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

/**
 * The lake's views in Spark SQL: a resolution rule (injected by {@link DuckLakeExtensions})
 * that turns a relation naming a view of a {@link DuckLakeCatalog} into the view's query.
 *
 * <p>Spark resolves a DataSourceV2 catalog's names as tables only, so, as Iceberg's session
 * extensions do, a name Spark's own rules left unresolved is looked up as a view (the planner's
 * {@code view} request): its query, respelled for Spark by the planner, is parsed by the
 * session's parser; its relation names are qualified to the catalog and the view's schema (after
 * Spark's own substitution of its WITH clauses, so CTE names stay the query's) and pinned to the snapshot the view was read at, so the view and every
 * table it reads are one state of the lake, under {@code VERSION AS OF} / {@code TIMESTAMP AS
 * OF} and a pinned catalog too. The query is analysed here, so that a view Spark cannot run is
 * refused by name ({@code UnsupportedFeatureError}) rather than by an error deep in the user's
 * query; the result is renamed to the view's column aliases and aliased as the view.
 */
final class DuckLakeViews extends Rule<LogicalPlan> {
  private final SparkSession session;

  DuckLakeViews(SparkSession session) {
    this.session = session;
  }

  /** Whether this session was built with {@link DuckLakeExtensions} (so views resolve). */
  static boolean configured(SparkSession session) {
    String extensions = session.conf().get("spark.sql.extensions", "");
    for (String name : extensions.split(",")) {
      if (name.trim().equals(DuckLakeExtensions.class.getName())) {
        return true;
      }
    }
    return false;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan.analyzed() || plan.resolved()) {
      return plan;
    }
    if (plan instanceof RelationTimeTravel) {
      RelationTimeTravel travel = (RelationTimeTravel) plan;
      if (!(travel.relation() instanceof UnresolvedRelation)) {
        return plan.mapChildren(children());
      }
      Option<Expression> timestamp = travel.timestamp();
      if (timestamp.isDefined() && !timestamp.get().resolved()) {
        return plan; // Spark resolves the expression first; looked at again next round
      }
      Long micros = timestamp.isDefined() ? TimeTravel.micros(session, timestamp.get()) : null;
      String version = travel.version().isDefined() ? travel.version().get() : null;
      LogicalPlan view = expand((UnresolvedRelation) travel.relation(), version, micros);
      return view == null ? plan : view;
    }
    if (plan instanceof UnresolvedRelation) {
      LogicalPlan view = expand((UnresolvedRelation) plan, null, null);
      return view == null ? plan : view;
    }
    return plan.mapChildren(children());
  }

  private AbstractFunction1<LogicalPlan, LogicalPlan> children() {
    return new AbstractFunction1<LogicalPlan, LogicalPlan>() {
      @Override
      public LogicalPlan apply(LogicalPlan child) {
        return DuckLakeViews.this.apply(child);
      }
    };
  }

  /** The view {@code relation} names, analysed; null if it names no view of a lake. */
  private LogicalPlan expand(UnresolvedRelation relation, String version, Long micros) {
    List<String> parts = ScalaBridge.javaList(relation.multipartIdentifier());
    CatalogPlugin plugin;
    List<String> namespace;
    if (parts.size() == 1) {
      plugin = Catalogs.current(session);
      namespace = java.util.Arrays.asList(Catalogs.currentNamespace(session));
    } else {
      plugin = Catalogs.named(session, parts.get(0));
      namespace = parts.subList(plugin == null ? 0 : 1, parts.size() - 1);
      if (plugin == null) {
        plugin = Catalogs.current(session);
      }
    }
    if (!(plugin instanceof DuckLakeCatalog) || namespace.size() != 1) {
      return null;
    }
    DuckLakeCatalog catalog = (DuckLakeCatalog) plugin;
    Identifier ident = Identifier.of(namespace.toArray(new String[0]), parts.get(parts.size() - 1));
    Protocol.Reply answer = catalog.loadView(ident, version, micros);
    if (answer == null) {
      return null;
    }
    Protocol.Reply view = answer.record("view");
    if (relation.isStreaming()) {
      throw cannotRun(view, "Spark streams tables, not views; read the view's tables instead", null);
    }
    LogicalPlan analyzed = analyse(qualify(catalog, view, answer.integer("snapshot")), view);
    List<String> aliases = view.texts("columns");
    List<Attribute> output = ScalaBridge.javaList(analyzed.output());
    if (aliases.size() > output.size()) {
      throw cannotRun(view, aliases.size() + " column names for " + output.size() + " columns", null);
    }
    List<NamedExpression> renamed = new ArrayList<>();
    for (int i = 0; i < output.size(); i++) {
      Attribute column = output.get(i);
      String name = i < aliases.size() ? aliases.get(i) : column.name();
      renamed.add(
          new Alias(
              column,
              name,
              NamedExpression$.MODULE$.newExprId(),
              ScalaBridge.list(new ArrayList<String>()),
              Option.empty(),
              ScalaBridge.list(new ArrayList<String>())));
    }
    List<String> qualifier = java.util.Arrays.asList(catalog.name(), view.text("namespace"));
    return new SubqueryAlias(
        new AliasIdentifier(view.text("name"), ScalaBridge.list(qualifier)),
        new Project(ScalaBridge.list(renamed), analyzed));
  }

  /** The view's query parsed, its relations in the lake at {@code snapshot}. */
  private LogicalPlan qualify(DuckLakeCatalog catalog, Protocol.Reply view, long snapshot) {
    LogicalPlan parsed;
    try {
      parsed = session.sessionState().sqlParser().parsePlan(view.text("sql"));
    } catch (Exception e) {
      throw cannotRun(view, "Spark cannot parse it: " + e.getMessage(), e);
    }
    // WITH clauses first, as Spark's analyzer does: their names are the query's own (not
    // relations of the lake), and their bodies become children that the walk below reaches.
    LogicalPlan substituted = CTESubstitution$.MODULE$.apply(parsed);
    String marker = view.text("catalog_marker");
    String schema = view.text("namespace");
    return substituted.transformUpWithSubqueries(
        new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
          @Override
          public boolean isDefinedAt(LogicalPlan plan) {
            return plan instanceof UnresolvedRelation;
          }

          @Override
          public LogicalPlan apply(LogicalPlan plan) {
            UnresolvedRelation relation = (UnresolvedRelation) plan;
            List<String> parts = ScalaBridge.javaList(relation.multipartIdentifier());
            boolean lake = parts.get(0).equalsIgnoreCase(marker);
            List<String> full = new ArrayList<>();
            full.add(catalog.name());
            if (parts.size() == 3 && lake) {
              full.addAll(parts.subList(1, 3));
            } else if (parts.size() == 2 && lake) {
              full.add("main"); // DuckDB's default schema of a catalog
              full.add(parts.get(1));
            } else if (parts.size() == 2) {
              full.addAll(parts);
            } else if (parts.size() == 1) {
              full.add(schema);
              full.add(parts.get(0));
            } else {
              throw cannotRun(
                  view, "it reads " + String.join(".", parts) + ", which is not in the lake", null);
            }
            UnresolvedRelation inLake =
                new UnresolvedRelation(ScalaBridge.list(full), relation.options(), relation.isStreaming());
            return new RelationTimeTravel(inLake, Option.empty(), Option.apply(Long.toString(snapshot)));
          }
        });
  }

  private LogicalPlan analyse(LogicalPlan plan, Protocol.Reply view) {
    Analyzer analyzer = session.sessionState().analyzer();
    try {
      LogicalPlan analyzed = analyzer.execute(plan);
      analyzer.checkAnalysis(analyzed);
      return analyzed;
    } catch (DuckLakeException e) {
      throw e; // the lake's own error (a snapshot, a table of a nested view...)
    } catch (RuntimeException e) {
      throw cannotRun(view, "Spark cannot analyse it: " + e.getMessage(), e);
    } catch (Exception e) { // Spark's AnalysisException is a checked exception to Java
      throw cannotRun(view, "Spark cannot analyse it: " + e.getMessage(), e);
    }
  }

  private static DuckLakeException cannotRun(Protocol.Reply view, String reason, Throwable cause) {
    return new DuckLakeException(
        ErrorNames.UNSUPPORTED_FEATURE,
        view.text("label")
            + " cannot be run by Spark: "
            + reason
            + ". Its SQL, in DuckDB's dialect: "
            + view.text("duckdb_sql")
            + " (as Spark SQL: "
            + view.text("sql")
            + "). Query it in DuckDB, or define an equivalent view in Spark",
        cause);
  }
}
