"""Object storage against live S3 endpoints: moto and MinIO itself, both on 127.0.0.1.

``MINIO_ENDPOINT`` (with ``MINIO_ACCESS_KEY``/``MINIO_SECRET_KEY``) points both at a MinIO
of your own; without it the ``minio`` cells start the MinIO server ``.ci/install_emulators.sh``
builds, and skip (fail under CI=true) when it is not installed.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.lakes import LakeSpec, assert_same_rows
from support.readcheck import check, ours

from ducklake_datafusion import DuckLakeCatalog, errors

S3_SPECS = [LakeSpec("duckdb", "s3"), LakeSpec("sqlite", "s3"), LakeSpec("duckdb", "minio")]
ENDPOINTS = [LakeSpec("duckdb", "s3"), LakeSpec("duckdb", "minio")]  # one lake per server


@pytest.fixture(params=S3_SPECS, ids=lambda s: s.id)
def s3_lake(request, make_lake):
    lake = make_lake(request.param, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'v' || i FROM range(500) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'w' || i FROM range(500, 1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 9 = 0")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined')")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 3")
    return lake


def _objects(lake) -> list[str]:
    bucket, prefix = lake.data_path[len("s3://") :].split("/", 1)
    listing = lake.s3.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in listing.get("Contents", [])]


def test_reads_match_duckdb(s3_lake):
    check(s3_lake, "SELECT * FROM lake.main.t")
    check(
        s3_lake, "SELECT count(*) AS n, max(id) AS s, min(s) AS m FROM lake.main.t WHERE id > 300"
    )


@pytest.fixture(params=["s3", "minio"])
def s3_auth(request):
    """An endpoint that checks signatures: MinIO always does; moto only with IAM auth on."""
    import os

    if request.param == "minio" or os.environ.get("MINIO_ENDPOINT"):
        yield request.getfixturevalue(request.param)
        return
    import json

    import boto3
    from support.lakes import S3Endpoint, start_moto

    server, endpoint = start_moto()
    try:
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint.endpoint_url,
            aws_access_key_id="x",
            aws_secret_access_key="x",
            region_name="us-east-1",
        )
        iam.create_user(UserName="lake")
        policy = iam.create_policy(
            PolicyName="all",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
                }
            ),
        )
        iam.attach_user_policy(UserName="lake", PolicyArn=policy["Policy"]["Arn"])
        key = iam.create_access_key(UserName="lake")["AccessKey"]
        _moto_auth(endpoint, "0")
        yield S3Endpoint(endpoint.endpoint_url, key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        # moto's auth switch is process-wide: turn it off again for the shared server
        _moto_auth(endpoint, "inf")
        server.stop()


def _moto_auth(endpoint, count: str) -> None:
    """Set how many requests moto serves before it starts checking signatures."""
    import urllib.request

    request = urllib.request.Request(
        endpoint.endpoint_url + "/moto-api/reset-auth",
        data=count.encode(),
        headers={"Content-Type": "text/plain"},
    )
    urllib.request.urlopen(request).read()


def test_wrong_credentials(s3_auth, tmp_path):
    from datafusion import SessionContext
    from support.lakes import make_lake

    from ducklake_datafusion import register

    lake = make_lake(LakeSpec("duckdb", "s3"), tmp_path, s3=s3_auth)
    try:
        lake.sql("CREATE TABLE lake.main.t AS SELECT range AS id FROM range(100)")
        args = lake.reader_args()
        good = DuckLakeCatalog(args["metadata"], storage_options=args["storage_options"])
        assert good.table("main", "t").to_arrow().num_rows == 100
        bad = dict(args["storage_options"], secret_access_key="definitely-wrong")
        catalog = DuckLakeCatalog(args["metadata"], storage_options=bad)
        with pytest.raises(errors.StorageError) as info:
            catalog.table("main", "t").to_arrow()
        assert "definitely-wrong" not in str(info.value)
        assert "main.t" in str(info.value) and "access" in str(info.value).lower()
        # through SQL on a registered catalog (native scans allowed): the same typed error
        ctx = SessionContext()
        register(ctx, "lake", DuckLakeCatalog(args["metadata"], storage_options=bad))
        with pytest.raises(errors.StorageError) as sql_info, errors.raised_as_ours():
            # a query that reads rows (count(*) alone is answered from the catalog)
            ctx.sql("SELECT sum(id) FROM lake.main.t").to_arrow_table()
        error = sql_info.value  # raised at table lookup, or carried in DataFusion's text
        assert "main.t" in str(error) and "access" in str(error).lower()
        assert "definitely-wrong" not in str(sql_info.value)
    finally:
        lake.close()


def test_missing_bucket(s3_lake):
    args = s3_lake.reader_args()
    catalog = DuckLakeCatalog(
        args["metadata"],
        data_path="s3://no-such-bucket-dl/x/",
        storage_options=args["storage_options"],
    )
    with pytest.raises(
        (errors.StorageError, errors.DataFileMissingError, errors.DeleteFileError)
    ) as info:
        catalog.table("main", "t").to_arrow()
    assert "no-such-bucket-dl" in str(info.value)
    assert "secret" not in str(info.value).lower() or "***" in str(info.value)


def test_missing_object(s3_lake):
    keys = [k for k in _objects(s3_lake) if k.endswith(".parquet") and "delete" not in k]
    bucket = s3_lake.data_path[len("s3://") :].split("/", 1)[0]
    s3_lake.s3.client().delete_object(Bucket=bucket, Key=keys[0])
    with pytest.raises(errors.DataFileMissingError) as info, errors.raised_as_ours():
        ours(s3_lake, "SELECT sum(id) FROM lake.main.t")
    assert keys[0].rsplit("/", 1)[-1] in str(info.value)


@pytest.mark.parametrize("spec", ENDPOINTS, ids=lambda s: s.id)
def test_absolute_paths_on_another_prefix(make_lake, spec):
    """A data file registered from another prefix is stored with an absolute path."""
    lake = make_lake(spec)
    s3 = lake.s3
    lake.sql("CREATE TABLE lake.main.ext (id BIGINT, name VARCHAR)")
    lake.sql("INSERT INTO lake.main.ext SELECT i, 'in' FROM range(20) r(i)")
    bucket = lake.data_path[len("s3://") :].split("/", 1)[0]
    other = f"{bucket}/elsewhere-{abs(hash(lake.data_path)) % 10**8}/ext file.parquet"
    with s3.pyarrow_fs().open_output_stream(other) as out:
        pq.write_table(pa.table({"id": pa.array([100, 101], pa.int64()), "name": ["x", "y"]}), out)
    lake.sql(f"CALL ducklake_add_data_files('lake', 'ext', 's3://{other}')")
    check(lake, "SELECT * FROM lake.main.ext")
    catalog = DuckLakeCatalog(**lake.reader_args())
    urls = [t.file.url for t in catalog.table("main", "ext").scan_plan().tasks]
    assert f"s3://{other}" in urls


def test_credentials_never_in_repr(s3_lake):
    args = s3_lake.reader_args()
    catalog = DuckLakeCatalog(args["metadata"], storage_options=args["storage_options"])
    plan = catalog.table("main", "t").scan_plan()
    secret = args["storage_options"]["secret_access_key"]
    assert secret not in repr(catalog)
    assert secret not in repr(plan.storage)


# ------------------------------------------------------------------------------------------
# Native scans of S3 files (the Rust scan's own store: provider/_rust)


def _plan(ctx, sql: str) -> str:
    return "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())


@pytest.fixture(params=ENDPOINTS, ids=lambda s: s.id)
def clean_s3_lake(request, make_lake):
    """Clean files of two layouts on S3 (a renamed and an added column), inlined rows."""
    lake = make_lake(request.param, inline_limit=5)
    lake.sql("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'v' || i FROM range(500) r(i)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO name")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN extra INTEGER DEFAULT 3")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'w' || i, i % 4 FROM range(500, 1000) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined', 9)")
    return lake


def test_s3_files_are_read_natively_through_register(clean_s3_lake):
    from datafusion import SessionContext

    from ducklake_datafusion import register

    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**clean_s3_lake.reader_args()))
    plan = _plan(ctx, "SELECT * FROM lake.main.t WHERE id > 990")
    assert "DuckLakeScanExec" in plan and "DatasetExec" not in plan, plan
    for sql in (
        "SELECT * FROM lake.main.t",
        "SELECT extra, count(*) AS n, max(name) AS m FROM lake.main.t GROUP BY extra",
        "SELECT id, name FROM lake.main.t WHERE id BETWEEN 495 AND 505",
    ):
        check(clean_s3_lake, sql)  # native (through register), exact, each against DuckDB
    for snapshot in (2, 5, 6):
        check(clean_s3_lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def test_the_rust_scan_reads_s3_with_its_own_store_without_register(clean_s3_lake):
    """The Rust provider brings its own S3 store: a plainly registered catalog reads S3
    natively too."""
    from datafusion import SessionContext

    catalog = DuckLakeCatalog(**clean_s3_lake.reader_args())
    plain = SessionContext()
    plain.register_catalog_provider("lake", catalog)
    assert "DuckLakeScanExec" in _plan(plain, "SELECT * FROM lake.main.t")
    for sql in (
        "SELECT count(*) AS n, max(extra) AS e FROM lake.main.t",
        "SELECT id, name FROM lake.main.t WHERE id BETWEEN 495 AND 505",
    ):
        assert_same_rows(plain.sql(sql).to_arrow_table(), clean_s3_lake.reference(sql))


def test_a_missing_object_of_a_native_table_raises_the_typed_error(clean_s3_lake):
    keys = [k for k in _objects(clean_s3_lake) if k.endswith(".parquet")]
    bucket = clean_s3_lake.data_path[len("s3://") :].split("/", 1)[0]
    clean_s3_lake.s3.client().delete_object(Bucket=bucket, Key=keys[0])
    with pytest.raises(errors.DataFileMissingError) as info, errors.raised_as_ours():
        ours(clean_s3_lake, "SELECT sum(id) FROM lake.main.t")
    error = info.value
    assert keys[0].rsplit("/", 1)[-1] in str(error)
