package io.ducklake_datafusion.spark;

import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;

/**
 * The catalog's stored procedures on Spark 4 ({@code ProcedureCatalog}, first in Spark 4.0):
 * {@code CALL lake.system.merge_adjacent_files(table => 'main.t')} and the others of {@link
 * Procedures}. Spark asks whether the configured catalog class is a {@code ProcedureCatalog},
 * so {@link DuckLakeCatalog} implements this interface; the Scala 2.12 jar (Spark 3.5, no
 * {@code CALL}) has an empty one of the same name.
 */
interface ProcedureSupport extends ProcedureCatalog {
  @Override
  default UnboundProcedure loadProcedure(Identifier ident) {
    Procedures.Spec spec = Procedures.find(name(), ident.namespace(), ident.name());
    return new LakeProcedure((DuckLakeCatalog) this, spec);
  }

  /** {@code SHOW PROCEDURES} (Spark 4.1; not in 4.0's interface, hence no override). */
  default Identifier[] listProcedures(String[] namespace) {
    if (namespace.length != 1 || !namespace[0].equalsIgnoreCase(Procedures.NAMESPACE)) {
      return new Identifier[0];
    }
    return Procedures.SPECS.keySet().stream()
        .map(name -> Identifier.of(namespace, name))
        .toArray(Identifier[]::new);
  }
}
