"""Path rules, locations, storage options and error translation."""

from __future__ import annotations

import errno
import os
import pickle

import pyarrow.fs as pafs
import pytest

from ducklake_datafusion.errors import (
    DataFileMissingError,
    DuckLakeError,
    InvalidOptionError,
    StorageError,
)
from ducklake_datafusion.pathres import (
    StorageLocation,
    StorageOptions,
    clear_filesystem_cache,
    filesystem_for,
    join_path,
    parse_location,
    resolve_data_path,
    resolve_file_path,
    translate_storage_error,
)
from ducklake_datafusion.pathres._filesystems import azure_kwargs, gcs_kwargs, s3_kwargs

SCHEMA_UUID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

# --------------------------------------------------------------------------- join_path


@pytest.mark.parametrize(
    ("parent", "child", "rel", "expected"),
    [
        ("/lake/", None, True, "/lake/"),  # NULL path -> parent
        ("/lake/", None, False, "/lake/"),
        ("/lake/", "main/", True, "/lake/main/"),
        ("/lake", "main/", True, "/lake/main/"),  # parent normalised to end with /
        ("/lake/", "/elsewhere/s/", False, "/elsewhere/s/"),
        ("/lake/", "s3://b/other/", False, "s3://b/other/"),
        ("s3://bkt/pre fix/", "main/", True, "s3://bkt/pre fix/main/"),
        ("/lake/main/t/", "p=x%20y/f.parquet", True, "/lake/main/t/p=x%20y/f.parquet"),
        (
            "/lake/main/t/",
            "p=%C3%A9%3D%C3%BC/f.parquet",
            True,
            "/lake/main/t/p=%C3%A9%3D%C3%BC/f.parquet",
        ),
        ("/lake/", "Ünï/", True, "/lake/Ünï/"),
        ("/lake/", "", True, "/lake/"),
        # path_is_relative NULL: inferred from the text.
        ("/lake/", "t/", None, "/lake/t/"),
        ("/lake/", "/abs/t/", None, "/abs/t/"),
        ("/lake/", "gs://b/t/", None, "gs://b/t/"),
        ("/lake/", "C:/lake/t/", None, "C:/lake/t/"),
    ],
)
def test_join_path(parent, child, rel, expected):
    assert join_path(parent, child, rel) == expected


# --------------------------------------------------------------------------- resolve_file_path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # all relative
        (("/d/", "main/", True, "t/", True, "f.parquet", True), "/d/main/t/f.parquet"),
        # NULL schema and table paths -> data_path
        (("/d/", None, None, None, None, "f.parquet", True), "/d/f.parquet"),
        (("/d/", "main/", True, None, True, "f.parquet", True), "/d/main/f.parquet"),
        # absolute at each level
        (("/d/", "/s/", False, "t/", True, "f.parquet", True), "/s/t/f.parquet"),
        (("/d/", "main/", True, "/t/", False, "f.parquet", True), "/t/f.parquet"),
        (("/d/", "main/", True, "t/", True, "/x/f.parquet", False), "/x/f.parquet"),
        (("/d/", "main/", True, "t/", True, "s3://b/k.parquet", False), "s3://b/k.parquet"),
        # schema names that are not plain ASCII get UUID directories, stored verbatim
        (
            ("/d/", f"{SCHEMA_UUID}/", True, "t/", True, "f.parquet", True),
            f"/d/{SCHEMA_UUID}/t/f.parquet",
        ),
        (
            ("s3://bkt/pre fix/", "my schema/", True, "Ünï/", True, "p=a%2Fb/f 1.parquet", True),
            "s3://bkt/pre fix/my schema/Ünï/p=a%2Fb/f 1.parquet",
        ),
        (
            ("/d/", "main/", True, "t/", True, "p=__HIVE_DEFAULT_PARTITION__/f.parquet", True),
            "/d/main/t/p=__HIVE_DEFAULT_PARTITION__/f.parquet",
        ),
    ],
)
def test_resolve_file_path(args, expected):
    assert resolve_file_path(*args) == expected


# --------------------------------------------------------------------------- resolve_data_path


@pytest.mark.parametrize(
    ("stored", "override", "expected"),
    [
        ("/x/data/", None, "/x/data/"),
        ("/x/data", None, "/x/data/"),
        ("data/", None, "/work/dir/data/"),  # relative -> against cwd, not the catalog
        ("./data", None, "/work/dir/data/"),
        ("../up/data/", None, "/work/up/data/"),
        ("my lake/Ünï/", None, "/work/dir/my lake/Ünï/"),
        ("file:///x/a%20b/", None, "/x/a%20b/"),  # never decoded
        ("file://localhost/x/", None, "/x/"),
        ("FILE:///x", None, "/x/"),
        ("file:///C:/lake/", None, "C:/lake/"),
        ("C:/lake/", None, "C:/lake/"),
        ("s3://bkt/pre fix/", None, "s3://bkt/pre fix/"),
        ("s3://bkt/p", None, "s3://bkt/p/"),
        ("gs://b/p/", None, "gs://b/p/"),
        ("gcs://b/p/", None, "gcs://b/p/"),
        ("az://c/p/", None, "az://c/p/"),
        ("abfss://c@a.dfs.core.windows.net/p/", None, "abfss://c@a.dfs.core.windows.net/p/"),
        # the override wins and follows the same rules
        ("/x/data/", "/moved/", "/moved/"),
        ("/x/data/", "moved", "/work/dir/moved/"),
        ("s3://old/", "s3://new/p", "s3://new/p/"),
        (None, "/y/", "/y/"),
        ("", "/y/", "/y/"),
    ],
)
def test_resolve_data_path(stored, override, expected):
    assert resolve_data_path(stored, override, cwd="/work/dir") == expected


def test_resolve_data_path_defaults_to_process_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_data_path("data/") == str(tmp_path).replace(os.sep, "/") + "/data/"


def test_resolve_data_path_expands_home(monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    assert resolve_data_path("~/lake") == "/home/someone/lake/"


@pytest.mark.parametrize(
    ("stored", "override"), [(None, None), ("", None), ("/x/", ""), ("/x/", "  ")]
)
def test_resolve_data_path_without_root(stored, override):
    with pytest.raises(InvalidOptionError, match="data_path"):
        resolve_data_path(stored, override)


def test_remote_file_url_rejected():
    with pytest.raises(InvalidOptionError, match="remote host"):
        resolve_data_path("file://server/share/")


# --------------------------------------------------------------------------- parse_location


@pytest.mark.parametrize(
    ("url", "scheme", "authority", "path", "account"),
    [
        ("/lake/main/t/f.parquet", "file", "", "/lake/main/t/f.parquet", ""),
        ("/lake/p=x%20y/f ü.parquet", "file", "", "/lake/p=x%20y/f ü.parquet", ""),
        ("file:///lake/a%20b/f.parquet", "file", "", "/lake/a%20b/f.parquet", ""),
        ("file://localhost/lake/f.parquet", "file", "", "/lake/f.parquet", ""),
        ("C:/lake/f.parquet", "file", "", "C:/lake/f.parquet", ""),
        ("s3://bkt/pre fix/main/t/f.parquet", "s3", "bkt", "bkt/pre fix/main/t/f.parquet", ""),
        ("s3://bkt/t/p=x%20y/f.parquet", "s3", "bkt", "bkt/t/p=x%20y/f.parquet", ""),
        (
            "s3://bkt/Ünï/my schema/f?v=1#x.parquet",
            "s3",
            "bkt",
            "bkt/Ünï/my schema/f?v=1#x.parquet",
            "",
        ),
        ("S3://bkt/k", "s3", "bkt", "bkt/k", ""),
        ("s3a://bkt/k", "s3", "bkt", "bkt/k", ""),
        ("s3://bkt", "s3", "bkt", "bkt", ""),
        ("s3://bkt/", "s3", "bkt", "bkt", ""),
        ("gs://gb/a b/f.parquet", "gs", "gb", "gb/a b/f.parquet", ""),
        ("gcs://gb/k", "gs", "gb", "gb/k", ""),
        ("az://cont/dir/f.parquet", "az", "cont", "cont/dir/f.parquet", ""),
        ("azure://cont/dir/f.parquet", "az", "cont", "cont/dir/f.parquet", ""),
        ("az://acct.blob.core.windows.net/cont/d/f", "az", "cont", "cont/d/f", "acct"),
        (
            "abfss://cont@acct.dfs.core.windows.net/d e/f.parquet",
            "az",
            "cont",
            "cont/d e/f.parquet",
            "acct",
        ),
        ("abfs://cont@acct.dfs.core.windows.net/d/f", "az", "cont", "cont/d/f", "acct"),
        ("abfss://acct.dfs.core.windows.net/cont/d/f", "az", "cont", "cont/d/f", "acct"),
        ("abfss://cont/d/f", "az", "cont", "cont/d/f", ""),
    ],
)
def test_parse_location(url, scheme, authority, path, account):
    loc = parse_location(url)
    assert (loc.scheme, loc.authority, loc.path, loc.account, loc.url) == (
        scheme,
        authority,
        path,
        account,
        url,
    )


def test_parse_location_relative_local_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_location("data/f.parquet").path == os.path.join(str(tmp_path), "data/f.parquet")


@pytest.mark.parametrize("url", ["http://h/x", "hdfs://nn/x", "hf://datasets/x", "r2://b/k"])
def test_parse_location_unsupported_scheme(url):
    with pytest.raises(InvalidOptionError) as info:
        parse_location(url)
    assert "unsupported storage scheme" in str(info.value)
    assert "s3://" in str(info.value) and "abfss://" in str(info.value)


@pytest.mark.parametrize("url", ["s3:///key", "gs://", "abfss://@acct.dfs.core.windows.net/x"])
def test_parse_location_without_bucket(url):
    with pytest.raises(InvalidOptionError):
        parse_location(url)


def test_storage_location_is_frozen_and_picklable():
    loc = parse_location("abfss://cont@acct.dfs.core.windows.net/d/f")
    assert pickle.loads(pickle.dumps(loc)) == loc
    with pytest.raises(AttributeError):
        loc.path = "x"  # type: ignore[misc]
    assert StorageLocation("s3", "b", "b/k", "s3://b/k").account == ""


# --------------------------------------------------------------------------- StorageOptions


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("endpoint", "http://h:9", "endpoint", "http://h:9"),
        ("endpoint_url", "http://h:9", "s3_endpoint", "http://h:9"),
        ("aws_endpoint_url", "http://h:9", "s3_endpoint", "http://h:9"),
        ("s3_endpoint", "http://h:9", "s3_endpoint", "http://h:9"),
        ("region", "eu-west-1", "region", "eu-west-1"),
        ("aws_region", "eu-west-1", "region", "eu-west-1"),
        ("AWS_REGION", "eu-west-1", "region", "eu-west-1"),
        ("s3_region", "eu-west-1", "region", "eu-west-1"),
        ("access_key_id", "AK", "access_key_id", "AK"),
        ("aws_access_key_id", "AK", "access_key_id", "AK"),
        ("key_id", "AK", "access_key_id", "AK"),
        ("secret_access_key", "SK", "secret_access_key", "SK"),
        ("aws_secret_access_key", "SK", "secret_access_key", "SK"),
        ("secret", "SK", "secret_access_key", "SK"),
        ("session_token", "ST", "session_token", "ST"),
        ("aws_session_token", "ST", "session_token", "ST"),
        ("allow_http", True, "allow_http", True),
        ("allow_http", "true", "allow_http", True),
        ("allow_http", "FALSE", "allow_http", False),
        ("aws_allow_http", "1", "allow_http", True),
        ("url_style", "path", "url_style", "path"),
        ("url_style", "VHOST", "url_style", "vhost"),
        ("s3_url_style", "vhost", "url_style", "vhost"),
        ("force_path_style", True, "url_style", "path"),
        ("force_path_style", "false", "url_style", "vhost"),
        ("virtual_hosted_style_request", True, "url_style", "vhost"),
        ("virtual_hosted_style_request", False, "url_style", "path"),
        ("use_ssl", "false", "use_ssl", False),
        ("s3_use_ssl", True, "use_ssl", True),
        ("google_service_account_token", "ya29", "google_service_account_token", "ya29"),
        ("access_token", "ya29", "google_service_account_token", "ya29"),
        ("anonymous", "true", "anonymous", True),
        ("gcs_endpoint", "http://h:4443", "gcs_endpoint", "http://h:4443"),
        ("project_id", "p", "project_id", "p"),
        ("account_name", "acct", "account_name", "acct"),
        ("azure_storage_account_name", "acct", "account_name", "acct"),
        ("account_key", "AKEY", "account_key", "AKEY"),
        ("azure_storage_account_key", "AKEY", "account_key", "AKEY"),
        ("sas_token", "sv=1&sig=x", "sas_token", "sv=1&sig=x"),
        ("client_id", "cid", "client_id", "cid"),
        ("tenant_id", "tid", "tenant_id", "tid"),
        ("client_secret", "csec", "client_secret", "csec"),
        ("blob_storage_authority", "127.0.0.1:10000", "blob_storage_authority", "127.0.0.1:10000"),
        ("azure_endpoint", "127.0.0.1:10000", "blob_storage_authority", "127.0.0.1:10000"),
    ],
)
def test_option_aliases(key, value, field, expected):
    assert getattr(StorageOptions.from_user({key: value}), field) == expected


def test_options_empty_and_passthrough():
    assert StorageOptions.from_user(None) == StorageOptions()
    assert StorageOptions.from_user({}) == StorageOptions()
    assert StorageOptions.from_user({"region": None}) == StorageOptions()
    opts = StorageOptions.from_user({"region": "r"})
    assert StorageOptions.from_user(opts) is opts


def test_unknown_option_names_key_and_lists_accepted():
    with pytest.raises(InvalidOptionError) as info:
        StorageOptions.from_user({"aws_acess_key_id": "x"})
    message = str(info.value)
    assert "aws_acess_key_id" in message
    assert "aws_access_key_id" in message and "sas_token" in message


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"allow_http": "maybe"}, "true or false"),
        ({"url_style": "sideways"}, "'path' or 'vhost'"),
        ({"region": 5}, "must be a string"),
        ({"region": "a", "aws_region": "b"}, "different values"),
        ({"force_path_style": True, "url_style": "vhost"}, "different values"),
        ("region=x", "mapping"),
    ],
)
def test_bad_option_values(options, needle):
    with pytest.raises(InvalidOptionError, match=needle):
        StorageOptions.from_user(options)


def test_same_value_under_two_aliases_is_fine():
    opts = StorageOptions.from_user({"region": "a", "aws_region": "a"})
    assert opts.region == "a"


SECRETS = {
    "aws_access_key_id": "AKIAVERYSECRET01",
    "aws_secret_access_key": "s3cr3t/VALUE+xyz",
    "aws_session_token": "SESSIONTOKEN123",
    "access_token": "ya29.GCSTOKEN",
    "account_key": "QVpVUkVLRVk=",
    "sas_token": "sv=2024&sig=SASSIG123",
    "client_secret": "CLIENTSECRET42",
}


def test_repr_and_str_redact_every_secret():
    opts = StorageOptions.from_user({**SECRETS, "region": "eu-west-1", "client_id": "cid"})
    for text in (repr(opts), str(opts), f"{opts}", repr([opts])):
        for secret in SECRETS.values():
            assert secret not in text
        assert "'***'" in text and "eu-west-1" in text and "cid" in text


def test_conflicting_secret_values_are_not_shown():
    with pytest.raises(InvalidOptionError) as info:
        StorageOptions.from_user({"secret": "ONE-SECRET", "aws_secret_access_key": "TWO-SECRET"})
    assert "ONE-SECRET" not in str(info.value) and "TWO-SECRET" not in str(info.value)
    with pytest.raises(InvalidOptionError) as info:
        StorageOptions.from_user({"secret": 12345678})
    assert "12345678" not in str(info.value)


def test_options_pickle_hash_equality():
    opts = StorageOptions.from_user({**SECRETS, "endpoint": "http://h:9", "allow_http": "true"})
    clone = pickle.loads(pickle.dumps(opts))
    assert clone == opts and hash(clone) == hash(opts)
    assert {opts: 1}[clone] == 1
    filesystem_for(parse_location("s3://bkt/k"), StorageOptions.from_user({"region": "r"}))
    assert pickle.loads(pickle.dumps(opts)) == opts  # the filesystem cache is not on the object
    with pytest.raises(AttributeError):
        opts.region = "x"  # type: ignore[misc]


# --------------------------------------------------------------------------- filesystems


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_filesystem_cache()
    yield
    clear_filesystem_cache()


def test_local_filesystem(tmp_path):
    target = tmp_path / "p=x%20y" / "f ü.bin"
    target.parent.mkdir()
    target.write_bytes(b"abc")
    loc = parse_location(str(target))
    fs = filesystem_for(loc, StorageOptions())
    assert isinstance(fs, pafs.LocalFileSystem)
    assert fs.open_input_file(loc.path).read() == b"abc"
    assert filesystem_for(loc, None) is fs


def test_s3_filesystem_constructed_without_requests():
    opts = StorageOptions.from_user(
        {"endpoint": "http://127.0.0.1:1", "key_id": "AK", "secret": "SK", "region": "r"}
    )
    fs = filesystem_for(parse_location("s3://bkt/k"), opts)
    assert isinstance(fs, pafs.S3FileSystem)
    assert filesystem_for(parse_location("s3://bkt/other"), opts) is fs  # cached
    assert filesystem_for(parse_location("s3://bkt/k"), StorageOptions()) is not fs


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"endpoint": "http://127.0.0.1:9000"},
            {"endpoint_override": "127.0.0.1:9000", "scheme": "http"},
        ),
        (
            {"endpoint_url": "https://minio.example:9000/"},
            {"endpoint_override": "minio.example:9000", "scheme": "https"},
        ),
        (
            {"endpoint": "localhost:9000"},
            {"endpoint_override": "localhost:9000", "scheme": "https"},
        ),
        (
            {"endpoint": "localhost:9000", "allow_http": "true"},
            {"endpoint_override": "localhost:9000", "scheme": "http"},
        ),
        (
            {"endpoint": "localhost:9000", "use_ssl": False},
            {"endpoint_override": "localhost:9000", "scheme": "http"},
        ),
        ({"s3_endpoint": "http://a:1", "endpoint": "http://b:2"}, {"endpoint_override": "a:1"}),
        ({"key_id": "AK", "secret": "SK"}, {"access_key": "AK", "secret_key": "SK"}),
        ({"key_id": "AK", "secret": "SK", "session_token": "T"}, {"session_token": "T"}),
        ({"region": "eu-central-1"}, {"region": "eu-central-1"}),
        ({}, {"force_virtual_addressing": False}),
        ({"url_style": "vhost"}, {"force_virtual_addressing": True}),
        ({"force_path_style": True}, {"force_virtual_addressing": False}),
        ({"anonymous": True}, {"anonymous": True}),
    ],
)
def test_s3_kwargs(options, expected, monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    kwargs = s3_kwargs(StorageOptions.from_user(options))
    assert {k: kwargs.get(k) for k in expected} == expected
    pafs.S3FileSystem(**kwargs)  # every mapping is accepted by pyarrow


def test_s3_kwargs_without_keys_use_ambient_chain(monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    kwargs = s3_kwargs(StorageOptions())
    assert "access_key" not in kwargs and "secret_key" not in kwargs
    assert kwargs["region"] == "us-east-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert s3_kwargs(StorageOptions())["region"] == "ap-south-1"
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    assert s3_kwargs(StorageOptions())["region"] == "eu-north-1"


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"key_id": "AK"}, "together"),
        ({"secret": "SK"}, "together"),
        ({"session_token": "T"}, "session_token"),
        ({"endpoint": "ftp://h:1"}, "http"),
        ({"endpoint": "http://h:1", "allow_http": False}, "allow_http"),
    ],
)
def test_s3_kwargs_errors(options, needle):
    with pytest.raises(InvalidOptionError, match=needle):
        s3_kwargs(StorageOptions.from_user(options))


def test_gcs_kwargs():
    assert gcs_kwargs(StorageOptions()) == {}
    kwargs = gcs_kwargs(
        StorageOptions.from_user(
            {
                "access_token": "ya29",
                "endpoint": "http://127.0.0.1:4443",
                "project_id": "p",
                "anonymous": False,
            }
        )
    )
    assert kwargs["access_token"] == "ya29"
    assert kwargs["credential_token_expiration"] is not None
    assert (kwargs["endpoint_override"], kwargs["scheme"]) == ("127.0.0.1:4443", "http")
    assert kwargs["project_id"] == "p" and "anonymous" not in kwargs
    assert gcs_kwargs(StorageOptions.from_user({"anonymous": "true"})) == {"anonymous": True}
    gcs = gcs_kwargs(StorageOptions.from_user({"gcs_endpoint": "h:1", "endpoint": "other:2"}))
    assert gcs["endpoint_override"] == "h:1"


def test_azure_kwargs(monkeypatch):
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    loc = parse_location("abfss://cont@acct.dfs.core.windows.net/d/f")
    assert azure_kwargs(loc, StorageOptions()) == {"account_name": "acct"}
    plain = parse_location("az://cont/d/f")
    kwargs = azure_kwargs(
        plain,
        StorageOptions.from_user(
            {
                "azure_storage_account_name": "devstoreaccount1",
                "account_key": "a2V5",
                "blob_storage_authority": "http://127.0.0.1:10000",
            }
        ),
    )
    assert kwargs == {
        "account_name": "devstoreaccount1",
        "account_key": "a2V5",
        "blob_storage_authority": "127.0.0.1:10000",
        "blob_storage_scheme": "http",
        "dfs_storage_authority": "127.0.0.1:10000",
        "dfs_storage_scheme": "http",
    }
    sovereign = azure_kwargs(
        loc,
        StorageOptions.from_user(
            {"endpoint": ".blob.core.chinacloudapi.cn", "sas_token": "sv=1&sig=2"}
        ),
    )
    assert sovereign["dfs_storage_authority"] == ".dfs.core.chinacloudapi.cn"
    assert sovereign["blob_storage_scheme"] == "https" and sovereign["sas_token"] == "sv=1&sig=2"
    sp = azure_kwargs(
        loc, StorageOptions.from_user({"client_id": "c", "tenant_id": "t", "client_secret": "s"})
    )
    assert (sp["client_id"], sp["tenant_id"], sp["client_secret"]) == ("c", "t", "s")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    assert azure_kwargs(plain, StorageOptions())["account_name"] == "fromenv"


@pytest.mark.parametrize(
    ("url", "options", "needle"),
    [
        ("az://cont/x", {}, "account_name"),
        ("abfss://c@acct.dfs.core.windows.net/x", {"account_name": "other"}, "drop one"),
        ("az://c/x", {"account_name": "a", "account_key": "k", "sas_token": "s"}, "exclude"),
        ("az://c/x", {"account_name": "a", "client_secret": "s"}, "together"),
    ],
)
def test_azure_kwargs_errors(url, options, needle, monkeypatch):
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    with pytest.raises(InvalidOptionError, match=needle):
        azure_kwargs(parse_location(url), StorageOptions.from_user(options))


def test_gcs_and_azure_filesystems_construct_offline():
    gcs = filesystem_for(
        parse_location("gs://b/k"),
        StorageOptions.from_user({"anonymous": True, "endpoint": "http://127.0.0.1:1"}),
    )
    assert isinstance(gcs, pafs.GcsFileSystem)
    azure = filesystem_for(
        parse_location("az://cont/k"),
        StorageOptions.from_user(
            {
                "account_name": "devstoreaccount1",
                "account_key": "a2V5",
                "blob_storage_authority": "http://127.0.0.1:1",
            }
        ),
    )
    assert isinstance(azure, pafs.AzureFileSystem)


def test_filesystem_for_wraps_bad_options():
    with pytest.raises(InvalidOptionError, match="together") as info:
        filesystem_for(parse_location("s3://b/k"), StorageOptions.from_user({"key_id": "AKSECRET"}))
    assert "AKSECRET" not in str(info.value)


# --------------------------------------------------------------------------- error translation

WHAT = "data file s3://bkt1/main/t/f.parquet of table main.t"


@pytest.mark.parametrize(
    ("exc", "cls", "needles"),
    [
        (
            FileNotFoundError(
                2,
                "Path does not exist 'bkt1/main/t/f.parquet'. Detail: [errno 2] "
                "No such file or directory",
            ),
            DataFileMissingError,
            ["does not exist", "data_path"],
        ),
        (
            FileNotFoundError(
                2,
                "Failed to open local file '/x/f.parquet'. Detail: [errno 2] No "
                "such file or directory",
            ),
            DataFileMissingError,
            ["data_path"],
        ),
        (
            OSError(
                "AWS Error NO_SUCH_KEY during GetObject operation: The specified key does not "
                "exist."
            ),
            DataFileMissingError,
            ["does not exist"],
        ),
        (OSError(errno.ENOENT, "gone"), DataFileMissingError, ["does not exist"]),
        (
            OSError(
                "When listing objects under key 'dir/' in bucket 'nobucket': AWS Error "
                "NO_SUCH_BUCKET during ListObjectsV2 operation: The specified bucket does not "
                "exist"
            ),
            StorageError,
            ["bucket 'nobucket' does not exist"],
        ),
        (
            OSError(
                "AWS Error NO_SUCH_BUCKET during GetObject operation: The specified bucket does "
                "not exist"
            ),
            StorageError,
            ["bucket 'bkt1' does not exist"],
        ),
        (
            OSError(
                "When reading information for key 'x' in bucket 'bkt1': AWS Error ACCESS_DENIED "
                "during HeadObject operation: No response body."
            ),
            StorageError,
            ["access denied", "check the access key / secret"],
        ),
        (
            OSError(
                "AWS Error INVALID_ACCESS_KEY_ID during ListObjectsV2 operation: The AWS Access "
                "Key Id you provided does not exist in our records."
            ),
            StorageError,
            ["access denied", "access key"],
        ),
        (
            OSError("AWS Error SIGNATURE_DOES_NOT_MATCH during GetObject"),
            StorageError,
            ["access denied"],
        ),
        (PermissionError(13, "Permission denied"), StorageError, ["access denied"]),
        (
            OSError(
                "AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7, Could "
                "not connect to server"
            ),
            StorageError,
            ["could not reach", "endpoint"],
        ),
        (OSError("curlCode: 6, Could not resolve hostname"), StorageError, ["could not reach"]),
        (OSError("AWS Error PERMANENT_REDIRECT during GetObject"), StorageError, ["region"]),
        (OSError("something odd happened"), StorageError, ["storage request failed"]),
    ],
)
def test_translate_storage_error(exc, cls, needles):
    err = translate_storage_error(exc, what=WHAT)
    assert type(err) is cls
    assert isinstance(err, DuckLakeError)
    assert WHAT in str(err)
    for needle in needles:
        assert needle in str(err)


def test_missing_file_error_is_also_file_not_found():
    err = translate_storage_error(FileNotFoundError(2, "nope"), what="data file /x")
    assert isinstance(err, FileNotFoundError)


def test_translate_passes_our_errors_through():
    ours = DataFileMissingError("already translated")
    assert translate_storage_error(ours, what=WHAT) is ours


def test_translate_hints_per_store():
    gcs = translate_storage_error(OSError("403 Forbidden"), what="data file gs://b/f.parquet")
    assert "google_service_account_token" in str(gcs)
    az = translate_storage_error(
        OSError("AuthenticationFailed"), what="data file abfss://c@a.dfs.core.windows.net/f"
    )
    assert "sas_token" in str(az)
    local = translate_storage_error(PermissionError(13, "Permission denied"), what="data file /x")
    assert "this process may read" in str(local)


def test_translate_never_leaks_secrets():
    opts = StorageOptions.from_user({"key_id": "AKIALEAKME", "secret": "SUPERSECRETVALUE"})
    exc = OSError(
        "AccessDenied for AKIALEAKME / SUPERSECRETVALUE at "
        "https://acct.blob.core.windows.net/c/f?sv=2024&sig=SASSIGNATURE&se=1 "
        "X-Amz-Signature=PRESIGNED"
    )
    text = str(translate_storage_error(exc, what=WHAT, options=opts))
    for secret in ("AKIALEAKME", "SUPERSECRETVALUE", "SASSIGNATURE", "PRESIGNED"):
        assert secret not in text
    assert "access denied" in text
