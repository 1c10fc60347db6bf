"""Object-store files on Spark's own reader: Hadoop URLs, per-read Hadoop settings, connectors.

Spark reads object stores through Hadoop filesystem connectors that are not part of
pyspark: ``s3a://`` needs ``hadoop-aws`` (plus the AWS SDK bundle it names), ``gs://``
Google's ``gcs-connector``, ``abfss://`` ``hadoop-azure``. Where the cluster has the
connector, the lake's storage options are handed to it as *options of the read* (Spark
copies such options into the Hadoop configuration of that scan only, on the driver and
on the executors), never written into the session's configuration:

=================================  =================================================
storage option                     Hadoop setting (S3A, scoped to the lake's bucket)
=================================  =================================================
s3_endpoint / endpoint             ``fs.s3a.bucket.B.endpoint``
region                             ``fs.s3a.bucket.B.endpoint.region``
access_key_id, secret_access_key   ``fs.s3a.bucket.B.access.key`` / ``.secret.key``
session_token                      ``.session.token`` + temporary-credentials provider
anonymous                          anonymous-credentials provider
url_style = path                   ``fs.s3a.bucket.B.path.style.access = true``
use_ssl / allow_http               ``fs.s3a.bucket.B.connection.ssl.enabled``
account_name + account_key (Azure) ``fs.azure.account.key.ACCOUNT.dfs.core.windows.net``
=================================  =================================================

Other options (GCS tokens, Azure SAS or service principals) have no mapping here: such
files, and files of a scheme whose connector the cluster lacks, are read by the Python
data source instead, and the log says so once per scheme and reason.
"""

from __future__ import annotations

import logging

from ..pathres import StorageOptions, parse_location

__all__ = ["CONNECTORS", "hadoop_options", "hadoop_url", "native_store"]

_log = logging.getLogger("ducklake_datafusion.spark")

# canonical scheme -> (Hadoop scheme, FileSystem class, what a cluster needs on its classpath)
CONNECTORS = {
    "s3": ("s3a", "org.apache.hadoop.fs.s3a.S3AFileSystem", "hadoop-aws and its AWS SDK bundle"),
    "gs": ("gs", "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem", "gcs-connector"),
    "az": ("abfss", "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem", "hadoop-azure"),
}
_S3A = "org.apache.hadoop.fs.s3a."
_said: set[str] = set()  # what the log has said already (once per process)


def hadoop_url(url: str) -> str:
    """A data file URL as Hadoop's connector for its store spells it."""
    location = parse_location(url)
    if location.scheme == "s3":
        return f"s3a://{location.path}"
    if location.scheme == "gs":
        return f"gs://{location.path}"
    if location.scheme == "az":
        key = location.path.partition("/")[2]
        return f"abfss://{location.authority}@{location.account}.dfs.core.windows.net/{key}"
    raise ValueError(f"not an object-store URL: {url}")


def hadoop_options(url: str, storage: StorageOptions) -> dict[str, str] | None:
    """The read options that give Spark's connector the lake's storage options.

    None when the options cannot be expressed for the connector (the file then takes
    the Python data source, which uses them through pyarrow).
    """
    location = parse_location(url)
    if location.scheme == "s3":
        return _s3a_options(location.authority, storage)
    if location.scheme == "az":
        if storage.sas_token or storage.client_secret or not location.account:
            return None
        if storage.account_key is None:
            return {}
        host = f"{location.account}.dfs.core.windows.net"
        return {f"fs.azure.account.key.{host}": storage.account_key}
    if location.scheme == "gs":
        custom = storage.google_service_account_token or storage.gcs_endpoint
        return None if custom or storage.anonymous else {}
    return None


def _s3a_options(bucket: str, storage: StorageOptions) -> dict[str, str]:
    prefix = f"fs.s3a.bucket.{bucket}."
    options: dict[str, str] = {}
    endpoint = storage.s3_endpoint or storage.endpoint
    if endpoint:
        options[prefix + "endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options[prefix + "connection.ssl.enabled"] = "false"
    if storage.region:
        options[prefix + "endpoint.region"] = storage.region
    if storage.use_ssl is not None:
        options[prefix + "connection.ssl.enabled"] = str(storage.use_ssl).lower()
    elif storage.allow_http:
        options.setdefault(prefix + "connection.ssl.enabled", "false")
    if storage.url_style is not None:
        options[prefix + "path.style.access"] = str(storage.url_style == "path").lower()
    elif endpoint:  # a custom endpoint (MinIO, moto) serves paths, as DuckDB assumes
        options[prefix + "path.style.access"] = "true"
    if storage.anonymous:
        options[prefix + "aws.credentials.provider"] = _S3A + "AnonymousAWSCredentialsProvider"
    elif storage.access_key_id and storage.secret_access_key:
        options[prefix + "access.key"] = storage.access_key_id
        options[prefix + "secret.key"] = storage.secret_access_key
        if storage.session_token:
            options[prefix + "session.token"] = storage.session_token
            options[prefix + "aws.credentials.provider"] = _S3A + "TemporaryAWSCredentialsProvider"
    return options


def native_store(spark, url: str, storage: StorageOptions) -> dict[str, str] | None:
    """The read options for a native read of ``url``, or None to use the Python source.

    Local files need none. Object-store files need the connector on the cluster's
    classpath (asked of the JVM) and options that map onto it; otherwise the log says
    once why they are read by the Python data source.
    """
    location = parse_location(url)
    if location.scheme == "file":
        return {}
    hadoop_scheme, _, needs = CONNECTORS[location.scheme]
    if not _has_connector(spark, hadoop_scheme):
        _say_once(
            location.scheme,
            f"Spark has no Hadoop filesystem for {hadoop_scheme}:// ({needs} on the "
            f"cluster's classpath); {location.scheme}:// data files are read by the "
            "ducklake Python data source",
        )
        return None
    options = hadoop_options(url, storage)
    if options is None:
        _say_once(
            location.scheme + "-options",
            f"the lake's storage options for {location.scheme}:// have no Hadoop "
            "equivalent here; its data files are read by the ducklake Python data source",
        )
    return options


def _has_connector(spark, hadoop_scheme: str) -> bool:
    """Whether the JVM resolves a FileSystem for the scheme (false on Spark Connect)."""
    from py4j.protocol import Py4JError

    try:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(hadoop_scheme, conf)
    except (Py4JError, AttributeError):  # UnsupportedFileSystemException; Spark Connect
        return False
    return True


def _say_once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        _log.warning(message)
