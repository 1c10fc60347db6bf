package io.ducklake_datafusion.spark;

/**
 * Every class of {@code ducklake_datafusion.errors} this jar names in an error, and the one
 * way it names them.
 *
 * <p>An exception thrown inside Spark's reader reaches Python as text only, so our error
 * class travels in the message as {@code "ClassName: message"} ({@link #text}), the form the
 * Python side looks for. {@code tests/provider/test_rust_contract.py} checks that each of {@link
 * #all} is in {@code ducklake_datafusion.errors.__all__} (through the JVM of a Spark session
 * with this jar).
 */
public final class ErrorNames {
  /** A data file the catalog lists is not where the scan looked for it. */
  public static final String DATA_FILE_MISSING = "DataFileMissingError";

  /** A data file is not the one the catalog lists (another length). */
  public static final String DATA_FILE_CORRUPT = "DataFileCorruptError";

  private static final String[] ALL = {DATA_FILE_MISSING, DATA_FILE_CORRUPT};

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
