package io.ducklake_datafusion.spark;

import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * Takes the query's filters and columns before the scan is planned: the filters prune files by
 * catalog statistics and partition values in the planner (none is reported as handled: Spark
 * applies each after the scan, so pruning can only leave rows out that do not match), the
 * columns become the scan's read schema, with any of the row metadata columns Spark asked for
 * after them ({@link RowMetadata}).
 */
final class DuckLakeScanBuilder
    implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns {
  private final DuckLakeTable table;
  private StructType required;
  private final List<String> metadata = new ArrayList<>();
  private final List<Filter> pushed = new ArrayList<>();
  private final List<ObjectNode> pushedJson = new ArrayList<>();

  private final CaseInsensitiveStringMap options;

  DuckLakeScanBuilder(DuckLakeTable table, CaseInsensitiveStringMap options) {
    this.table = table;
    this.options = options;
    this.required = table.schema();
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    for (Filter filter : filters) {
      ObjectNode json = FilterJson.of(filter);
      if (json != null) {
        pushed.add(filter);
        pushedJson.add(json);
      }
    }
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed.toArray(new Filter[0]);
  }

  /** The table's columns Spark needs, and the metadata columns ({@link RowMetadata}) after. */
  @Override
  public void pruneColumns(StructType requiredSchema) {
    List<org.apache.spark.sql.types.StructField> data = new ArrayList<>();
    metadata.clear();
    java.util.Set<String> columns =
        new java.util.HashSet<>(java.util.Arrays.asList(table.schema().fieldNames()));
    for (org.apache.spark.sql.types.StructField field : requiredSchema.fields()) {
      if (!columns.contains(field.name()) && RowMetadata.isMetadata(field.name())) {
        metadata.add(field.name());
      } else {
        data.add(field);
      }
    }
    this.required = new StructType(data.toArray(new org.apache.spark.sql.types.StructField[0]));
  }

  @Override
  public Scan build() {
    return new DuckLakeScan(
        table, required, metadata, pushedJson, pushed.toArray(new Filter[0]), options);
  }
}
