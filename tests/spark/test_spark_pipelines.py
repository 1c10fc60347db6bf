"""A Spark Declarative Pipeline whose flows read DuckLake tables through the catalog, and
write one into the lake.

As a pipeline author writes it: ``spark-pipeline.yml`` configures the lake as a catalog,
one flow is SQL and one is Python, one a streaming table fed by a stream of the lake's
table, and ``spark-pipelines run`` (pyspark 4.1+) runs them with the package's jar. The materialized views it writes (in the warehouse, and one in the
lake: ``lake.main.late_copy``, read back by DuckDB) are compared with DuckDB's answers to
the same queries.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest
from support.lakes import assert_same_rows, deleting_history

pytest.importorskip("pyspark")

from ducklake_datafusion.spark._core._versions import pyspark_at_least

pytestmark = pytest.mark.spark

if not pyspark_at_least(4, 1):
    pytest.skip("Spark Declarative Pipelines ship with pyspark 4.1+", allow_module_level=True)

SQL_FLOW = """
CREATE MATERIALIZED VIEW late_rows AS
SELECT k, s FROM lake.main.t WHERE k >= 2400
"""
# a target in the lake itself: the pipeline writes it through the catalog
LAKE_TARGET_FLOW = """
CREATE MATERIALIZED VIEW lake.main.late_copy AS
SELECT k, s FROM lake.main.t WHERE k >= 2400
"""
# a streaming table in the lake fed by a stream of the lake's table: its first run reads the
# table's rows (then, in later runs, the rows new snapshots insert)
STREAMING_FLOW = """
CREATE STREAMING TABLE lake.main.streamed AS
SELECT k, s FROM STREAM(lake.main.t)
"""
PYTHON_FLOW = """
from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession, functions as F


@dp.materialized_view
def per_group() -> DataFrame:
    rows = SparkSession.active().table("lake.main.t")
    return rows.groupBy("g").agg(F.count("*").alias("n"), F.sum("k").alias("sk"))
"""


def test_a_pipeline_reads_the_lake_through_the_catalog(make_lake, spark_package_jar, tmp_path):
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    import pyspark

    lake = make_lake(inline_limit=3)
    deleting_history(lake)
    metadata = lake.reader_args()["metadata"]
    project = tmp_path / "pipeline"
    (project / "transformations").mkdir(parents=True)
    (project / "spark-pipeline.yml").write_text(
        textwrap.dedent(
            f"""\
            name: lake_pipeline
            storage: {(project / "storage").as_uri()}
            configuration:
              spark.sql.catalog.lake: io.ducklake_datafusion.spark.DuckLakeCatalog
              spark.sql.catalog.lake.metadata: {metadata}
              spark.sql.catalog.lake.python: {sys.executable}
            libraries:
              - glob:
                  include: transformations/**
            """
        )
    )
    (project / "transformations" / "late_rows.sql").write_text(SQL_FLOW)
    (project / "transformations" / "per_group.py").write_text(PYTHON_FLOW)
    (project / "transformations" / "into_the_lake.sql").write_text(LAKE_TARGET_FLOW)
    (project / "transformations" / "streamed.sql").write_text(STREAMING_FLOW)
    home = os.path.dirname(pyspark.__file__)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env.update(
        SPARK_HOME=home,
        PYSPARK_PYTHON=sys.executable,
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    )
    done = subprocess.run(
        [os.path.join(home, "bin", "spark-pipelines"), "run", "--jars", spark_package_jar],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0 and "Run is COMPLETED" in done.stdout, (
        done.stdout[-3000:] + done.stderr[-3000:]
    )
    warehouse = project / "spark-warehouse"  # the default, under the working directory
    assert_same_rows(
        pq.read_table(warehouse / "late_rows"),
        lake.reference("SELECT k, s FROM lake.main.t WHERE k >= 2400"),
    )
    assert_same_rows(
        pq.read_table(warehouse / "per_group"),
        lake.reference("SELECT g, count(*) AS n, sum(k)::BIGINT AS sk FROM lake.main.t GROUP BY g"),
    )
    assert_same_rows(
        lake.reference("SELECT * FROM lake.main.late_copy"),
        lake.reference("SELECT k, s FROM lake.main.t WHERE k >= 2400"),
    )
    assert_same_rows(
        lake.reference("SELECT * FROM lake.main.streamed"),
        lake.reference("SELECT k, s FROM lake.main.t"),
    )
