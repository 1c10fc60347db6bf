package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCatalogCapability;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A DuckLake lake as a Spark catalog: {@code spark.sql.catalog.lake =
 * io.ducklake_datafusion.spark.DuckLakeCatalog}, {@code spark.sql.catalog.lake.metadata = <the
 * catalog database>}, plus {@code data_path}, {@code snapshot}, {@code snapshot_time}, {@code
 * metadata_schema} and any storage option the package accepts (each also as {@code
 * secret.<option>}, which Spark's default redaction hides: {@code access_key_id} and {@code
 * account_key} are not hidden under their own names); {@code planner_idle_seconds}
 * (default 300: the planner process exits when idle, and is started again on demand), and
 * {@code python}: the
 * interpreter of the planner (default: {@code spark.pyspark.driver.python}, {@code
 * spark.pyspark.python}, {@code PYSPARK_DRIVER_PYTHON}, {@code PYSPARK_PYTHON}, else {@code
 * python3}).
 *
 * <p>The lake's schemas are the namespaces ({@code SHOW NAMESPACES IN lake}), its tables the
 * tables ({@code lake.main.orders}); {@code VERSION AS OF <snapshot id>} and {@code TIMESTAMP
 * AS OF} read older snapshots; its views are resolved by {@link DuckLakeViews} when the session
 * has {@link DuckLakeExtensions}. Every answer comes from the package's planner ({@link
 * PlannerProcess}); the scan is {@link DuckLakeScan}.
 *
 * <p>Tables are written by Spark's executors and committed once by the driver through the
 * planner ({@link LakeWrites}): {@code INSERT INTO}, {@code INSERT OVERWRITE}, {@code
 * writeTo(...).append()} / {@code overwritePartitions()}, and {@code CREATE TABLE [AS
 * SELECT]} (staged: the table and its rows in one snapshot). Other DDL (ALTER, DROP, RENAME,
 * REPLACE) raises an error that names the operation.
 */
public class DuckLakeCatalog
    implements StagingTableCatalog, SupportsNamespaces, ProcedureSupport {
  private static final String PYTHON_OPTION = "python";
  private static final String IDLE_OPTION = "planner_idle_seconds";
  private static final String SECRET_PREFIX = "secret.";
  private double idleSeconds = 300;
  private String name;
  private final Map<String, String> plannerOptions = new LinkedHashMap<>();
  private String python;
  private volatile PlannerProcess planner;

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    this.name = name;
    for (Map.Entry<String, String> entry : options.asCaseSensitiveMap().entrySet()) {
      String key = entry.getKey().toLowerCase(java.util.Locale.ROOT);
      if (key.startsWith(SECRET_PREFIX)) {
        // secret.<option>: the same option, under a name Spark's redaction regex (by default
        // "secret|password|token|access[.]?key") hides in SET, the UI and the event log.
        key = key.substring(SECRET_PREFIX.length());
      }
      if (key.equals(PYTHON_OPTION)) {
        python = entry.getValue();
      } else if (key.equals(IDLE_OPTION)) {
        try {
          idleSeconds = Double.parseDouble(entry.getValue());
        } catch (NumberFormatException e) {
          throw new DuckLakeException(
              ErrorNames.INVALID_OPTION,
              "spark.sql.catalog." + name + "." + IDLE_OPTION + " must be a number of seconds, got '"
                  + entry.getValue() + "'",
              e);
        }
      } else {
        plannerOptions.put(key, entry.getValue());
      }
    }
    if (!plannerOptions.containsKey("metadata")) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          "DuckLake catalog '"
              + name
              + "' needs spark.sql.catalog."
              + name
              + ".metadata: the catalog database, e.g. 'lake.ducklake', "
              + "'sqlite:lake.sqlite' or 'postgres:dbname=lake host=...'",
          null);
    }
  }

  @Override
  public String name() {
    return name;
  }

  /** The planner of this catalog, started on first use (and again if it died). */
  PlannerProcess planner() {
    PlannerProcess found = planner;
    if (found != null && found.alive()) {
      return found;
    }
    synchronized (this) {
      if (planner == null || !planner.alive()) {
        if (planner != null) {
          planner.close();
        }
        planner = PlannerProcess.start(pythonExecutable(), plannerOptions, idleSeconds);
      }
      return planner;
    }
  }

  private volatile List<String> hadoopSchemes;

  /** The object-store schemes this Spark can read with a Hadoop connector (asked once). */
  List<String> hadoopSchemes() {
    List<String> found = hadoopSchemes;
    if (found == null) {
      found = Connectors.available(SparkSession.active().sessionState().newHadoopConf());
      hadoopSchemes = found;
    }
    return found;
  }

  /** The planner's Python (and the executors', where Spark names none: {@link ExecutorMerge}). */
  String pythonExecutable() {
    if (python != null && !python.isEmpty()) {
      return python;
    }
    SparkSession session = SparkSession.getActiveSession().getOrElse(() -> null);
    if (session != null) {
      for (String key : new String[] {"spark.pyspark.driver.python", "spark.pyspark.python"}) {
        String value = session.conf().get(key, "");
        if (!value.isEmpty()) {
          return value;
        }
      }
    }
    for (String key : new String[] {"PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}) {
      String value = System.getenv(key);
      if (value != null && !value.isEmpty()) {
        return value;
      }
    }
    return "python3";
  }

  /** Ask the planner; once more, of a new process, if the last one exited idle meanwhile. */
  PlannerProcess.Answer call(Protocol.Request request) {
    try {
      return planner().call(request);
    } catch (PlannerProcess.Exited e) {
      return planner().call(request);
    }
  }

  private Protocol.Request request(String op) {
    return Protocol.request(op);
  }

  // -- namespaces ------------------------------------------------------------------------

  private List<String> namespaceNames() {
    return call(request("namespaces")).header.texts("namespaces");
  }

  @Override
  public String[][] listNamespaces() {
    List<String> names = namespaceNames();
    String[][] out = new String[names.size()][];
    for (int i = 0; i < out.length; i++) {
      out[i] = new String[] {names.get(i)};
    }
    return out;
  }

  @Override
  public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length == 0) {
      return listNamespaces();
    }
    if (namespace.length == 1 && namespaceNames().contains(namespace[0])) {
      return new String[0][];
    }
    throw new NoSuchNamespaceException(namespace);
  }

  @Override
  public boolean namespaceExists(String[] namespace) {
    return namespace.length == 1 && namespaceNames().contains(namespace[0]);
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(String[] namespace)
      throws NoSuchNamespaceException {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException(namespace);
    }
    return Collections.emptyMap();
  }

  @Override
  public void createNamespace(String[] namespace, Map<String, String> metadata) {
    schemaChange("create_namespace", schemaName(namespace, "CREATE NAMESPACE"));
  }

  @Override
  public void alterNamespace(String[] namespace, NamespaceChange... changes) {
    throw readOnly("ALTER NAMESPACE " + String.join(".", namespace));
  }

  @Override
  public boolean dropNamespace(String[] namespace, boolean cascade) {
    Protocol.Request request =
        schemaChangeRequest("drop_namespace", schemaName(namespace, "DROP NAMESPACE"))
            .put("cascade", cascade);
    return call(request).header.flag("changed");
  }

  private static String schemaName(String[] namespace, String statement) {
    if (namespace.length != 1) {
      throw new DuckLakeException(
          ErrorNames.INVALID_OPTION,
          statement
              + " "
              + String.join(".", namespace)
              + ": a DuckLake schema is one name (lake.schema.table)",
          null);
    }
    return namespace[0];
  }

  /** A DDL statement's request: the planner writes it as DuckDB writes it ({@code _ddl.py}). */
  private Protocol.Request schemaChangeRequest(String change, String namespace) {
    Protocol.Request request =
        request("schema_change").put("change", change).put("namespace", namespace);
    DuckLakeWriteBuilder.commitOptions(null)
        .fields()
        .forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    return request;
  }

  private void schemaChange(String change, String namespace) {
    call(schemaChangeRequest(change, namespace));
  }

  // -- tables ----------------------------------------------------------------------------

  @Override
  public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
    if (namespace.length != 1 || !namespaceNames().contains(namespace[0])) {
      throw new NoSuchNamespaceException(namespace);
    }
    Protocol.Request request = request("tables").put("namespace", namespace[0]);
    List<Identifier> found = new ArrayList<>();
    for (String table : call(request).header.texts("tables")) {
      found.add(Identifier.of(namespace, table));
    }
    return found.toArray(new Identifier[0]);
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    return load(ident, request("table"));
  }

  @Override
  public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
    return load(ident, request("table").put("version", version));
  }

  @Override
  public Table loadTable(Identifier ident, long timestamp) throws NoSuchTableException {
    return load(ident, request("table").put("timestamp_us", timestamp));
  }

  private Table load(Identifier ident, Protocol.Request request) throws NoSuchTableException {
    if (ident.namespace().length == 2 && ident.name().equals(ChangeFeedTable.SUFFIX)) {
      // lake.main.t.changes: DuckLake schemas have one level, so this names no table
      Identifier base = Identifier.of(new String[] {ident.namespace()[0]}, ident.namespace()[1]);
      Table table = load(base, request);
      if (table instanceof DuckLakeTable) {
        return new ChangeFeedTable((DuckLakeTable) table);
      }
      throw new NoSuchTableException(ident);
    }
    if (ident.namespace().length != 1) {
      throw new NoSuchTableException(ident);
    }
    request.put("namespace", ident.namespace()[0]);
    request.put("name", ident.name());
    Protocol.Reply table;
    try {
      table = call(request).header;
    } catch (DuckLakeException e) {
      if (ErrorNames.TABLE_NOT_FOUND.equals(e.errorClass())) {
        refuseViewWithoutExtension(ident, request);
        throw new NoSuchTableException(ident);
      }
      throw e;
    }
    StructType schema = (StructType) DataType.fromJson(table.text("schema"));
    return new DuckLakeTable(this, name, table, schema);
  }

  /**
   * Without {@link DuckLakeExtensions} Spark never asks for a view, and would report a view of
   * the lake as a missing table: say what to configure instead.
   */
  private void refuseViewWithoutExtension(Identifier ident, Protocol.Request tableRequest) {
    SparkSession session = SparkSession.getActiveSession().getOrElse(() -> null);
    if (session == null || DuckLakeViews.configured(session)) {
      return;
    }
    String version = tableRequest.has("version") ? tableRequest.get("version").asText() : null;
    Long micros = tableRequest.has("timestamp_us") ? tableRequest.get("timestamp_us").asLong() : null;
    Protocol.Reply view = loadView(ident, version, micros);
    if (view != null) {
      throw new DuckLakeException(
          ErrorNames.UNSUPPORTED_FEATURE,
          view.record("view").text("label")
              + " is a view: Spark resolves the views of catalog '"
              + name
              + "' only with the package's session extension; set spark.sql.extensions="
              + DuckLakeExtensions.class.getName(),
          null);
    }
  }

  /**
   * The view {@code ident} at the catalog's snapshot, {@code VERSION AS OF version} or {@code
   * TIMESTAMP AS OF micros}: the planner's answer ({@code view}: its query for Spark, columns,
   * label; {@code snapshot}), or null when the namespace has no view of that name.
   */
  Protocol.Reply loadView(Identifier ident, String version, Long micros) {
    if (ident.namespace().length != 1) {
      return null;
    }
    Protocol.Request request =
        request("view").put("namespace", ident.namespace()[0]).put("name", ident.name());
    if (version != null) {
      request.put("version", version);
    }
    if (micros != null) {
      request.put("timestamp_us", micros.longValue());
    }
    Protocol.Reply answer = call(request).header;
    return answer.has("view") ? answer : null;
  }

  /** The names of the views of {@code namespace} at the catalog's snapshot. */
  List<String> viewNames(String namespace) {
    return call(request("views").put("namespace", namespace)).header.texts("views");
  }

  /** The change feed of {@code ident} from {@code start} through {@code end} (null: latest). */
  ChangesTable loadChanges(Identifier ident, String start, String end) {
    Protocol.Request request =
        request("changes")
            .put("namespace", ident.namespace()[0])
            .put("name", ident.name())
            .put("start", start);
    if (end != null) {
      request.put("end", end);
    }
    PlannerProcess.Answer answer = call(request);
    return new ChangesTable(name, answer.header, answer.blobs[0]);
  }

  // -- writes ----------------------------------------------------------------------------

  private final LakeWrites writes = new LakeWrites(this);

  WriteTarget beginWrite(DuckLakeTable table, String mode, boolean loaded) {
    return writes.beginWrite(table, mode, loaded);
  }

  WriteTarget beginCreate(Identifier ident, StructType schema, String[] partitionKeys) {
    return writes.beginCreate(ident, schema, partitionKeys);
  }

  void createEmpty(Identifier ident, StructType schema, String[] partitionKeys) {
    writes.createEmpty(ident, schema, partitionKeys);
  }

  void commitWrite(WriteTarget target, List<WrittenFile> files, ObjectNode options) {
    writes.commit(target, files, options, null);
  }

  /** Delete the rows of {@code table} that match every filter (whole files), one snapshot. */
  void deleteWhere(DuckLakeTable table, List<ObjectNode> filters) {
    Protocol.Request request = deleteRequest(table, filters);
    DuckLakeWriteBuilder.commitOptions(null)
        .fields()
        .forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    call(request);
  }

  /** Whether the catalog decides a delete by these filters (every live file whole or not). */
  boolean deleteDecided(DuckLakeTable table, List<ObjectNode> filters) {
    return call(deleteRequest(table, filters).put("dry_run", true)).header.flag("decided");
  }

  private Protocol.Request deleteRequest(DuckLakeTable table, List<ObjectNode> filters) {
    Protocol.Request request =
        request("delete_where")
            .put("namespace", table.namespace())
            .put("name", table.tableName());
    com.fasterxml.jackson.databind.node.ArrayNode list = request.array("filters");
    filters.forEach(list::add);
    return request;
  }

  /** Commit a row-level change the executors wrote (see {@link LakeWrites#commitChange}). */
  Protocol.Reply commitChange(
      WriteTarget target,
      String command,
      List<WrittenFile> files,
      DeletedRowIds deletes,
      ObjectNode options,
      ObjectNode stream) {
    return writes.commitChange(target, command, files, deletes, options, stream);
  }

  /**
   * Commit a streaming query's epoch; false when it was committed before (a replay). With
   * {@code compactEvery} (micro-batches, 0: never), the planner merges the table's small files
   * in the background after every that many batches; what the last such merge did is written
   * to the driver's standard error.
   */
  boolean commitEpoch(
      WriteTarget target,
      List<WrittenFile> files,
      ObjectNode options,
      String query,
      long epoch,
      long compactEvery) {
    ObjectNode stream = PlannerProcess.JSON.createObjectNode();
    stream.put("query_id", query);
    stream.put("batch_id", epoch);
    if (compactEvery > 0) {
      stream.put("compact_every", compactEvery);
    }
    Protocol.Reply reply = writes.commit(target, files, options, stream);
    if (reply.has("compaction")) { // (on the driver's standard error, where Spark logs)
      System.err.println("ducklake: " + target.table + ": " + reply.text("compaction"));
    }
    return !reply.flag("replayed");
  }

  @Override
  public Table createTable(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    createEmpty(ident, schema, LakeWrites.partitionKeys(partitions, ident.toString()));
    try {
      return loadTable(ident);
    } catch (NoSuchTableException e) {
      throw new IllegalStateException("ducklake: table " + ident + " vanished after CREATE", e);
    }
  }

  @Override
  public StagedTable stageCreate(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    String[] keys = LakeWrites.partitionKeys(partitions, ident.toString());
    return new StagedDuckLakeTable(this, ident, schema, partitions, keys, properties);
  }

  @Override
  public StagedTable stageReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    throw readOnly("REPLACE TABLE " + ident);
  }

  @Override
  public StagedTable stageCreateOrReplace(
      Identifier ident, StructType schema, Transform[] partitions, Map<String, String> properties) {
    throw readOnly("CREATE OR REPLACE TABLE " + ident);
  }

  /**
   * Column defaults: a loaded table's columns carry the lake's (the planner's {@code table}
   * answer), so Spark's {@code INSERT} that leaves a column out writes its default as DuckDB's
   * does, and {@code ALTER COLUMN ... SET DEFAULT} / {@code DROP DEFAULT} reach the lake. A
   * new table's defaults are refused by name ({@link LakeWrites}).
   */
  @Override
  public java.util.Set<TableCatalogCapability> capabilities() {
    return java.util.EnumSet.of(TableCatalogCapability.SUPPORT_COLUMN_DEFAULT_VALUE);
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
    Protocol.Request request = tableChangeRequest("alter_table", ident, "ALTER TABLE");
    TableChanges.addTo(request.array("changes"), changes);
    call(request);
    return loadTable(ident);
  }

  /**
   * Add to {@code table} the columns and struct fields of {@code rows} it lacks, as one
   * snapshot (a streaming write's {@code mergeSchema}; the planner's {@code append(...,
   * schema_mode="merge")}), with the write's author and message.
   */
  void mergeSchema(DuckLakeTable table, StructType rows, ObjectNode commitOptions) {
    Identifier ident = Identifier.of(new String[] {table.namespace()}, table.tableName());
    Protocol.Request request =
        tableChangeRequest("merge_schema", ident, "mergeSchema").put("schema", rows.json());
    commitOptions.fields().forEachRemaining(e -> request.put(e.getKey(), e.getValue()));
    call(request);
  }

  @Override
  public boolean dropTable(Identifier ident) {
    return call(tableChangeRequest("drop_table", ident, "DROP TABLE")).header.flag("changed");
  }

  @Override
  public void renameTable(Identifier oldIdent, Identifier newIdent) {
    String statement = "ALTER TABLE " + oldIdent + " RENAME TO " + newIdent;
    String[] target = newIdent.namespace();
    // (Spark passes the new name as written: a bare name keeps the table's schema)
    if (target.length > 1
        || (target.length == 1 && !target[0].equals(schemaName(oldIdent.namespace(), statement)))) {
      throw new DuckLakeException(
          ErrorNames.UNSUPPORTED_FEATURE,
          statement + ": a DuckLake table is renamed within its schema; give the new name alone",
          null);
    }
    call(tableChangeRequest("rename_table", oldIdent, statement).put("new_name", newIdent.name()));
  }

  private Protocol.Request tableChangeRequest(String change, Identifier ident, String statement) {
    return schemaChangeRequest(change, schemaName(ident.namespace(), statement))
        .put("name", ident.name());
  }

  DuckLakeException readOnly(String operation) {
    return new DuckLakeException(
        ErrorNames.UNSUPPORTED_FEATURE,
        "DuckLake catalog '"
            + name
            + "' does not support "
            + operation
            + " (drop the table and create it again, or do it with DuckDB's ducklake extension)",
        null);
  }
}
