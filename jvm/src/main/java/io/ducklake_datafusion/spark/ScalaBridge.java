package io.ducklake_datafusion.spark;

import java.util.List;

/**
 * The few Scala values Spark's Scala API takes from this Java code, spelled so that the same
 * source compiles against Scala 2.12 (Spark 3.5) and 2.13 (Spark 4).
 */
final class ScalaBridge {
  private ScalaBridge() {}

  /** An immutable Scala list (a {@code Seq} under both Scala versions). */
  @SuppressWarnings("deprecation")
  static <T> scala.collection.immutable.List<T> list(List<T> values) {
    return scala.collection.JavaConverters.asScalaBufferConverter(values).asScala().toList();
  }

  /** A Scala sequence (either Scala version's {@code Seq}) as a Java list. */
  @SuppressWarnings("deprecation")
  static <T> List<T> javaList(scala.collection.Seq<T> values) {
    return scala.collection.JavaConverters.seqAsJavaListConverter(values).asJava();
  }

  /** An immutable Scala map of one entry. */
  @SuppressWarnings("unchecked")
  static scala.collection.immutable.Map<String, String> map(String key, String value) {
    scala.collection.immutable.Map<String, String> empty = emptyMap();
    return (scala.collection.immutable.Map<String, String>) (Object) empty.updated(key, value);
  }

  /** An empty immutable Scala map. */
  @SuppressWarnings("unchecked")
  static <K, V> scala.collection.immutable.Map<K, V> emptyMap() {
    return (scala.collection.immutable.Map<K, V>) (Object) scala.collection.immutable.Map$.MODULE$.empty();
  }
}
