package io.ducklake_datafusion.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import org.junit.jupiter.api.Test;

/**
 * The error class names this jar puts in messages ({@code tests/provider/test_rust_contract.py}
 * checks them against {@code ducklake_datafusion.errors} through a Spark session; these are the
 * checks that need none).
 */
class ErrorNamesTest {
  @Test
  void everyNameIsListedOnceAndIsAnErrorClassName() {
    String[] all = ErrorNames.all();
    assertEquals(all.length, new HashSet<>(Arrays.asList(all)).size());
    assertEquals(ErrorNames.DUCKLAKE, all[0]);
    for (String name : all) {
      assertTrue(name.matches("[A-Z][A-Za-z]*Error"), name);
    }
    assertTrue(Arrays.asList(all).contains(ErrorNames.INVALID_OPTION));
    assertTrue(Arrays.asList(all).contains(ErrorNames.DATA_FILE_MISSING));
  }

  @Test
  void allIsACopy() {
    String[] first = ErrorNames.all();
    first[0] = "changed";
    assertNotSame(first, ErrorNames.all());
    assertEquals(ErrorNames.DUCKLAKE, ErrorNames.all()[0]);
  }

  @Test
  void textIsTheFormPythonLooksFor() {
    assertEquals(
        "DataFileMissingError: s3://b/f.parquet is gone",
        ErrorNames.text(ErrorNames.DATA_FILE_MISSING, "s3://b/f.parquet is gone"));
    assertArrayEquals(ErrorNames.all(), ErrorNames.all());
  }
}
