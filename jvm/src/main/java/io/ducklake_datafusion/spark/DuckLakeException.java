package io.ducklake_datafusion.spark;

/**
 * An error of the DuckLake catalog, its {@code ducklake_datafusion.errors} class named in the
 * message as {@code "ClassName: message"} ({@link ErrorNames#text}), the form the Python side
 * recognises and a SQL user reads.
 */
public class DuckLakeException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String errorClass;

  public DuckLakeException(String errorClass, String message, Throwable cause) {
    super(ErrorNames.text(errorClass, message), cause);
    this.errorClass = errorClass;
  }

  /** The class of {@code ducklake_datafusion.errors} this error is. */
  public String errorClass() {
    return errorClass;
  }
}
