package io.ducklake_datafusion.spark;

/**
 * Every class of {@code ducklake_datafusion.errors} this jar names in an error, and the one
 * way it names them.
 *
 * <p>An exception thrown inside Spark's reader reaches Python as text only, so our error
 * class travels in the message as {@code "ClassName: message"} ({@link #text}), the form the
 * Python side looks for. {@code tests/provider/test_rust_contract.py} checks that each of {@link
 * #all} is in {@code ducklake_datafusion.errors.__all__} (through the JVM of a Spark session
 * with this jar). Errors the catalog's planner raises carry the planner's own class names.
 */
public final class ErrorNames {
  /** The base class. */
  public static final String DUCKLAKE = "DuckLakeError";

  /** A data file the catalog lists is not where the scan looked for it. */
  public static final String DATA_FILE_MISSING = "DataFileMissingError";

  /** A data file is not the one the catalog lists (another length). */
  public static final String DATA_FILE_CORRUPT = "DataFileCorruptError";

  /** The planner cannot be started or lacks a package. */
  public static final String MISSING_DEPENDENCY = "MissingDependencyError";

  /** The catalog cannot do what was asked (a write, DDL). */
  public static final String UNSUPPORTED_FEATURE = "UnsupportedFeatureError";

  /** The planner found no such table (the catalog raises Spark's own exception for it). */
  public static final String TABLE_NOT_FOUND = "TableNotFoundError";

  /** An option or a plan that does not make sense. */
  public static final String INVALID_OPTION = "InvalidOptionError";

  /** I/O between the JVM and the planner failed. */
  public static final String STORAGE = "StorageError";

  /** The catalog's COMMIT went unanswered: the snapshot may exist, so its files must stay. */
  public static final String COMMIT_STATE_UNKNOWN = "CommitStateUnknownError";

  private static final String[] ALL = {
    DUCKLAKE,
    DATA_FILE_MISSING,
    DATA_FILE_CORRUPT,
    MISSING_DEPENDENCY,
    UNSUPPORTED_FEATURE,
    TABLE_NOT_FOUND,
    INVALID_OPTION,
    STORAGE,
    COMMIT_STATE_UNKNOWN
  };

  private ErrorNames() {}

  /** Every class this jar names. */
  public static String[] all() {
    return ALL.clone();
  }

  /** An error's text: the class {@code name}, then the message. */
  public static String text(String name, String message) {
    return name + ": " + message;
  }
}
