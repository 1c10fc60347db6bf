"""The planning process behind the JVM catalog ``DuckLakeCatalog`` (the package's jar).

Spark's ``TableCatalog`` runs in the driver's JVM, but DuckLake's planner is this
package's Python code: the catalog starts ``python -m ducklake_datafusion.spark.planner``
as a child process of the driver and asks it over a pipe (``_frames``) for namespaces,
tables, schemas and scan plans (``_server``). One planner therefore serves DataFusion,
``read_table`` and Spark SQL alike; the executors of a table Spark reads natively need
only the jar.
"""

from ._server import CATALOG_KEYS, PROTOCOL_VERSION, Planner, lake_opener, serve

__all__ = ["CATALOG_KEYS", "PROTOCOL_VERSION", "Planner", "lake_opener", "serve"]
