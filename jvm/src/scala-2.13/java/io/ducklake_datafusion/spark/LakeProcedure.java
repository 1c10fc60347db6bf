package io.ducklake_datafusion.spark;

import java.util.Collections;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * One of {@link Procedures} as Spark 4 calls it: bound to its declared parameters whatever the
 * call's arguments (Spark binds them by name or position and casts them), run once when the
 * {@code CALL} is analysed, its rows a {@link LocalScan}.
 */
final class LakeProcedure implements UnboundProcedure, BoundProcedure {
  private final DuckLakeCatalog catalog;
  private final Procedures.Spec spec;

  LakeProcedure(DuckLakeCatalog catalog, Procedures.Spec spec) {
    this.catalog = catalog;
    this.spec = spec;
  }

  @Override
  public String name() {
    return spec.name;
  }

  @Override
  public String description() {
    return spec.description;
  }

  @Override
  public BoundProcedure bind(StructType inputType) {
    return this;
  }

  @Override
  public ProcedureParameter[] parameters() {
    return spec.parameters.stream()
        .map(
            p ->
                ProcedureParameter.in(p.name, p.type)
                    .defaultValue(p.defaultSql)
                    .comment(p.comment)
                    .build())
        .toArray(ProcedureParameter[]::new);
  }

  @Override
  public boolean isDeterministic() {
    return false;
  }

  @Override
  public Iterator<Scan> call(InternalRow input) {
    Object[] values = new Object[spec.parameters.size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = input.isNullAt(i) ? null : input.get(i, spec.parameters.get(i).type);
    }
    InternalRow[] rows = Procedures.call(catalog, spec, values);
    return Collections.<Scan>singletonList(new Result(spec, rows)).iterator();
  }

  /** The procedure's rows. */
  private static final class Result implements LocalScan {
    private final Procedures.Spec spec;
    private final InternalRow[] rows;

    Result(Procedures.Spec spec, InternalRow[] rows) {
      this.spec = spec;
      this.rows = rows;
    }

    @Override
    public StructType readSchema() {
      return spec.output;
    }

    @Override
    public InternalRow[] rows() {
      return rows;
    }

    @Override
    public String description() {
      return spec.name;
    }
  }
}
