package io.ducklake_datafusion.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The JVM <-> planner protocol: every request this jar sends the planner process and every
 * answer it reads, declared field by field, as the planner declares them ({@code
 * ducklake_datafusion/spark/planner/_protocol.py}, the same spelling; {@code
 * tests/spark/test_planner_protocol.py} compares the two tables through {@link #describe}).
 *
 * <p>A request is built through {@link Request}, which takes only declared fields and is
 * checked whole before it is sent; an answer is checked whole when it arrives and read
 * through {@link Reply}, which reads only declared fields. A field is {@code "name: kind"}
 * ({@code "name?: kind"}: may be absent or null); a kind is {@code string}, {@code integer},
 * {@code number}, {@code boolean}, {@code object} (any object, read by its own reader), {@code
 * any}, {@code {string}} (an object of strings), {@code [kind]} or a record's name.
 */
public final class Protocol {
  /** The version both sides speak; the planner says its own in answer to {@code open}. */
  static final int VERSION = 7;

  private static final Pattern FIELD = Pattern.compile("^([a-z_]+)(\\??): (.+)$");

  /** One field of a message or a record. */
  static final class Field {
    final String name;
    final String kind;
    final boolean required;

    private Field(String text) {
      Matcher found = FIELD.matcher(text);
      if (!found.matches()) {
        throw new IllegalArgumentException("not a protocol field: " + text);
      }
      this.name = found.group(1);
      this.required = found.group(2).isEmpty();
      this.kind = found.group(3);
    }

    @Override
    public String toString() {
      return name + (required ? "" : "?") + ": " + kind;
    }
  }

  /** One request ({@code op}) and its answer. */
  static final class Message {
    final String op;
    final Map<String, Field> request;
    final Map<String, Field> answer;

    private Message(String op, String[] request, String[] answer) {
      this.op = op;
      this.request = fields(request);
      this.answer = fields(answer);
    }
  }

  private static final String[] TABLE_NAME = {"namespace: string", "name: string"};
  private static final String[] AS_OF = {"version?: string", "timestamp_us?: integer"};
  private static final String[] COMMIT_INFO = {
    "author?: string", "commit_message?: string", "commit_extra_info?: string"
  };
  private static final String[] HADOOP_REACH = {
    "hadoop_schemes?: [string]", "hadoop_version?: string"
  };
  private static final String[] SCAN_FILES = {
    "snapshot: integer",
    "files_spark: integer",
    "files_exact: integer",
    "exact_rows: integer",
    "exact_reasons: [string]",
    "hadoop_urls: [string]",
    "hadoop_options: {string}",
    "row_id_starts?: [integer]"
  };
  private static final String[] WRITE_PLACE = {
    "target: WriteTarget",
    "directory: string",
    "hadoop_options: {string}",
    "schema: string",
    "field_ids: [FieldIds]",
    "target_file_size: integer",
    "partition_keys: [PartitionKey]"
  };

  static final Map<String, Map<String, Field>> RECORDS = new LinkedHashMap<>();
  static final Map<String, Message> MESSAGES = new LinkedHashMap<>();

  static {
    record(
        "WriteTarget",
        join(
            new String[] {"kind: string"},
            TABLE_NAME,
            new String[] {
              "snapshot: integer",
              "table_id?: integer",
              "overwrite?: boolean",
              "replace_partitions?: boolean",
              "table_uuid?: string",
              "schema?: string",
              "partitioning?: [string]"
            }));
    record("FieldIds", "id: integer", "children: [FieldIds]");
    record("PartitionKey", "ordinal: integer", "transform: string");
    record(
        "WrittenFile",
        "path: string",
        "size: integer",
        "footer: string",
        "partition_row?: [any]",
        "row_ids?: boolean");
    record(
        "StreamBatch", "query_id: string", "batch_id: integer", "compact_every?: integer");
    record(
        "View",
        join(
            TABLE_NAME,
            new String[] {
              "sql: string",
              "duckdb_sql: string",
              "columns: [string]",
              "catalog_marker: string",
              "label: string"
            }));

    message(
        "open",
        of("options: {string}", "idle_seconds?: number"),
        of("protocol: integer", "package: string"));
    message("namespaces", of(), of("namespaces: [string]"));
    message("tables", of("namespace: string"), of("tables: [string]"));
    message(
        "table",
        join(TABLE_NAME, AS_OF, of("snapshot?: integer")),
        join(
            TABLE_NAME,
            of(
                "snapshot: integer",
                "snapshot_time: string",
                "table_id: integer",
                "table_uuid: string",
                "catalog: string",
                "schema: string")));
    message(
        "scan",
        join(
            TABLE_NAME,
            AS_OF,
            of(
                "snapshot?: integer",
                "columns?: [string]",
                "filters?: [object]",
                "metadata?: [string]"),
            HADOOP_REACH),
        join(
            SCAN_FILES,
            of(
                "table: string",
                "columns: [string]",
                "filter?: string",
                "files_live: integer",
                "files_pruned: integer",
                "rows: integer",
                "bytes: integer")));
    message(
        "changes",
        join(TABLE_NAME, of("start: string", "end?: string")),
        join(
            TABLE_NAME,
            of("first: integer", "last: integer", "rows: integer", "schema: string")));
    message("views", of("namespace: string"), of("views: [string]"));
    message("view", join(TABLE_NAME, AS_OF), of("view?: View", "snapshot: integer"));
    message(
        "stream_start",
        join(TABLE_NAME, of("starting_version?: string", "starting_timestamp?: string")),
        of("after: integer"));
    message(
        "stream_end",
        join(
            TABLE_NAME,
            of(
                "after: integer",
                "until?: integer",
                "max_snapshots?: integer",
                "max_files?: integer",
                "max_bytes?: integer")),
        of("end: integer", "latest: integer"));
    message(
        "stream_rows",
        join(
            TABLE_NAME,
            of(
                "after: integer",
                "through: integer",
                "mode: string",
                "skip_change_commits: boolean",
                "schema: string"),
            HADOOP_REACH),
        join(SCAN_FILES, of("skipped_snapshots: [integer]")));
    message("write_begin", join(TABLE_NAME, of("mode: string", "snapshot?: integer")), WRITE_PLACE);
    message(
        "create_begin",
        join(TABLE_NAME, of("schema: string", "partitioning: [string]")),
        WRITE_PLACE);
    message(
        "write_commit",
        join(of("target: WriteTarget", "files: [WrittenFile]", "stream?: StreamBatch"), COMMIT_INFO),
        of("snapshot: integer", "replayed?: boolean", "compaction?: string"));
    message(
        "delete_where",
        join(TABLE_NAME, of("filters: [object]", "dry_run?: boolean"), COMMIT_INFO),
        of("snapshot: integer", "files: integer", "rows: integer", "decided: boolean"));
    message(
        "change_commit",
        join(
            of(
                "target: WriteTarget",
                "command: string",
                "files: [WrittenFile]",
                "deletes: integer",
                "stream?: StreamBatch"),
            COMMIT_INFO),
        of(
            "snapshot: integer",
            "deleted: integer",
            "updated: integer",
            "inserted: integer",
            "replayed?: boolean"));
    message(
        "maintain",
        join(of("operation: string", "arguments: object", "on_executors?: boolean"), COMMIT_INFO),
        of("rows: [any]", "token?: string"));
    message(
        "maintain_written", of("token: string", "failed?: string"), of("rows: [any]", "token?: string"));
    message(
        "create_table",
        join(TABLE_NAME, of("schema: string", "partitioning: [string]"), COMMIT_INFO),
        of("snapshot: integer"));
    message(
        "schema_change",
        join(
            of(
                "change: string",
                "namespace: string",
                "name?: string",
                "new_name?: string",
                "cascade?: boolean",
                "changes?: [object]",
                "schema?: string"),
            COMMIT_INFO),
        of("snapshot: integer", "changed: boolean"));
  }

  private Protocol() {}

  private static String[] of(String... fields) {
    return fields;
  }

  private static String[] join(String[]... parts) {
    List<String> all = new ArrayList<>();
    for (String[] part : parts) {
      all.addAll(Arrays.asList(part));
    }
    return all.toArray(new String[0]);
  }

  private static Map<String, Field> fields(String[] texts) {
    Map<String, Field> fields = new LinkedHashMap<>();
    for (String text : texts) {
      Field field = new Field(text);
      fields.put(field.name, field);
    }
    return Collections.unmodifiableMap(fields);
  }

  private static void record(String name, String... fields) {
    RECORDS.put(name, fields(fields));
  }

  private static void message(String op, String[] request, String[] answer) {
    MESSAGES.put(op, new Message(op, request, answer));
  }

  /** The whole table as JSON, as the planner's {@code describe()} gives its own. */
  public static String describe() {
    ObjectNode out = PlannerProcess.JSON.createObjectNode();
    out.put("version", VERSION);
    ObjectNode messages = out.putObject("messages");
    for (Message message : new TreeMap<>(MESSAGES).values()) {
      ObjectNode node = messages.putObject(message.op);
      ArrayNode request = node.putArray("request");
      message.request.values().forEach(f -> request.add(f.toString()));
      ArrayNode answer = node.putArray("answer");
      message.answer.values().forEach(f -> answer.add(f.toString()));
    }
    ObjectNode records = out.putObject("records");
    for (Map.Entry<String, Map<String, Field>> record : new TreeMap<>(RECORDS).entrySet()) {
      ArrayNode fields = records.putArray(record.getKey());
      record.getValue().values().forEach(f -> fields.add(f.toString()));
    }
    return out.toString();
  }

  /** Prints {@link #describe}: {@code java -cp <jar>:<spark jars> ...Protocol}. */
  public static void main(String[] args) {
    System.out.println(describe());
  }

  /** A new request of {@code op}. */
  static Request request(String op) {
    Message message = MESSAGES.get(op);
    if (message == null) {
      throw new IllegalStateException("ducklake: the planner protocol has no request " + op);
    }
    return new Request(message);
  }

  /** A request being built: only declared fields, each of its declared kind when sent. */
  static final class Request {
    final Message message;
    private final ObjectNode node = PlannerProcess.JSON.createObjectNode();
    /** Binary blobs sent after the request (its JSON says how many). */
    final List<byte[]> blobs = new ArrayList<>();

    private Request(Message message) {
      this.message = message;
      node.put("op", message.op);
    }

    private String declared(String name) {
      if (!message.request.containsKey(name)) {
        throw new IllegalStateException(
            "ducklake: the planner's request " + message.op + " has no field " + name);
      }
      return name;
    }

    Request put(String name, String value) {
      node.put(declared(name), value);
      return this;
    }

    Request put(String name, long value) {
      node.put(declared(name), value);
      return this;
    }

    Request put(String name, double value) {
      node.put(declared(name), value);
      return this;
    }

    Request put(String name, boolean value) {
      node.put(declared(name), value);
      return this;
    }

    Request put(String name, JsonNode value) {
      node.set(declared(name), value);
      return this;
    }

    Request put(String name, Iterable<String> values) {
      ArrayNode array = node.putArray(declared(name));
      values.forEach(array::add);
      return this;
    }

    /** A binary blob to send after the request. */
    Request blob(byte[] bytes) {
      blobs.add(bytes);
      return this;
    }

    /** A new array field, to fill. */
    ArrayNode array(String name) {
      return node.putArray(declared(name));
    }

    /** A new object field, to fill. */
    ObjectNode object(String name) {
      return node.putObject(declared(name));
    }

    /** Whether the field is set. */
    boolean has(String name) {
      return node.hasNonNull(declared(name));
    }

    /** The field's value as set (null: not set). */
    JsonNode get(String name) {
      return node.get(declared(name));
    }

    /** The request as sent: checked whole against its declaration. */
    ObjectNode json() {
      String problem = problem(node, message.request, "op");
      if (problem != null) {
        throw new IllegalStateException(
            "ducklake: the planner's request " + message.op + " " + problem);
      }
      if (blobs.isEmpty()) {
        return node;
      }
      ObjectNode framed = node.deepCopy();
      framed.put("blobs", blobs.size());
      return framed;
    }

    /** The same request again, to send once more (a new planner after an idle exit). */
    String text() {
      return node.toString();
    }
  }

  /** Check the planner's answer to {@code message}; a typed error naming what is wrong. */
  static Reply reply(Message message, JsonNode answer) {
    String problem = problem(answer, message.answer, "blobs");
    if (problem != null) {
      throw new DuckLakeException(
          ErrorNames.MISSING_DEPENDENCY,
          "the DuckLake planner's answer to "
              + message.op
              + " "
              + problem
              + "; the Spark jar and the ducklake-datafusion package are of different releases: "
              + "use the jar of the installed package (ducklake_datafusion.spark_jar())",
          null);
    }
    return new Reply(message.op, message.answer, answer);
  }

  /** A checked answer (or a record in one), read by declared field only. */
  static final class Reply {
    private final String where;
    private final Map<String, Field> fields;
    final JsonNode node;

    private Reply(String where, Map<String, Field> fields, JsonNode node) {
      this.where = where;
      this.fields = fields;
      this.node = node;
    }

    private Field field(String name) {
      Field field = fields.get(name);
      if (field == null) {
        throw new IllegalStateException("ducklake: " + where + " has no field " + name);
      }
      return field;
    }

    /** Whether the (optional) field is there and not null. */
    boolean has(String name) {
      field(name);
      return node.hasNonNull(name);
    }

    String text(String name) {
      field(name);
      return node.path(name).asText();
    }

    long integer(String name) {
      field(name);
      return node.path(name).asLong();
    }

    /** A boolean; an absent optional one is false. */
    boolean flag(String name) {
      field(name);
      return node.path(name).asBoolean(false);
    }

    List<String> texts(String name) {
      field(name);
      List<String> out = new ArrayList<>();
      node.path(name).forEach(item -> out.add(item.asText()));
      return out;
    }

    /** An array of integers (empty when an optional one is absent). */
    long[] integers(String name) {
      field(name);
      JsonNode array = node.path(name);
      long[] out = new long[array.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = array.get(i).asLong();
      }
      return out;
    }

    Map<String, String> textMap(String name) {
      field(name);
      Map<String, String> out = new LinkedHashMap<>();
      node.path(name).fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
      return out;
    }

    /** A record field (null when an optional one is absent). */
    Reply record(String name) {
      Field field = field(name);
      JsonNode value = node.get(name);
      return value == null || value.isNull()
          ? null
          : new Reply(field.kind, RECORDS.get(field.kind), value);
    }

    /** An array of records. */
    List<Reply> records(String name) {
      Field field = field(name);
      String kind = field.kind.substring(1, field.kind.length() - 1);
      List<Reply> out = new ArrayList<>();
      node.path(name).forEach(item -> out.add(new Reply(kind, RECORDS.get(kind), item)));
      return out;
    }

    /** The field's JSON as it came, handed on whole (a write's target back to its commit). */
    JsonNode raw(String name) {
      field(name);
      return node.path(name);
    }
  }

  /** What is wrong with {@code value} as an object of {@code fields}, or null. */
  static String problem(JsonNode value, Map<String, Field> fields, String skip) {
    Iterator<String> names = value.fieldNames();
    List<String> extra = new ArrayList<>();
    while (names.hasNext()) {
      String name = names.next();
      if (!fields.containsKey(name) && !name.equals(skip)) {
        extra.add(name);
      }
    }
    if (!extra.isEmpty()) {
      Collections.sort(extra);
      return "has undeclared field(s) " + extra;
    }
    for (Field field : fields.values()) {
      JsonNode item = value.get(field.name);
      if (item == null || item.isNull()) {
        if (field.required) {
          return "lacks its field '" + field.name + "' (" + field.kind + ")";
        }
        continue;
      }
      String problem = kindProblem(item, field.kind);
      if (problem != null) {
        return "field '" + field.name + "': " + problem;
      }
    }
    return null;
  }

  /** A value's JSON type, named in place of the value (an option's value may be a secret). */
  private static String jsonType(JsonNode value) {
    return "a JSON " + value.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
  }

  private static String kindProblem(JsonNode value, String kind) {
    if (kind.startsWith("[") && kind.endsWith("]")) {
      if (!value.isArray()) {
        return jsonType(value) + " is not of kind " + kind;
      }
      for (int i = 0; i < value.size(); i++) {
        String problem = kindProblem(value.get(i), kind.substring(1, kind.length() - 1));
        if (problem != null) {
          return "item " + i + ": " + problem;
        }
      }
      return null;
    }
    if (kind.equals("{string}")) {
      if (!value.isObject()) {
        return jsonType(value) + " is not of kind {string}";
      }
      for (JsonNode item : value) {
        if (!item.isTextual()) {
          return jsonType(value) + " is not of kind {string}";
        }
      }
      return null;
    }
    Map<String, Field> record = RECORDS.get(kind);
    if (record != null) {
      if (!value.isObject()) {
        return jsonType(value) + " is not of kind " + kind;
      }
      String problem = problem(value, record, null);
      return problem == null ? null : kind + " " + problem;
    }
    boolean ok;
    switch (kind) {
      case "string":
        ok = value.isTextual();
        break;
      case "integer":
        ok = value.isIntegralNumber();
        break;
      case "number":
        ok = value.isNumber();
        break;
      case "boolean":
        ok = value.isBoolean();
        break;
      case "object":
        ok = value.isObject();
        break;
      case "any":
        ok = true;
        break;
      default:
        throw new IllegalStateException("ducklake: the planner protocol has no kind " + kind);
    }
    return ok ? null : jsonType(value) + " is not of kind " + kind;
  }
}
