"""Object-store files on Spark's own reader: Hadoop URLs, per-read Hadoop settings, connectors.

Spark reads object stores through Hadoop filesystem connectors that are not part of
pyspark: ``s3a://`` needs ``hadoop-aws`` (plus the AWS SDK bundle it names), ``gs://``
Google's ``gcs-connector``, ``abfss://`` ``hadoop-azure``. Where the cluster has the
connector, the lake's storage options are handed to it as *options of the read* (Spark
copies such options into the Hadoop configuration of that scan only, on the driver and
on the executors), never written into the session's configuration. They are spelled
from the store's access value (``pathres.storage_access``, which settled every default,
endpoint and credential the same way for pyarrow and the Rust scan):

=================================  =================================================
access value                       Hadoop setting
=================================  =================================================
**S3A** (``S3Access``), scoped to the lake's bucket B (``fs.s3a.bucket.B.``)
endpoint                           ``fs.s3a.bucket.B.endpoint`` (``scheme://host``)
region (when configured)           ``fs.s3a.bucket.B.endpoint.region``
scheme                             ``fs.s3a.bucket.B.connection.ssl.enabled``
addressing (when decided)          ``fs.s3a.bucket.B.path.style.access``
keys                               ``fs.s3a.bucket.B.access.key`` / ``.secret.key``
session_token                      ``.session.token`` + temporary-credentials provider
anonymous                          anonymous-credentials provider
**ABFS** (``AzureAccess``), scoped to the account host H = ``ACCOUNT.dfs.core.windows.net``
account_key                        ``fs.azure.account.key.H``
a path-style endpoint              ``fs.azure.abfs.endpoint.H`` (``host:port``, the account
(an emulator's ``host:port``)      in the path, as Azurite serves it), the account as
                                   one without hierarchical namespace reached on its Blob
                                   endpoint (``fs.azure.account.hns.enabled.H = false``,
                                   ``fs.azure.fns.account.service.type.H = BLOB``); plain
                                   http: ``abfs://`` URLs, ``fs.azure.always.use.https =
                                   false`` (a global key) and the JDK's HTTP client
**GCS** (``GcsAccess``; the connector has no per-bucket settings: these hold for the read)
endpoint                           ``fs.gs.storage.root.url``
anonymous                          ``fs.gs.auth.type = UNAUTHENTICATED``
project_id                         ``fs.gs.project.id``
=================================  =================================================

Hadoop 3.5's ``core-default.xml`` names Apache's own GCS connector (``hadoop-gcp``) for
``gs://`` and gives some ``fs.gs.*`` sizes with unit suffixes (``64m``) that Google's
``gcs-connector`` cannot parse: where Google's connector is the one on the classpath, the
read names it (``fs.gs.impl``) and passes those sizes as plain numbers.

Other credentials and endpoints (GCS tokens, Azure SAS or service principals, an Azure
endpoint without a port or naming the account in its host), and options the access value
refuses, have no mapping here: such files, and files of a scheme whose connector the
cluster lacks, are read by the Python data source instead, and the log says so once per
scheme and reason. Secrets go into the read's options only, never into a log or message.
"""

from __future__ import annotations

import logging
import re

from ...errors import InvalidOptionError
from ...pathres import (
    AzureAccess,
    GcsAccess,
    S3Access,
    StorageOptions,
    parse_location,
    storage_access,
)

__all__ = [
    "CONNECTORS",
    "abfs_mode_problem",
    "hadoop_options",
    "hadoop_url",
    "parse_hadoop_version",
    "store_read_options",
]

_log = logging.getLogger("ducklake_datafusion.spark")
# ABFS over a Blob endpoint (accounts without hierarchical namespace; Azurite has no dfs
# endpoint): Hadoop 3.4.2+ (verified live on 3.4.2 and 3.5.0; 3.3.4 asks Azurite's Blob
# endpoint for a dfs listing and gets 400 Bad Request).
_BLOB_SERVICE = "fs.azure.fns.account.service.type."
_ABFS_BLOB_HADOOP = (3, 4, 2)

# canonical scheme -> (Hadoop scheme, FileSystem class, what a cluster needs on its classpath)
CONNECTORS = {
    "s3": ("s3a", "org.apache.hadoop.fs.s3a.S3AFileSystem", "hadoop-aws and its AWS SDK bundle"),
    "gs": ("gs", "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem", "gcs-connector"),
    "az": ("abfss", "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem", "hadoop-azure"),
}
_S3A = "org.apache.hadoop.fs.s3a."
_GOOGLE_GCS = CONNECTORS["gs"][1]
# fs.gs.* sizes Hadoop 3.5's core-default.xml spells with a unit (64m), which Google's
# connector reads with Configuration.getLong
_GCS_SIZES = (
    "fs.gs.block.size",
    "fs.gs.rewrite.max.chunk.size",
    "fs.gs.outputstream.buffer.size",
    "fs.gs.inputstream.inplace.seek.limit",
    "fs.gs.inputstream.min.range.request.size",
)
_said: set[str] = set()  # what the log has said already (once per process)


def hadoop_url(url: str, storage: StorageOptions | None = None) -> str:
    """A data file URL as Hadoop's connector for its store spells it.

    Azure files are ``abfss://container@ACCOUNT.dfs.core.windows.net/key``, or ``abfs://``
    when the storage options name a plain-http endpoint (an emulator).

    Raises:
        InvalidOptionError: an Azure file whose account the options do not settle.
    """
    location = parse_location(url)
    if location.scheme == "s3":
        return f"s3a://{location.path}"
    if location.scheme == "gs":
        return f"gs://{location.path}"
    if location.scheme == "az":
        access = storage_access(location, storage)
        key = location.path.partition("/")[2]
        http = access.endpoint is not None and access.endpoint.http
        scheme = "abfs" if http else "abfss"
        return f"{scheme}://{location.authority}@{access.account}.dfs.core.windows.net/{key}"
    raise ValueError(f"not an object-store URL: {url}")


def hadoop_options(url: str, storage: StorageOptions) -> dict[str, str] | None:
    """The read options that give Spark's connector the lake's storage options.

    None when the options cannot be expressed for the connector (the file then takes
    the Python data source, which uses them through pyarrow).
    """
    try:
        access = storage_access(parse_location(url), storage)
    except InvalidOptionError:  # the data source raises it, naming the option
        return None
    if isinstance(access, S3Access):
        return _s3a_options(access)
    if isinstance(access, AzureAccess):
        return _abfs_options(access)
    if isinstance(access, GcsAccess):
        return _gcs_options(access)
    return None


def _s3a_options(access: S3Access) -> dict[str, str]:
    prefix = f"fs.s3a.bucket.{access.bucket}."
    options: dict[str, str] = {}
    if access.endpoint is not None:
        options[prefix + "endpoint"] = access.endpoint.url
    options[prefix + "connection.ssl.enabled"] = str(access.scheme == "https").lower()
    if access.region is not None:
        options[prefix + "endpoint.region"] = access.region
    if access.addressing is not None:
        options[prefix + "path.style.access"] = str(access.addressing == "path").lower()
    if access.credential == "anonymous":
        options[prefix + "aws.credentials.provider"] = _S3A + "AnonymousAWSCredentialsProvider"
    elif access.credential == "keys":
        options[prefix + "access.key"] = access.access_key_id
        options[prefix + "secret.key"] = access.secret_access_key
        if access.session_token:
            options[prefix + "session.token"] = access.session_token
            options[prefix + "aws.credentials.provider"] = _S3A + "TemporaryAWSCredentialsProvider"
    return options


def _abfs_options(access: AzureAccess) -> dict[str, str] | None:
    if access.credential in ("sas_token", "service_principal"):
        return None
    host = f"{access.account}.dfs.core.windows.net"
    options: dict[str, str] = {}
    endpoint = access.endpoint
    if endpoint is not None:
        # ABFS takes host:port only, the account in the path (as an emulator serves it)
        if not access.path_style or ":" not in endpoint.host:
            return None
        options[f"fs.azure.abfs.endpoint.{host}"] = endpoint.host
        # a Blob endpoint (Azurite has no dfs one): an account without hierarchical
        # namespace, which ABFS reaches through the Blob API
        options[f"fs.azure.account.hns.enabled.{host}"] = "false"
        options[f"{_BLOB_SERVICE}{host}"] = "BLOB"
        if endpoint.http:
            options["fs.azure.always.use.https"] = "false"  # read without the account
            options[f"fs.azure.networking.library.{host}"] = "JDK_HTTP_URL_CONNECTION"
    if access.credential == "account_key":
        options[f"fs.azure.account.key.{host}"] = access.account_key
    return options


def _gcs_options(access: GcsAccess) -> dict[str, str] | None:
    if access.credential == "token":
        return None  # a bare token has no setting: the connector wants a provider class
    options: dict[str, str] = {}
    if access.endpoint is not None:
        options["fs.gs.storage.root.url"] = f"{access.endpoint.url}/"
    if access.credential == "anonymous":
        options["fs.gs.auth.type"] = "UNAUTHENTICATED"
    if access.project_id:
        options["fs.gs.project.id"] = access.project_id
    return options


def store_read_options(spark, url: str, storage: StorageOptions) -> dict[str, str] | None:
    """The read options for Spark's reader of ``url``, or None to use the Python source.

    Local files need none. Object-store files need the connector on the cluster's
    classpath (asked of the JVM) and options that map onto it; otherwise the log says
    once why they are read by the Python data source.
    """
    location = parse_location(url)
    if location.scheme == "file":
        return {}
    hadoop_scheme, _, needs = CONNECTORS[location.scheme]
    connector = _connector_options(spark, location.scheme)
    if connector is None:
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
        return None
    if _blob_mode(options):  # only then is the JVM asked its Hadoop version
        problem = abfs_mode_problem(options, _hadoop_version(spark))
        if problem is not None:
            _say_once(
                "az-blob", f"{problem}; its data files are read by the ducklake Python data source"
            )
            return None
    return {**connector, **options}


def abfs_mode_problem(options: dict[str, str], version: tuple[int, ...]) -> str | None:
    """Why Hadoop ``version``'s ABFS cannot read with ``options``, or None.

    ``options`` from :func:`hadoop_options`: a Blob endpoint (an emulator's, an account
    without hierarchical namespace) needs ABFS's Blob mode, Hadoop 3.4.2+ (3.3.4 asks
    Azurite's Blob endpoint for the dfs API and fails). ``(0,)``: the version is unknown.
    """
    if not _blob_mode(options) or version >= _ABFS_BLOB_HADOOP:
        return None
    return (
        f"Hadoop {'.'.join(map(str, version))}'s ABFS reaches only dfs endpoints, and the "
        "lake's Azure endpoint is a Blob one (an emulator's)"
    )


def _blob_mode(options: dict[str, str]) -> bool:
    """Whether ``options`` reach an account through ABFS's Blob mode."""
    return any(key.startswith(_BLOB_SERVICE) for key in options)


def parse_hadoop_version(text: str) -> tuple[int, ...]:
    """``"3.3.4"`` -> ``(3, 3, 4)``; ``(0,)`` when ``text`` has no number."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3]) or (0,)


def _hadoop_version(spark) -> tuple[int, ...]:
    """The JVM's Hadoop version, ``(0,)`` when it cannot be asked (Spark Connect)."""
    from py4j.protocol import Py4JError

    try:
        text = spark._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    except (Py4JError, AttributeError):
        return (0,)
    return parse_hadoop_version(text)


def _connector_options(spark, scheme: str) -> dict[str, str] | None:
    """The read options the scheme's connector needs, or None when the JVM has none."""
    hadoop_scheme = CONNECTORS[scheme][0]
    if scheme != "gs":
        return {} if _has_connector(spark, hadoop_scheme) else None
    found = _filesystem_class(spark, hadoop_scheme)
    if found is not None and found != _GOOGLE_GCS:
        return {}  # Apache's hadoop-gcp (Hadoop's default), or the cluster's choice
    if found is None and not _loadable(spark, _GOOGLE_GCS):
        return None
    options = {} if found else {"fs.gs.impl": _GOOGLE_GCS}
    conf = spark._jsc.hadoopConfiguration()
    for key in _GCS_SIZES:
        value = conf.get(key)
        if value is not None and not value.strip().isdigit():
            options[key] = str(conf.getLongBytes(key, 0))
    return options


def _has_connector(spark, hadoop_scheme: str) -> bool:
    """Whether the JVM resolves a FileSystem for the scheme (false on Spark Connect)."""
    return _filesystem_class(spark, hadoop_scheme) is not None


def _filesystem_class(spark, hadoop_scheme: str) -> str | None:
    """The FileSystem class the JVM resolves for the scheme (None: none, Spark Connect)."""
    from py4j.protocol import Py4JError

    try:
        jvm = spark._jvm
        conf = spark._jsc.hadoopConfiguration()
        found = jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(hadoop_scheme, conf)
        return found.getName()
    except (Py4JError, AttributeError):  # UnsupportedFileSystemException; Spark Connect
        return None


def _loadable(spark, class_name: str) -> bool:
    """Whether the class is on the classpath of the session's Hadoop configuration."""
    from py4j.protocol import Py4JError

    try:
        return spark._jsc.hadoopConfiguration().getClassByNameOrNull(class_name) is not None
    except (Py4JError, AttributeError):
        return False


def _say_once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        _log.warning(message)
