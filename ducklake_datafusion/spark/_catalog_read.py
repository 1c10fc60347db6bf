"""``read_table`` over the catalog's scan: filters on the DataFrame prune files too.

``read_table``'s own native path (``parquet``) hands Spark a fixed list of files, so a
``.where(...)`` on the returned DataFrame reaches only Spark's Parquet reader: every file
is still listed and opened. The package's catalog (``DuckLakeCatalog`` in the jar) plans
its scan when Spark has pushed the query's filters (``DuckLakeScanBuilder``), so the files
whose catalog statistics cannot match are left out before any is opened. When the jar is
on the session's classpath, ``read_table`` therefore returns ``spark.table`` of a catalog
configured at runtime for this lake: Spark loads catalogs lazily, by name, from
``spark.sql.catalog.<name>.*``, also on a Spark Connect server.

* **One catalog per set of options.** The name is private and deterministic within this
  process (``ducklake_read_`` + a keyed hash of the options; the key is random per process,
  so the name reveals nothing of a secret): the same lake read again reuses the loaded
  catalog and its planner process, another data path or credential gets its own.
* **Secrets.** Spark hides a setting in ``SET``, the UI and the event log when its name or
  value matches ``spark.redaction.regex`` (default ``secret|password|token|access[.]?key``,
  case-insensitive). Measured on pyspark 4.3: ``access_key_id`` and ``account_key`` are
  shown in clear under their own names. So every secret storage option (and a PostgreSQL or
  MySQL ``metadata``, which may hold a password) is set as ``secret.<option>``, which the catalog
  reads as ``<option>``; if the session's regex does not hide that name, the catalog is not
  used and the table is read the earlier way (``parquet``), which sends secrets to no
  setting. ``spark.conf.get`` still returns them to this session, as any setting.
* **Planner processes.** Each runtime catalog has its planner process, which exits after
  ``PLANNER_IDLE_SECONDS`` unused and is started again on demand.
* **One snapshot per DataFrame.** ``snapshot`` / ``@v<n>`` read ``VERSION AS OF``,
  ``snapshot_time`` ``TIMESTAMP AS OF`` (the last snapshot at or before it, in UTC when the
  time has no offset); otherwise the latest snapshot is looked up once here
  (``SHOW TBLPROPERTIES``) and named by id, so later actions read the same table state
  (a Spark Connect server analyses the plan again for every action).
* **Errors.** A read the catalog cannot build (the jar missing on a Connect server, a
  server whose Python lacks the package, a bad name...) falls back to the earlier way,
  which reads it or raises our typed error for it; the reason is logged.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import hmac
import json
import logging
import os
import re
import sys

from ..common import scrub
from ..pathres import SECRET_FIELDS
from ._core import SourceOptions, is_connect
from .parquet import has_reader

__all__ = ["CATALOG_CLASS", "catalog_frame", "catalog_settings", "runtime_catalog"]

_log = logging.getLogger(__name__)

CATALOG_CLASS = "io.ducklake_datafusion.spark.DuckLakeCatalog"
SECRET_PREFIX = "secret."
# Spark's default spark.redaction.regex (core/.../internal/config/package.scala).
DEFAULT_REDACTION = "(?i)secret|password|token|access[.]?key"
# A runtime catalog's planner process (a Python interpreter holding the lake's metadata)
# exits after this long unused (the catalog's default is 300 s): a session reading many
# lakes keeps few of them alive. The next scan starts one again; a DataFrame queried again
# with the same filters reuses the JVM's cached plan and needs none.
PLANNER_IDLE_SECONDS = 60
# A PostgreSQL or MySQL catalog (DuckDB's spelling, with or without ``ducklake:``, or a URL).
_SERVER_CATALOG = re.compile(r"(?i)\s*(ducklake:)?(postgres|mysql)")
_NAME_KEY = os.urandom(16)  # keys the catalog names: stable in this process, opaque outside


def catalog_settings(parsed: SourceOptions, python: str | None) -> tuple[str, dict[str, str]]:
    """``(catalog name, {option: value})`` of the catalog that reads ``parsed``'s lake.

    The options are the catalog's (``spark.sql.catalog.<name>.<option>``): the catalog
    database, data path and metadata schema, the storage options by canonical name
    (secrets as ``secret.<name>``), and the planner's interpreter when one is given.
    """
    options: dict[str, str] = {}
    metadata_key = "metadata"
    if _SERVER_CATALOG.match(parsed.metadata):  # its DSN or URL may hold a password
        metadata_key = SECRET_PREFIX + metadata_key
    options[metadata_key] = parsed.metadata
    if parsed.data_path:
        options["data_path"] = parsed.data_path
    if parsed.metadata_schema:
        options["metadata_schema"] = parsed.metadata_schema
    for name in sorted(f.name for f in dataclasses.fields(parsed.storage)):
        value = getattr(parsed.storage, name)
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        options[(SECRET_PREFIX + name) if name in SECRET_FIELDS else name] = text
    if python:
        options["python"] = python
    options["planner_idle_seconds"] = str(PLANNER_IDLE_SECONDS)
    canonical = json.dumps(options, sort_keys=True).encode()
    digest = hmac.new(_NAME_KEY, canonical, hashlib.sha256).hexdigest()[:16]
    return f"ducklake_read_{digest}", options


def catalog_frame(spark, parsed: SourceOptions):
    """``parsed``'s table at one snapshot as a DataFrame over the catalog's scan, or
    ``None`` (logged why) when the catalog cannot read it here."""
    if not _has_catalog(spark):
        return None
    python = None if is_connect(spark) else sys.executable  # Connect: the server's choice
    name, options = catalog_settings(parsed, python)
    hidden = _unredacted(spark, name, options)
    if hidden:
        _log.info(
            "read_table of %s: this session's spark.redaction.regex would show option(s) %s "
            "of a runtime catalog in SET and the UI, so the table is read without the catalog "
            "(filters on the DataFrame then prune no files; pass where= to prune)",
            parsed.table_label,
            ", ".join(hidden),
        )
        return None
    ident = f"{_quoted(name)}.{_quoted(parsed.schema_name)}.{_quoted(parsed.table_name)}"
    configured = False
    try:
        configured = _configure(spark, name, options)
        frame = spark.sql(f"SELECT * FROM {ident} {_as_of(spark, ident, parsed)}")
        frame.columns  # noqa: B018 -- analysed now: a failure falls back here, not later
    except Exception as exc:  # noqa: BLE001 -- the earlier path reads it or raises ours
        if configured:  # e.g. no jar on a Connect server: leave no settings behind
            _unset(spark, name, options)
        _log.info(
            "read_table of %s: the DuckLake catalog could not read it (%s: %s); reading it "
            "without the catalog",
            parsed.table_label,
            type(exc).__name__,
            scrub(str(exc)).splitlines()[0][:300] if str(exc) else "",
        )
        return None
    return frame


def runtime_identifier(
    spark,
    caller: str,
    metadata: str,
    table: str,
    *,
    data_path: str | None,
    metadata_schema: str | None,
    storage_options,
    suffix: tuple[str, ...] = (),
) -> str:
    """The quoted Spark identifier of ``schema.table`` (``table``: ``main``) in this
    session's catalog of the lake, configured now if need be (``runtime_catalog``);
    ``suffix`` names a table beneath it (``changes``)."""
    from ..pathres import StorageOptions

    schema_name, _, table_name = table.rpartition(".")
    parsed = SourceOptions(
        metadata=metadata,
        schema_name=schema_name or "main",
        table_name=table_name,
        data_path=data_path,
        metadata_schema=metadata_schema,
        storage=StorageOptions.from_user(storage_options),
    )
    catalog = runtime_catalog(spark, parsed, caller)
    names = (catalog, parsed.schema_name, parsed.table_name, *suffix)
    return ".".join(_quoted(n) for n in names)


def runtime_catalog(spark, parsed: SourceOptions, caller: str) -> str:
    """The name of this session's catalog of ``parsed``'s lake, configured now if need be
    (``write_table``'s and ``read_stream``'s way in: they have no other path, so a problem
    is raised, not logged)."""
    from ..errors import InvalidOptionError, MissingDependencyError

    if not _has_catalog(spark):
        raise MissingDependencyError(
            f"{caller} needs the package's Spark jar on the session's classpath "
            "(spark.jars = ducklake_datafusion.spark.spark_jar(), or the Maven package)"
        )
    python = None if is_connect(spark) else sys.executable
    name, options = catalog_settings(parsed, python)
    hidden = _unredacted(spark, name, options)
    if hidden:
        raise InvalidOptionError(
            f"{caller} of {parsed.table_label}: this session's spark.redaction.regex would show "
            f"option(s) {', '.join(hidden)} in SET and the UI; configure a DuckLake catalog "
            "(spark.sql.catalog.<name>.secret.<option>) and use it instead"
        )
    _configure(spark, name, options)
    return name


def _has_catalog(spark) -> bool:
    """Whether this session can load the jar's catalog. The catalog ships in the jar of
    the deleted-rows format, whose check (``parquet.has_reader``, cached per session, logged)
    tells whether the jar is on the classpath; a Connect client cannot see the server's
    classpath: it tries, and falls back on failure."""
    return is_connect(spark) or has_reader(spark)


def _unredacted(spark, name: str, options: dict[str, str]) -> list[str]:
    """The secret options the session's redaction would not hide in ``SET`` or the UI."""
    secret = [key for key in options if key.startswith(SECRET_PREFIX)]
    if not secret:
        return []
    pattern = spark.conf.get("spark.redaction.regex", None) or DEFAULT_REDACTION
    try:
        regex = re.compile(pattern)
    except re.error:  # a Java-only construct: not checkable here, so not trusted
        return secret
    # Spark hides a setting whose name or value matches (Utils.redact).
    return [
        key
        for key in secret
        if not (regex.search(f"spark.sql.catalog.{name}.{key}") or regex.search(options[key]))
    ]


def _configure(spark, name: str, options: dict[str, str]) -> bool:
    """Set the catalog's settings, unless this session has them (same name: same
    options); whether it set them.

    ``spark.conf.set``, not ``SET`` statements: a statement's text (with its values) would
    show in the SQL tab of the UI.
    """
    prefix = f"spark.sql.catalog.{name}"
    if spark.conf.get(prefix, None) == CATALOG_CLASS:
        return False
    for key, value in options.items():
        spark.conf.set(f"{prefix}.{key}", value)
    spark.conf.set(prefix, CATALOG_CLASS)  # last: the catalog loads complete
    return True


def _unset(spark, name: str, options: dict[str, str]) -> None:
    """Remove the settings :func:`_configure` set (best effort: the read goes on anyway)."""
    prefix = f"spark.sql.catalog.{name}"
    for key in (prefix, *(f"{prefix}.{key}" for key in options)):
        try:
            spark.conf.unset(key)
        except Exception:  # noqa: BLE001,S110 -- a setting left behind is redacted anyway
            pass


def _as_of(spark, ident: str, parsed: SourceOptions) -> str:
    """The time-travel clause pinning the snapshot this DataFrame reads."""
    if parsed.snapshot is not None:
        return f"VERSION AS OF {int(parsed.snapshot)}"
    if parsed.snapshot_time is not None:
        when = parsed.snapshot_time
        if when.tzinfo is None:  # read_table's rule: no offset means UTC
            when = when.replace(tzinfo=_dt.timezone.utc)
        text = when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        return f"TIMESTAMP AS OF '{text}+00:00'"
    rows = spark.sql(f"SHOW TBLPROPERTIES {ident} ('ducklake.snapshot')").collect()
    return f"VERSION AS OF {int(rows[0][1])}"


def _quoted(part: str) -> str:
    """A Spark SQL identifier part in backticks (backticks doubled)."""
    return "`" + part.replace("`", "``") + "`"
