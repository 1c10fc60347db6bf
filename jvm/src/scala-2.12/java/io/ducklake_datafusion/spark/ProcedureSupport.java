package io.ducklake_datafusion.spark;

/**
 * Spark 3.5 has no procedures ({@code CALL} is not in its SQL): nothing here. The procedures
 * run through {@link Procedures#callJson} ({@code ducklake_datafusion.spark.call_procedure}).
 */
interface ProcedureSupport {}
