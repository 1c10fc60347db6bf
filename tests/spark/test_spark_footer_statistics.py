"""Spark's files of edge values, judged by every reader that prunes with their footers.

Executors write with Spark's own Parquet writer (parquet-mr), whose float statistics order
NaN above every number, so no reader should misread them; this checks it as
``tests/write/test_footer_statistics.py`` checks our Python writer's files: several
hundred predicates counted by DuckDB (through the catalog and ``read_parquet``), by
DataFusion's ``register_parquet`` and by our reader, each equal to the same reader's count
over the same rows in memory. The columns are the types Spark writes (no unsigned
integers), in a file of mixed values, one whose floats are all NaN and one without NaN.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.predicates import EDGES, assert_every_reader_agrees, data_files, edge_rows
from support.spark_settings import spark_settings

pytest.importorskip("pyspark")

pytestmark = pytest.mark.spark

NAMES = [name for name in EDGES if not name.startswith("u")]
# dates before 1582 as written, proleptic Gregorian both ways (pyspark 3.5 refuses them else)
CORRECTED = {
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
}


def test_spark_files_prune_rightly_for_every_reader(spark, make_lake, catalog, tmp_path):
    lake = make_lake(inline_limit=0)
    batches = [
        edge_rows(300, 0, names=NAMES),
        edge_rows(120, 3, only_nan=True, names=NAMES),
        edge_rows(200, 5, no_nan=True, names=NAMES),
    ]
    con = lake.attach()
    con.register("shape", batches[0].slice(0, 0))
    lake.sql("CREATE TABLE lake.main.t AS SELECT * FROM shape")
    lake.detach()
    name = catalog(lake)
    with spark_settings(spark, CORRECTED):
        for index, batch in enumerate(batches):
            path = str(tmp_path / f"batch{index}.parquet")
            pq.write_table(batch, path)
            spark.read.parquet(path).coalesce(1).writeTo(f"{name}.main.t").append()
    assert len(data_files(lake, "t")) == len(batches)
    assert assert_every_reader_agrees(lake, "t", pa.concat_tables(batches)) > 250
