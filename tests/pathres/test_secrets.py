"""Credentials never reach an error message, even when the server echoes them back.

A tiny S3 look-alike on 127.0.0.1 answers every GET with 403 and an error body that
quotes the request's ``Authorization`` and session-token headers, as misconfigured
proxies and some S3 clones do. Every read path must raise a ``StorageError`` whose text,
and whose chained cause, hold none of the secrets.
"""

from __future__ import annotations

import http.server
import threading
import traceback

import pytest
from support.lakes import LakeSpec

from ducklake_datafusion import DuckLakeCatalog, errors
from ducklake_datafusion.pathres import StorageOptions

KEY_ID = "AKIAECHOEDKEYID12345"
SECRET = "echoed/secret+access+key/0123456789"
TOKEN = "FQoGZXIvYXdzEchoedSessionToken0123456789"


class _EchoingS3(http.server.BaseHTTPRequestHandler):
    def _deny(self):
        body = (
            "<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
            f"<Message>Access Denied for {self.headers.get('Authorization')} token "
            f"{self.headers.get('x-amz-security-token')}</Message>"
            f"<AWSAccessKeyId>{KEY_ID}</AWSAccessKeyId></Error>"
        ).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):  # the object "exists", so the reader goes on to GET it
        self.send_response(200)
        self.send_header("Content-Length", "4096")
        self.send_header("Last-Modified", "Mon, 23 Nov 2026 10:00:00 GMT")
        self.end_headers()

    do_GET = do_PUT = _deny

    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def echoing_endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoingS3)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _assert_clean(exc: BaseException) -> None:
    shown = "".join(traceback.format_exception(exc))
    for secret in (KEY_ID, SECRET, TOKEN):
        assert secret not in shown, shown


def test_echoed_credentials_are_scrubbed(make_lake, echoing_endpoint):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (i INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE i < 50")  # a delete file: the other read path
    args = lake.reader_args()
    options = {
        "endpoint": echoing_endpoint,
        "access_key_id": KEY_ID,
        "secret_access_key": SECRET,
        "session_token": TOKEN,
        "url_style": "path",
    }
    catalog = DuckLakeCatalog(
        args["metadata"], data_path="s3://bucket/lake/", storage_options=options
    )
    table = catalog.table("main", "t")
    for columns in (["i"], []):
        with pytest.raises(errors.StorageError) as info:
            table.to_arrow(columns=columns)
        _assert_clean(info.value)
        assert "access denied" in str(info.value).lower()
    assert KEY_ID not in repr(StorageOptions.from_user(options))


def test_options_for_another_store_are_refused(make_lake):
    """Azure credentials given for an S3 lake would be silently ignored: refuse them."""
    from ducklake_datafusion.pathres import filesystem_for, parse_location

    for wrong in ({"account_key": "a2V5a2V5"}, {"sas_token": "sv=2020&sig=abc"}):
        with pytest.raises(errors.InvalidOptionError, match="Azure"):
            filesystem_for(parse_location("s3://bucket/x.parquet"), StorageOptions.from_user(wrong))
    with pytest.raises(errors.InvalidOptionError, match="S3"):
        filesystem_for(
            parse_location("az://container/x.parquet"),
            StorageOptions.from_user({"account_name": "acct", "session_token": "tok-tok"}),
        )
