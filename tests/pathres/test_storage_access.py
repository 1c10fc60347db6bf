"""One storage-access model (``pathres.storage_access``) behind every reader's configuration.

The pyarrow filesystem (exact path), the Rust scan's object_store and Spark's Hadoop
connectors are each configured from the same :class:`S3Access` / :class:`GcsAccess` /
:class:`AzureAccess`. For a table of option sets, each adapter's output is checked against
the model's values (computed here, never copied from one adapter's output), and an
adapter handed a made-up access value is shown to follow it rather than the options.
"""

from __future__ import annotations

import pickle

import pyarrow.fs as pafs
import pytest

from ducklake_datafusion.errors import InvalidOptionError
from ducklake_datafusion.pathres import (
    DEFAULT_S3_REGION,
    AzureAccess,
    Endpoint,
    GcsAccess,
    LocalAccess,
    S3Access,
    StorageOptions,
    _filesystems,
    _object_store,
    parse_location,
    storage_access,
)
from ducklake_datafusion.provider import _rust_stores
from ducklake_datafusion.spark.parquet import _hadoop

_S3A = "org.apache.hadoop.fs.s3a."


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AZURE_STORAGE_ACCOUNT_NAME"):
        monkeypatch.delenv(name, raising=False)


def _adapters(url: str, options: dict):
    """(access, pyarrow kwargs, Rust store options, Hadoop read options) for ``url``."""
    storage = StorageOptions.from_user(options)
    location = parse_location(url)
    access = storage_access(location, storage)
    if location.scheme == "s3":
        pyarrow = _filesystems.s3_kwargs(storage, location.authority)
        pafs.S3FileSystem(**pyarrow)
    elif location.scheme == "gs":
        pyarrow = _filesystems.gcs_kwargs(storage, location.authority)
        pafs.GcsFileSystem(**pyarrow)
    else:
        pyarrow = _filesystems.azure_kwargs(location, storage)
        pafs.AzureFileSystem(**pyarrow)
    return (
        access,
        pyarrow,
        _rust_stores.store_kind(url, storage),
        _hadoop.hadoop_options(url, storage),
    )


S3_CASES = {
    "minio http endpoint + keys": {
        "endpoint": "http://127.0.0.1:9000", "key_id": "AKIAEXAMPLE", "secret": "SECRETKEY"
    },
    "https endpoint + region + session token": {
        "s3_endpoint": "https://s3.example:443/", "region": "eu-west-1",
        "access_key_id": "AKIAEXAMPLE", "secret_access_key": "SECRETKEY",
        "session_token": "SESSIONTOKEN",
    },
    "schemeless endpoint, allow_http": {
        "endpoint": "minio:9000", "allow_http": True, "key_id": "AK12", "secret": "SK12"
    },
    "schemeless endpoint, use_ssl false": {
        "endpoint": "minio:9000", "use_ssl": False, "key_id": "AK12", "secret": "SK12"
    },
    "schemeless endpoint, https": {"endpoint": "minio:9000", "key_id": "AK12", "secret": "SK12"},
    "aws keys + region": {"region": "ap-south-1", "key_id": "AK12", "secret": "SK12"},
    "aws keys, vhost": {"url_style": "vhost", "key_id": "AK12", "secret": "SK12"},
    "endpoint, path forced": {"endpoint": "http://h:1", "force_path_style": True},
    "http without endpoint": {"use_ssl": False, "key_id": "AK12", "secret": "SK12"},
    "allow_http without endpoint": {"allow_http": True, "key_id": "AK12", "secret": "SK12"},
    "anonymous": {"anonymous": True, "region": "us-west-2"},
    "anonymous on an endpoint": {"anonymous": True, "endpoint": "http://127.0.0.1:9000"},
    "ambient": {},
}  # fmt: skip


@pytest.mark.parametrize("options", S3_CASES.values(), ids=S3_CASES.keys())
def test_s3_adapters_follow_one_access(options):
    access, pyarrow, rust, hadoop = _adapters("s3://bucket/lake/f.parquet", options)
    assert isinstance(access, S3Access) and access.bucket == "bucket"
    prefix = "fs.s3a.bucket.bucket."
    # region: pyarrow and Rust need one; Hadoop is told only a configured one
    assert pyarrow["region"] == access.effective_region
    assert (access.region or DEFAULT_S3_REGION) == access.effective_region
    assert hadoop.get(prefix + "endpoint.region") == access.region
    # endpoint and scheme
    if access.endpoint is None:
        assert "endpoint_override" not in pyarrow and prefix + "endpoint" not in hadoop
        assert pyarrow.get("scheme", "https") == access.scheme
    else:
        assert (pyarrow["scheme"], pyarrow["endpoint_override"]) == (
            access.endpoint.scheme,
            access.endpoint.host,
        )
        assert hadoop[prefix + "endpoint"] == access.endpoint.url
        assert access.scheme == access.endpoint.scheme
    assert hadoop[prefix + "connection.ssl.enabled"] == str(access.scheme == "https").lower()
    # addressing
    assert pyarrow["force_virtual_addressing"] == (access.addressing == "vhost")
    if access.addressing is None:
        assert prefix + "path.style.access" not in hadoop
    else:
        assert hadoop[prefix + "path.style.access"] == str(access.addressing == "path").lower()
    # credentials
    provider = hadoop.get(prefix + "aws.credentials.provider")
    if access.credential == "keys":
        assert (pyarrow["access_key"], pyarrow["secret_key"]) == (
            access.access_key_id,
            access.secret_access_key,
        )
        assert (hadoop[prefix + "access.key"], hadoop[prefix + "secret.key"]) == (
            access.access_key_id,
            access.secret_access_key,
        )
        assert pyarrow.get("session_token") == access.session_token
        assert hadoop.get(prefix + "session.token") == access.session_token
        temporary = _S3A + "TemporaryAWSCredentialsProvider"
        assert provider == (temporary if access.session_token else None)
    else:
        assert "access_key" not in pyarrow and prefix + "access.key" not in hadoop
        anonymous = _S3A + "AnonymousAWSCredentialsProvider"
        assert pyarrow.get("anonymous", False) == (access.credential == "anonymous")
        assert provider == (anonymous if access.credential == "anonymous" else None)
    # the Rust store: explicit keys, path addressing, an endpoint for plain http
    rust_reads = (
        access.credential == "keys"
        and access.addressing != "vhost"
        and (access.endpoint is not None or access.scheme == "https")
    )
    if not rust_reads:
        assert rust is None
    else:
        assert rust["kind"] == "s3" and rust["bucket"] == access.bucket
        assert rust["region"] == access.effective_region
        assert rust.get("endpoint") == (access.endpoint.url if access.endpoint else None)
        assert rust.get("allow_http") == ("true" if access.scheme == "http" else None)
        assert (rust["access_key_id"], rust["secret_access_key"]) == (
            access.access_key_id,
            access.secret_access_key,
        )
        assert rust.get("session_token") == access.session_token


GCS_CASES = {
    "token": {"google_service_account_token": "ya29.TOKEN", "project_id": "p"},
    "token on an emulator": {"access_token": "ya29.TOKEN", "gcs_endpoint": "http://127.0.0.1:4443"},
    "anonymous emulator": {"anonymous": True, "endpoint": "127.0.0.1:4443", "allow_http": True},
    "anonymous https endpoint": {"anonymous": True, "gcs_endpoint": "https://gcs.example/"},
    "ambient with project": {"project_id": "proj"},
}  # fmt: skip


@pytest.mark.parametrize("options", GCS_CASES.values(), ids=GCS_CASES.keys())
def test_gcs_adapters_follow_one_access(options):
    access, pyarrow, rust, hadoop = _adapters("gs://bucket/lake/f.parquet", options)
    assert isinstance(access, GcsAccess) and access.bucket == "bucket"
    if access.endpoint is None:
        assert "endpoint_override" not in pyarrow and "fs.gs.storage.root.url" not in (hadoop or {})
    else:
        assert (pyarrow["scheme"], pyarrow["endpoint_override"]) == (
            access.endpoint.scheme,
            access.endpoint.host,
        )
    assert pyarrow.get("project_id") == access.project_id
    assert pyarrow.get("access_token") == access.token
    assert pyarrow.get("anonymous", False) == (access.credential == "anonymous")
    if access.credential == "token":
        assert hadoop is None  # no Hadoop setting takes a bare token
    else:
        if access.endpoint is not None:
            assert hadoop["fs.gs.storage.root.url"] == access.endpoint.url + "/"
        assert hadoop.get("fs.gs.project.id") == access.project_id
        anonymous = access.credential == "anonymous"
        assert hadoop.get("fs.gs.auth.type") == ("UNAUTHENTICATED" if anonymous else None)
    if access.credential == "ambient":
        assert rust is None
    else:
        assert rust["kind"] == "gcs" and rust["bucket"] == access.bucket
        assert rust.get("token") == access.token
        assert rust.get("anonymous") == ("true" if access.credential == "anonymous" else None)
        assert rust.get("endpoint") == (access.endpoint.url if access.endpoint else None)
        http = access.endpoint is not None and access.endpoint.http
        assert rust.get("allow_http") == ("true" if http else None)


AZURE_CASES = {
    "azurite key": (
        "az://box/lake/f.parquet",
        {"account_name": "devstoreaccount1", "account_key": "a2V5a2V5",
         "blob_storage_authority": "http://127.0.0.1:10000"},
    ),
    "azurite key, schemeless endpoint": (
        "az://box/lake/f.parquet",
        {"account_name": "devstoreaccount1", "account_key": "a2V5a2V5",
         "endpoint": "127.0.0.1:10000", "allow_http": True},
    ),
    "cloud key": (
        "abfss://box@acct.dfs.core.windows.net/lake/f.parquet", {"account_key": "a2V5a2V5"}
    ),
    "sas, sovereign host": (
        "abfss://box@acct.dfs.core.windows.net/lake/f.parquet",
        {"sas_token": "sv=2020&sig=SIGSIG", "endpoint": "https://acct.blob.core.chinacloudapi.cn"},
    ),
    "sas, sovereign suffix": (
        "az://box/lake/f.parquet",
        {"account_name": "acct", "sas_token": "sv=2020&sig=SIGSIG",
         "blob_storage_authority": ".blob.core.chinacloudapi.cn"},
    ),
    "service principal": (
        "az://box/lake/f.parquet",
        {"account_name": "acct", "client_id": "cid", "tenant_id": "tid",
         "client_secret": "CSECRET"},
    ),
    "managed identity": ("az://box/lake/f.parquet", {"account_name": "acct", "client_id": "cid"}),
    "ambient": ("abfss://box@acct.dfs.core.windows.net/lake/f.parquet", {}),
}  # fmt: skip


@pytest.mark.parametrize(("url", "options"), AZURE_CASES.values(), ids=AZURE_CASES.keys())
def test_azure_adapters_follow_one_access(url, options):
    access, pyarrow, rust, hadoop = _adapters(url, options)
    assert isinstance(access, AzureAccess) and access.container == "box"
    host = f"{access.account}.dfs.core.windows.net"
    assert pyarrow["account_name"] == access.account
    scheme = "abfs" if access.endpoint and access.endpoint.http else "abfss"
    assert _hadoop.hadoop_url(url, StorageOptions.from_user(options)) == (
        f"{scheme}://box@{host}/lake/f.parquet"
    )
    for name in ("account_key", "sas_token", "client_id", "tenant_id", "client_secret"):
        assert pyarrow.get(name) == getattr(access, name)
    if access.endpoint is None:
        assert "blob_storage_authority" not in pyarrow
    else:
        # pyarrow spells a host-style endpoint as the suffix it puts the account in front of
        authority = access.endpoint.host if access.path_style else access.blob_suffix
        assert authority.startswith(".") != access.path_style
        assert (pyarrow["blob_storage_scheme"], pyarrow["blob_storage_authority"]) == (
            access.endpoint.scheme,
            authority,
        )
        assert pyarrow["dfs_storage_scheme"] == access.endpoint.scheme
    # Rust: shared key or SAS only
    if access.credential not in ("account_key", "sas_token"):
        assert rust is None
    else:
        assert (rust["kind"], rust["container"], rust["account"]) == (
            "azure",
            access.container,
            access.account,
        )
        assert rust.get("access_key") == access.account_key
        assert rust.get("sas_token") == access.sas_token
        assert rust.get("endpoint") == access.blob_url
        if access.blob_url is not None:
            assert rust["endpoint"].startswith(access.endpoint.scheme + "://")
            assert (access.account in rust["endpoint"].partition("://")[2].split("/", 1)[0]) != (
                access.path_style
            )
        http = access.endpoint is not None and access.endpoint.http
        assert rust.get("allow_http") == ("true" if http else None)
    # Hadoop: shared key or ambient, on the cloud or an emulator's host:port
    expressible = access.credential in ("account_key", "managed_identity", "ambient") and (
        access.endpoint is None or (access.path_style and ":" in access.endpoint.host)
    )
    if not expressible:
        assert hadoop is None
        return
    assert hadoop.get(f"fs.azure.account.key.{host}") == access.account_key
    if access.endpoint is None:
        assert f"fs.azure.abfs.endpoint.{host}" not in hadoop
    else:
        assert hadoop[f"fs.azure.abfs.endpoint.{host}"] == access.endpoint.host
        assert (hadoop.get("fs.azure.always.use.https") == "false") == access.endpoint.http


def test_adapters_translate_the_access_value_not_the_options(monkeypatch):
    """Handed a made-up access value, every adapter follows it: none reads the options."""
    made_up = S3Access(
        bucket="bucket",
        region="xx-test-1",
        endpoint=Endpoint("http", "store.test:1234"),
        scheme="http",
        addressing="path",
        access_key_id="AKMADEUP",
        secret_access_key="SKMADEUP",
    )
    for module in (_filesystems, _object_store, _hadoop):
        monkeypatch.setattr(module, "storage_access", lambda location, options: made_up)
    monkeypatch.setattr(_filesystems, "s3_access", lambda options, bucket="": made_up)
    storage = StorageOptions()  # ambient: no adapter would pick any of the above from it
    pyarrow = _filesystems.s3_kwargs(storage, "bucket")
    rust = _rust_stores.store_kind("s3://bucket/lake/", storage)
    hadoop = _hadoop.hadoop_options("s3://bucket/lake/f.parquet", storage)
    assert (pyarrow["region"], rust["region"], hadoop["fs.s3a.bucket.bucket.endpoint.region"]) == (
        "xx-test-1",
        "xx-test-1",
        "xx-test-1",
    )
    assert pyarrow["endpoint_override"] == "store.test:1234" and pyarrow["scheme"] == "http"
    assert rust["endpoint"] == hadoop["fs.s3a.bucket.bucket.endpoint"] == "http://store.test:1234"
    assert pyarrow["access_key"] == rust["access_key_id"] == "AKMADEUP"
    assert hadoop["fs.s3a.bucket.bucket.access.key"] == "AKMADEUP"


def test_defaults_and_environment_are_settled_in_the_model(monkeypatch):
    s3 = storage_access(parse_location("s3://b/k"), None)
    assert (s3.region, s3.effective_region, s3.scheme, s3.addressing) == (
        None,
        DEFAULT_S3_REGION,
        "https",
        None,
    )
    assert s3.credential == "ambient"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert storage_access(parse_location("s3://b/k"), {}).region == "ap-south-1"
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    assert storage_access(parse_location("s3://b/k"), {}).region == "eu-north-1"
    assert storage_access(parse_location("s3://b/k"), {"region": "r-1"}).region == "r-1"
    endpoint = storage_access(parse_location("s3://b/k"), {"endpoint": "h:1"})
    assert endpoint.addressing == "path" and endpoint.endpoint == Endpoint("https", "h:1")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    azure = storage_access(parse_location("az://c/k"), {})
    assert (azure.account, azure.container, azure.credential) == ("fromenv", "c", "ambient")
    assert storage_access(parse_location("/tmp/x"), {}) == LocalAccess()
    emulator = storage_access(
        parse_location("az://c/k"), {"endpoint": "http://127.0.0.1:10000", "account_key": "a2V5"}
    )
    assert emulator.path_style and emulator.blob_url == "http://127.0.0.1:10000/fromenv"
    suffix = storage_access(parse_location("az://c/k"), {"endpoint": ".blob.example.cn"})
    assert not suffix.path_style and suffix.blob_url == "https://fromenv.blob.example.cn"


@pytest.mark.parametrize(
    ("url", "options", "needle"),
    [
        ("s3://b/k", {"key_id": "AK"}, "together"),
        ("s3://b/k", {"session_token": "T"}, "session_token needs"),
        ("s3://b/k", {"endpoint": "ftp://h:1"}, "http"),
        ("s3://b/k", {"endpoint": "http://h:1", "allow_http": False}, "allow_http"),
        ("s3://b/k", {"anonymous": True, "key_id": "AK", "secret": "SK"}, "anonymous excludes"),
        ("gs://b/k", {"anonymous": True, "access_token": "ya29"}, "anonymous excludes"),
        ("s3://b/k", {"account_key": "a2V5"}, "Azure credentials"),
        ("az://c/k", {"account_name": "a", "session_token": "T"}, "S3 credentials"),
        ("az://c/k", {}, "account_name"),
        ("az://c/k", {"account_name": "a", "account_key": "k", "sas_token": "s"}, "exclude"),
    ],
)
def test_the_model_refuses_what_no_adapter_could_honour(url, options, needle):
    with pytest.raises(InvalidOptionError, match=needle):
        storage_access(parse_location(url), options)
    storage = StorageOptions.from_user(options)
    assert _hadoop.hadoop_options(url, storage) is None  # Spark leaves it to the source
    with pytest.raises(InvalidOptionError, match=needle):
        _rust_stores.store_kind(url, storage)


def test_access_values_never_show_secrets():
    secrets = ["AKIDSECRET1", "SKSECRET22", "TOKSECRET3", "ya29SECRET4", "a2V5SECRET5"]
    values = [
        storage_access(
            parse_location("s3://b/k"),
            {"key_id": secrets[0], "secret": secrets[1], "session_token": secrets[2]},
        ),
        storage_access(parse_location("gs://b/k"), {"access_token": secrets[3]}),
        storage_access(
            parse_location("az://c/k"), {"account_name": "acct", "account_key": secrets[4]}
        ),
        storage_access(
            parse_location("az://c/k"), {"account_name": "acct", "sas_token": "sv=1&sig=SASSECRET6"}
        ),
        storage_access(
            parse_location("az://c/k"),
            {"account_name": "acct", "client_id": "c", "tenant_id": "t", "client_secret": "CS7X"},
        ),
    ]
    for value in values:
        for shown in (repr(value), str(value), f"{value}", repr([value])):
            assert not any(secret in shown for secret in [*secrets, "SASSECRET6", "CS7X"]), shown
            assert "***" in shown
    assert "region" not in repr(values[0]) and "bucket='b'" in repr(values[0])
    assert "account='acct'" in repr(values[2])
    # frozen and comparable, like the options they come from
    with pytest.raises(AttributeError):
        values[0].region = "x"  # type: ignore[misc]
    assert values[1] == pickle.loads(pickle.dumps(values[1]))
