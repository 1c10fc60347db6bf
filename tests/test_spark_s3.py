"""Lakes on S3 read by Spark's own Parquet reader through the S3A connector.

The connector (``hadoop-aws`` of the Hadoop client pyspark bundles, and the AWS SDK bundle
it was built against) comes from Maven's cache (``.ci/fetch_hadoop_jars.sh``); the store is
moto on 127.0.0.1 (or MinIO from ``MINIO_*``). Every answer is compared with DuckDB's
reader of the same lake and snapshot, and every plan is checked for which reader ran, so a
silent fallback to the Python data source cannot pass for the native path.
"""

from __future__ import annotations

import pytest
from lakes import LakeSpec, assert_same_rows, evolve_table

pytest.importorskip("pyspark")

from ducklake_datafusion.spark import read_table

pytestmark = pytest.mark.spark

S3_LAKE = LakeSpec("duckdb", "s3")


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _source_part(plan: str) -> bool:
    """The ``ducklake`` Python data source reads part of the table."""
    return "BatchScan ducklake" in plan


def _read(spark, lake, **kw):
    args = lake.reader_args()
    return read_table(
        spark, args["metadata"], "main.t", storage_options=args["storage_options"], **kw
    )


def test_clean_files_older_layouts_and_inlined_rows_read_natively(s3a, make_lake):
    lake = make_lake(S3_LAKE, inline_limit=5)
    evolve_table(lake)
    lake.sql("INSERT INTO lake.main.t (k, name) VALUES (9000, 'inlined')")
    for snapshot in range(2, lake.snapshot_id() + 1):
        df = _read(s3a, lake, snapshot=snapshot)
        plan = _plan(df)
        expected = lake.reference(f"SELECT * FROM lake.main.t AT (VERSION => {snapshot})")
        assert_same_rows(df.toArrow(), expected)
        assert "s3a://" in plan and not _source_part(plan), plan
