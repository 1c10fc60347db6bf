"""Query a DuckLake lake whose data lives in MinIO (or any S3-compatible store).

    MINIO_ENDPOINT=http://127.0.0.1:9000 MINIO_ACCESS_KEY=minioadmin \\
    MINIO_SECRET_KEY=minioadmin .venv/bin/python examples/minio_query.py

The script writes a small lake with DuckDB (catalog: a local SQLite file; data:
``s3://ducklake-demo/lake/``) and reads it back through DataFusion with the same
credentials passed as ``storage_options``. The bucket must exist (``mc mb local/ducklake-demo``).
"""

from __future__ import annotations

import os
import tempfile

import duckdb
import duckdb_extensions
from datafusion import SessionContext

from ducklake_datafusion import DuckLakeCatalog, register


def main() -> None:
    endpoint = os.environ.get("MINIO_ENDPOINT", "http://127.0.0.1:9000")
    access_key = os.environ.get("MINIO_ACCESS_KEY", "minioadmin")
    secret_key = os.environ.get("MINIO_SECRET_KEY", "minioadmin")
    bucket = os.environ.get("MINIO_BUCKET", "ducklake-demo")
    host = endpoint.split("://", 1)[-1].rstrip("/")
    catalog = os.path.join(tempfile.mkdtemp(), "lake.sqlite")
    data_path = f"s3://{bucket}/lake/"

    con = duckdb.connect()
    for extension in ("ducklake", "httpfs", "sqlite_scanner"):
        duckdb_extensions.import_extension(extension, con=con)
    use_ssl = str(endpoint.startswith("https://")).lower()
    con.execute(
        f"CREATE SECRET minio (TYPE s3, KEY_ID '{access_key}', SECRET '{secret_key}', "
        f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL {use_ssl}, REGION 'us-east-1')"
    )
    con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS lake (DATA_PATH '{data_path}')")
    con.execute(
        "CREATE TABLE lake.main.events AS SELECT range AS id, range % 7 AS kind FROM range(100000)"
    )
    con.execute("DELETE FROM lake.main.events WHERE kind = 3")
    con.execute("DETACH lake")

    lake = DuckLakeCatalog(
        f"sqlite:{catalog}",
        storage_options={
            "endpoint": endpoint,
            "access_key_id": access_key,
            "secret_access_key": secret_key,
            "region": "us-east-1",
            "allow_http": endpoint.startswith("http://"),
            "url_style": "path",
        },
    )
    ctx = SessionContext()
    register(ctx, "lake", lake)
    ctx.sql("SELECT kind, count(*) AS n FROM lake.main.events GROUP BY kind ORDER BY kind").show()


if __name__ == "__main__":
    main()
