"""Build DuckLake lakes with the reference writer, and compare our answers with DuckDB's.

Every read test builds its lake with DuckDB + the ``ducklake`` extension (the reference
writer) and checks our reader against DuckDB's answer for the same lake state (the oracle),
over the matrix catalog back-end (DuckDB file, SQLite, PostgreSQL) x storage (local, S3 on
moto or MinIO, GCS on fake-gcs-server, Azure on Azurite: ``tests/support/emulators.py``).

DuckDB-file catalogs and locking, as measured with duckdb 1.5.5 in ONE process:

* While a connection has the lake attached read-write, ``duckdb.connect(catalog,
  read_only=True)`` fails with ``Binder Error: Unique file handle conflict: Cannot attach
  "cat" - the database file ... is already attached by database "__ducklake_metadata_lake"``
  (DuckDB tracks open database files process-wide). A second ``ATTACH 'ducklake:...'`` of the
  same file fails the same way, even with ``READ_ONLY``. From another process the error is
  instead "Could not set lock on file".
* Read-only handles coexist: ``duckdb.connect(catalog, read_only=True)`` and an
  ``ATTACH ... (READ_ONLY)`` of the same file work together.
* The converse also holds: while *our reader* keeps its read-only handle open, the writer
  cannot attach read-write (same "Unique file handle conflict"). The reader closes idle
  handles after a short delay, so :meth:`Lake.sql` retries the attach for a few seconds.
* After ``DETACH`` the file is free again at once.

Hence the writer attaches on demand (:meth:`Lake.sql`) and detaches before anything else
reads (:meth:`Lake.reader_args`, :meth:`Lake.reference`, :meth:`Lake.detach`). SQLite and
PostgreSQL catalogs have no such restriction, but the lake detaches for them too so that a
test behaves the same on every back-end.

Other writer facts worth knowing: the extensions are loaded from PyPI wheels with
``duckdb_extensions.import_extension(name, con=con)``, names ``ducklake``, ``httpfs``,
``sqlite_scanner`` and ``postgres_scanner`` (``sqlite``/``postgres`` do not work);
``DATA_INLINING_ROW_LIMIT`` is an attach option that only lasts for that attachment, so it
is passed on every attach; a different ``DATA_PATH`` on re-attach is an error.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import math
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import duckdb
import duckdb_extensions
import pyarrow as pa

from .lake_formats import format_under_test, migrated_copy
from .mysql_lakes import CopyRefused, MySQLServer, copy_catalog, create_catalog

__all__ = [
    "ALL_SPECS",
    "Lake",
    "LakeSpec",
    "MySQLServer",
    "PgServer",
    "S3Endpoint",
    "assert_same_rows",
    "assert_same_types",
    "deleting_history",
    "evolve_structs",
    "evolve_table",
    "make_lake",
    "merged_inserts",
    "one_deleted_one_clean",
    "start_moto",
]

Catalog = Literal["duckdb", "sqlite", "postgres", "mysql"]
Storage = Literal["local", "s3", "minio", "gcs", "azure"]
# Lakes on these are written locally and their files copied to the store (StoreMirror).
MIRRORED = ("gcs", "azure")

# The reference answers time travel wrongly after rewrites with these optimizers on.
ORACLE_SETTINGS = "SET disabled_optimizers = 'compressed_materialization,statistics_propagation'"
# How long Lake.sql() waits for a reader in this process to release a DuckDB catalog file.
ATTACH_RETRY_SECONDS = 5.0


@dataclass(frozen=True)
class LakeSpec:
    """One cell of the test matrix."""

    catalog: Catalog
    storage: Storage

    @property
    def id(self) -> str:
        return f"{self.catalog}-{self.storage}"

    @property
    def on_s3(self) -> bool:
        """Data files on an S3 endpoint (moto, or MinIO)."""
        return self.storage in ("s3", "minio")


# Every catalog database and every store, each at least once: the catalog's code does not
# depend on where the files are (the data path is text in every catalog), nor the stores'
# code on the catalog, so the full cross product ran the same code twice (until 2026-12-02
# it was ten cells: every catalog on local disk and on moto; sqlite-local, postgres-local,
# duckdb-s3 and sqlite-s3 went, each catalog and store still being read in a cell below).
ALL_SPECS = (
    LakeSpec("duckdb", "local"),
    LakeSpec("postgres", "s3"),
    LakeSpec("sqlite", "minio"),
    LakeSpec("duckdb", "gcs"),
    LakeSpec("sqlite", "azure"),
    # MySQL/MariaDB: built through a DuckDB-file writer and a copy (``mysql_lakes``)
    LakeSpec("mysql", "local"),
)


# --------------------------------------------------------------------------------------------
# Servers


@dataclass(frozen=True)
class S3Endpoint:
    """A live S3 endpoint (moto or MinIO) and how each client spells its address."""

    endpoint_url: str  # http://host:port  (boto3, object_store)
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    @property
    def host_port(self) -> str:  # host:port  (DuckDB secret ENDPOINT, pyarrow endpoint_override)
        return self.endpoint_url.split("://", 1)[1].rstrip("/")

    @property
    def use_ssl(self) -> bool:
        return self.endpoint_url.startswith("https://")

    @property
    def scheme(self) -> str:
        return "https" if self.use_ssl else "http"

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )

    def make_bucket(self, name: str) -> str:
        """Create ``name`` unless it exists already (a reused MinIO); return it."""
        client = self.client()
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        return name

    def storage_options(self) -> dict[str, Any]:
        """The object-store options our reader takes."""
        return {
            "endpoint": self.endpoint_url,
            "access_key_id": self.access_key,
            "secret_access_key": self.secret_key,
            "region": self.region,
            "allow_http": not self.use_ssl,
        }

    def pyarrow_fs(self):
        from pyarrow import fs

        return fs.S3FileSystem(
            endpoint_override=self.host_port,
            scheme=self.scheme,
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=self.region,
        )

    def duckdb_secret_sql(self) -> str:
        return (
            f"CREATE OR REPLACE SECRET lake_s3 (TYPE s3, KEY_ID {_lit(self.access_key)}, "
            f"SECRET {_lit(self.secret_key)}, ENDPOINT {_lit(self.host_port)}, "
            f"URL_STYLE 'path', USE_SSL {str(self.use_ssl).lower()}, REGION {_lit(self.region)})"
        )


def start_moto():
    """Start moto's S3 server on a free loopback port; returns ``(server, S3Endpoint)``."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, S3Endpoint(f"http://{host}:{port}", "testing", "testing")


@dataclass(frozen=True)
class PgServer:
    """A reachable PostgreSQL server; each lake gets a database of its own."""

    conninfo: str  # libpq keyword string of a database to connect to for CREATE DATABASE

    def _admin(self):
        import psycopg

        return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)

    def create_database(self) -> str:
        """Create a fresh ``dl_<random>`` database; return its libpq keyword string."""
        from psycopg.conninfo import make_conninfo

        name = f"dl_{uuid.uuid4().hex[:12]}"
        with self._admin() as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return make_conninfo(self.conninfo, dbname=name)

    def drop_database(self, conninfo: str) -> None:
        from psycopg.conninfo import conninfo_to_dict

        name = conninfo_to_dict(conninfo)["dbname"]
        with self._admin() as con:  # FORCE: a reader may still hold a pooled connection
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --------------------------------------------------------------------------------------------
# Lakes


def _lit(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _connect(*extensions: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name in extensions:
        duckdb_extensions.import_extension(name, con=con)
    return con


class Lake:
    """A DuckLake built by the reference writer; see the module docstring for the lifecycle.

    Attributes:
        spec: the matrix cell.
        metadata: the catalog connection string our reader takes (``/x/cat.ducklake``,
            ``sqlite:/x/cat.sqlite`` or ``postgres:host=... dbname=dl_...``).
        data_path: where the parquet files go (a directory, or ``s3://bucket/prefix/``).
        storage_options: object-store options for S3, GCS or Azure, else None.
        mirror: for GCS and Azure, the store copy of ``data_path`` (a local directory)
            that our reader reads (``reader_args`` syncs it and passes its URL as the
            ``data_path`` override); else None.
    """

    def __init__(
        self,
        spec: LakeSpec,
        metadata: str,
        data_path: str,
        *,
        s3: S3Endpoint | None = None,
        inline_limit: int | None = None,
        metadata_schema: str | None = None,
        encrypted: bool = False,
        on_close=None,
        mirror=None,
        writer_metadata: str | None = None,
    ) -> None:
        self.spec = spec
        # MySQL cells: the DuckDB file the writer writes, copied to MySQL (``mysql_lakes``)
        self.writer_metadata = writer_metadata
        self._copied = True
        self._copy_digests: dict = {}  # what the last copy copied (``mysql_lakes``)
        self.metadata_schema = metadata_schema
        self.encrypted = encrypted
        self.metadata = metadata
        self.data_path = data_path
        self.storage_options = s3.storage_options() if s3 else None
        self.mirror = mirror
        if mirror is not None:
            self.storage_options = mirror.store.storage_options()
        self.inline_limit = inline_limit
        self._s3 = s3
        self._on_close = on_close
        self._con: duckdb.DuckDBPyConnection | None = None
        self._attached: str | None = None  # None, "writer" or "oracle"
        self._v11: tuple | None = None  # (catalog signature, migrated copy's reader args)

    def __repr__(self) -> str:
        return f"<Lake {self.spec.id} {self.metadata}>"

    @property
    def s3(self) -> S3Endpoint | None:
        """The S3 endpoint (moto or MinIO) the lake's files are on, else None."""
        return self._s3

    def _connection(self) -> duckdb.DuckDBPyConnection:
        # One connection serves as writer and oracle: loading the extensions into a new
        # DuckDB instance costs ~0.2 s, re-attaching ~0.03 s.
        if self._con is None:
            extensions = ["ducklake"]
            extensions += {
                "sqlite": ["sqlite_scanner"],
                "postgres": ["postgres_scanner"],
                "mysql": ["mysql_scanner"],
            }.get(self.spec.catalog, [])
            if self._s3:
                extensions.append("httpfs")
            self._con = _connect(*extensions)
            if self._s3:
                self._con.execute(self._s3.duckdb_secret_sql())
        return self._con

    def _attach(self, role: str, options: list[str]) -> duckdb.DuckDBPyConnection:
        con = self._connection()
        if self._attached == role:
            return con
        self.detach()
        if self.metadata_schema is not None:
            options = [*options, f"METADATA_SCHEMA {_lit(self.metadata_schema)}"]
        metadata = self.metadata
        if role == "writer" and self.writer_metadata is not None:
            metadata = self.writer_metadata
            self._copied = False
        sql = f"ATTACH {_lit('ducklake:' + metadata)} AS lake ({', '.join(options)})"
        deadline = time.monotonic() + ATTACH_RETRY_SECONDS
        while True:
            try:
                con.execute(sql)
                break
            except duckdb.Error as exc:
                busy = "Unique file handle conflict" in str(exc)
                if not busy:
                    raise
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{self}: the catalog file is still open elsewhere in this process "
                        "(our reader?); close that handle first"
                    ) from exc
                time.sleep(0.05)
        self._attached = role
        return con

    # -- writer ------------------------------------------------------------------------------

    def attach(self) -> duckdb.DuckDBPyConnection:
        """Attach the writer as ``lake`` (no-op if attached); return its connection."""
        options = [f"DATA_PATH {_lit(self.data_path)}"]
        if self.encrypted:
            options.append("ENCRYPTED")
        if self.inline_limit is not None:
            options.append(f"DATA_INLINING_ROW_LIMIT {int(self.inline_limit)}")
        return self._attach("writer", options)

    def sql(self, text: str, params: list | None = None):
        """Run writer SQL (attaching on demand), e.g. ``CREATE TABLE lake.main.t (a INT)``.

        Returns DuckDB's result: a lazy relation for a query (fetch it before the next
        ``detach``), None for statements; with ``params``, the connection after ``execute``.
        """
        con = self.attach()
        return con.sql(text) if params is None else con.execute(text, params)

    def detach(self) -> None:
        """Detach ``lake`` so that another handle can open a DuckDB catalog file (and, for
        a MySQL cell, copy what the writer wrote into MySQL)."""
        if self._attached:
            self._con.execute("DETACH lake")
            self._attached = None
        if not self._copied:
            self._copied = True
            self._copy_to_mysql()

    def _copy_to_mysql(self) -> None:
        """The writer's DuckDB-file catalog copied into the MySQL catalog, or the test
        skipped with the reason MySQL cannot hold it."""
        import pytest

        try:
            copy_catalog(
                self._con,
                self.writer_metadata,
                self.metadata.removeprefix("mysql:"),
                self._copy_digests,
            )
        except CopyRefused as exc:
            pytest.skip(f"{self.spec.id}: {exc}")

    def reader_args(self, format: str | None = None) -> dict[str, Any]:
        """Detach the writer and return the keyword arguments our reader takes.

        ``format``: ``"1.1"`` reads a copy migrated to DuckLake 1.1 (``lake_formats``);
        default: ``DUCKLAKE_TEST_FORMAT`` (``1.0``, the writer's own catalog).
        """
        self.detach()
        if self.spec.catalog == "mysql" and (format or format_under_test()) == "1.1":
            import pytest

            pytest.skip("DuckLake 1.1 copies are made of DuckDB, SQLite and PostgreSQL catalogs")
        args = {"metadata": self.metadata, "storage_options": self.storage_options}
        if self.mirror is not None:
            self.mirror.sync()
            args["data_path"] = self.mirror.data_path
        if self.metadata_schema is not None:
            args["metadata_schema"] = self.metadata_schema
        if (format or format_under_test()) == "1.1":  # a migrated copy (lake_formats)
            metadata, schema = self._migrated()
            args["metadata"] = metadata
            if schema is not None:
                args["metadata_schema"] = schema
        return args

    def _migrated(self) -> tuple[str, str | None]:
        """The 1.1 copy of the catalog, made again when the catalog changed since, into
        the same file (a reader sees the writer's commits on the copy as on the original)."""
        signature = self._catalog_signature()
        if self._v11 is None or self._v11[0] != signature:
            copy = migrated_copy(self.metadata, self.metadata_schema, in_place=True)
            self._v11 = (signature, copy)
        return self._v11[1]

    def _catalog_signature(self) -> tuple:
        if self.metadata.startswith("postgres:"):  # every commit adds a snapshot
            import psycopg

            schema = self.metadata_schema or "public"
            with psycopg.connect(self.metadata.removeprefix("postgres:")) as con:
                return tuple(
                    con.execute(
                        "SELECT max(snapshot_id), count(*), CAST(max(snapshot_time) AS TEXT) "
                        f'FROM "{schema}".ducklake_snapshot'
                    ).fetchone()
                )
        path = self.metadata.removeprefix("sqlite:")
        return tuple(
            (os.stat(p).st_size, os.stat(p).st_mtime_ns) if os.path.exists(p) else None
            for p in (path, path + ".wal")
        )

    # -- oracle ------------------------------------------------------------------------------

    def reference(self, sql: str, snapshot: int | None = None, params: list | None = None):
        """DuckDB's answer to ``sql`` (which names ``lake.main.t`` etc.) as a pyarrow Table.

        The lake is attached READ_ONLY and queried with the optimizer workaround. A DuckDB
        file catalog is detached again (a DuckDB file has one process writing it, and one
        instance opening it in this process); another stays attached until the writer or
        another snapshot needs the connection: DuckLake reads the catalog's latest snapshot
        at each query, and the first query after an attach loads the catalog (~15 ms of
        ~20, ten thousand times a suite). With ``snapshot`` the whole lake is attached as of
        that snapshot (``SNAPSHOT_VERSION``): the same as writing ``AT (VERSION =>
        snapshot)`` after every table name, which tests may also do themselves. On a mirrored lake (GCS, Azure)
        DuckDB reads the local copy, so file paths it returns are mapped to the store's.
        """
        return self.references([sql], snapshot, params)[0]

    def references(
        self, sqls: list[str], snapshot: int | None = None, params: list | None = None
    ) -> list[pa.Table]:
        """DuckDB's answers to each of ``sqls`` (as :meth:`reference`'s), under one attachment
        of the lake: a DuckDB file catalog is attached (and its catalog loaded) once, not
        once a query."""
        options = ["READ_ONLY"]
        if snapshot is not None:
            options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        con = self._attach("oracle" if snapshot is None else f"oracle@{snapshot}", options)
        try:
            con.execute(ORACLE_SETTINGS)
            tables = []
            for sql in sqls:
                table = con.execute(sql, params or []).to_arrow_table()
                if self.mirror is not None:
                    table = _map_paths(table, self.data_path, self.mirror.data_path)
                tables.append(table)
            return tables
        finally:
            con.execute("RESET disabled_optimizers")
            if self.spec.catalog == "duckdb" or self.writer_metadata is not None:
                self.detach()

    def snapshot_id(self) -> int:
        """The latest snapshot id."""
        table = self.reference("SELECT max(snapshot_id) AS s FROM lake.snapshots()")
        return table.column(0)[0].as_py()

    # -- cleanup -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection and drop server-side state (the PostgreSQL database)."""
        self._copied = True  # nothing more to copy to a catalog about to be dropped
        if self._con is not None:
            self._con.close()
            self._con = None
        self._attached = None
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


def _map_paths(table: pa.Table, local: str, remote: str) -> pa.Table:
    """String columns' values under the local data directory, moved under ``remote``."""
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            under = pc.starts_with(column, local)
            moved = pc.binary_join_element_wise(
                remote, pc.utf8_slice_codeunits(column, len(local)), ""
            )
            column = pc.if_else(under, moved, column)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


_counter = itertools.count()


def make_lake(
    spec: LakeSpec,
    tmp_path: Path,
    *,
    pg: PgServer | None = None,
    mysql: MySQLServer | None = None,
    s3: S3Endpoint | None = None,
    inline_limit: int | None = None,
    name: str | None = None,
    bucket: str = "ducklake-tests",
    metadata_schema: str | None = None,
    encrypted: bool = False,
    store=None,
) -> Lake:
    """Create a fresh, empty lake for ``spec`` (tables are made with ``lake.sql``).

    ``name`` picks the sub-directory of ``tmp_path`` (default ``lake<n>``); the PostgreSQL
    database and the S3 prefix are always unique, so lakes never see each other's files.
    ``store`` (an ``emulators`` GCS or Azure endpoint) is needed for those storages.
    """
    name = name or f"lake{next(_counter)}"
    root = Path(tmp_path) / name
    root.mkdir(parents=True, exist_ok=False)
    cleanups = []

    mirror = None
    if spec.storage in ("local", *MIRRORED):
        data_path = str(root / "data") + "/"
        os.makedirs(data_path)
        if spec.storage in MIRRORED:
            from .emulators import StoreMirror

            if store is None:
                raise ValueError(f"{spec.id} needs its store (store=...)")
            mirror = StoreMirror(store, bucket, data_path, name)
    else:
        if s3 is None:
            raise ValueError(f"{spec.id} needs an S3 endpoint (s3=...)")
        if spec.storage == "minio" and bucket == "ducklake-tests":
            # moto and MinIO are two endpoints of one bucket name otherwise, and a Spark
            # application keeps one S3A client per bucket (Hadoop's FileSystem cache): a
            # later lake on the other endpoint would be read from the first one.
            bucket = "ducklake-tests-minio"
        s3.make_bucket(bucket)
        data_path = f"s3://{bucket}/{name}-{uuid.uuid4().hex[:8]}/"

    if spec.catalog == "duckdb":
        metadata = str(root / "cat.ducklake")
    elif spec.catalog == "sqlite":
        metadata = "sqlite:" + str(root / "cat.sqlite")
    elif spec.catalog == "postgres":
        if pg is None:
            raise ValueError(f"{spec.id} needs a PostgreSQL server (pg=...)")
        conninfo = pg.create_database()
        metadata = "postgres:" + conninfo
        cleanups.append(lambda: pg.drop_database(conninfo))
    elif spec.catalog == "mysql":
        if mysql is None:
            raise ValueError(f"{spec.id} needs a MySQL server (mysql=...)")
        if metadata_schema is not None:
            import pytest

            pytest.skip("a MySQL schema is a database: METADATA_SCHEMA has no MySQL cell")
        my_conninfo = mysql.create_database()
        metadata = "mysql:" + my_conninfo
        cleanups.append(lambda: mysql.drop_database(my_conninfo))
    else:
        raise ValueError(f"unknown catalog {spec.catalog!r}")

    def on_close() -> None:
        for cleanup in cleanups:
            cleanup()

    lake = Lake(
        spec,
        metadata,
        data_path,
        s3=s3,
        inline_limit=inline_limit,
        metadata_schema=metadata_schema,
        encrypted=encrypted,
        on_close=on_close,
        mirror=mirror,
        writer_metadata=str(root / "writer.ducklake") if spec.catalog == "mysql" else None,
    )
    if spec.catalog == "mysql":
        create_catalog(lake._connection(), metadata.removeprefix("mysql:"), data_path)
    lake.attach()  # creates the catalog now, so even an empty lake can be read
    return lake


# --------------------------------------------------------------------------------------------
# Comparing results


class _NaN:
    """NaN that equals itself, so rows containing NaN compare and hash sensibly."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0x7FF8

    def __repr__(self) -> str:
        return "nan"


NAN = _NaN()


def evolve_structs(lake: Lake) -> None:
    """``lake.main.t (id, s STRUCT(a, n STRUCT(m)))`` with rows in a file and inlined
    (``inline_limit`` 5: the second insert), then the fields ``s.b`` (default 7) and
    ``s.n.k`` (default 'kk') added, and a row written with them."""
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s STRUCT(a INTEGER, n STRUCT(m INTEGER)))")
    lake.sql("INSERT INTO lake.main.t SELECT i, {'a': i, 'n': {'m': i}} FROM range(20) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (100, {'a': 1, 'n': {'m': 1}}), (101, NULL)")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN s.b INTEGER DEFAULT 7")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN s.n.k VARCHAR DEFAULT 'kk'")
    lake.sql("INSERT INTO lake.main.t VALUES (200, {'a': 2, 'n': {'m': 2, 'k': 'x'}, 'b': 3})")


def evolve_table(lake: Lake, *, deletes: bool = False) -> None:
    """``lake.main.t`` with files of three layouts: a column renamed, columns added with
    defaults of several types, an integer, a float and a decimal widened, a column dropped
    and one of the same name added again (a new field id, which old files must not fill).
    With ``deletes``, rows are deleted from files of the old layouts too."""
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, w INTEGER, f FLOAT, m DECIMAL(9,2), note VARCHAR)"
    )
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'a' || i, i, i / 4, i / 8, 'old' FROM range(1000) r(i)"
    )
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN v INTEGER DEFAULT 7")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN d DATE DEFAULT '2024-02-29'")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO name")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN w TYPE BIGINT")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'b' || i, i, i / 4, i / 8, NULL, i % 5, NULL FROM range(1000, 2000) r(i)"
    )
    if deletes:
        lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 0 AND k < 1500")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN f TYPE DOUBLE")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN m TYPE DECIMAL(18,3)")
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN note")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN note VARCHAR DEFAULT 'new'")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, 'c' || i, -i, i / 3, i / 9, i % 3, DATE '2024-01-01', 'n' || i FROM range(2000, 3000) r(i)"
    )
    if deletes:
        lake.sql("DELETE FROM lake.main.t WHERE k % 11 = 0")


def deleting_history(lake: Lake) -> None:
    """``lake.main.t (k, g, s)``: deletes across snapshots: cumulative delete files at mask
    block edges, a second delete file, a whole block, an update, an inlined delete, and
    an inlined row."""
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR)")
    for part in range(3):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, (i % 7)::INTEGER, 's' || i "
            f"FROM range({part * 1000}, {(part + 1) * 1000}) r(i)"
        )
    # Block edges: positions 0, 63, 64, 127 of the first file (bit 63 makes a negative mask).
    lake.sql("DELETE FROM lake.main.t WHERE k IN (0, 63, 64, 127, 999)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 10 = 3 AND k < 2000")  # a second delete file
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 1500 AND 1563")  # one whole block
    lake.sql("UPDATE lake.main.t SET s = 'updated' WHERE k = 2500")
    lake.sql("DELETE FROM lake.main.t WHERE k = 2222")  # few rows: inlined delete
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 1, 'inlined')")


def row_grouped_deletes(lake: Lake) -> None:
    """``lake.main.t (k, s)``: two files of ten row groups of 1,000 rows each, deletes in
    every row group of one and in a few of the other: its first and last rows, the two rows
    either side of Spark's default batch bound (4,096 rows), and one whole row group (the
    lake needs ``inline_limit=0``)."""
    lake.sql("CALL lake.set_option('parquet_row_group_size', '1000')")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(10000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i FROM range(10000, 20000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 7 = 3 AND k < 10000")
    lake.sql("DELETE FROM lake.main.t WHERE k IN (10000, 14095, 14096, 19999)")
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 17000 AND 17999")


def one_deleted_one_clean(lake: Lake) -> None:
    """``lake.main.t (id, s)``: two data files of 1,000 rows, the first with a delete file
    (ids 0-9), the second clean (the lake needs ``inline_limit=0``)."""
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'x' || i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 10")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'y' || i FROM range(1000, 2000) r(i)")


def merged_inserts(lake: Lake) -> None:
    """``lake.main.t (k, s)`` from four INSERTs of 1,000 rows merged into one file, which
    holds each row's snapshot id."""
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    for start in range(0, 4000, 1000):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 's' || i FROM range({start}, {start + 1000}) r(i)"
        )
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")


def _freeze(value: Any) -> Any:
    """Hashable, NaN-aware form of a ``to_pylist`` value."""
    if isinstance(value, float) and math.isnan(value):
        return NAN
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return tuple(_freeze(v) for v in value)
    return value


def _sort_key(value: Any) -> tuple:
    """A total order over frozen values of any kind (None first, then by kind)."""
    if value is None:
        return (0,)
    if value is NAN:
        return (3,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float, Decimal)):
        return (2, value)
    if isinstance(value, str):
        return (4, value)
    if isinstance(value, (bytes, bytearray)):
        return (5, bytes(value))
    if isinstance(value, dt.datetime):
        aware = value.tzinfo is not None
        return (6, aware, value.astimezone(dt.timezone.utc) if aware else value)
    if isinstance(value, dt.date):
        return (7, value)
    if isinstance(value, dt.timedelta):
        return (9, value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return (10, len(value), tuple(_sort_key(v) for v in value))
    return (99, type(value).__name__, repr(value))  # time, uuid, intervals, ...


def _kind(t: pa.DataType) -> str:
    """The type up to width and encoding: int32 ~ int64, string ~ large_string ~ view."""
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_fixed_size_binary(t):
        return "fixed_binary"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_duration(t):
        return "duration"
    if pa.types.is_map(t):
        return f"map<{_kind(t.key_type)},{_kind(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"list<{_kind(t.value_type)}>"
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return f"list<{_kind(t.value_type)}>"
    if pa.types.is_struct(t):
        fields = ",".join(f"{f.name}:{_kind(f.type)}" for f in t)
        return f"struct<{fields}>"
    if isinstance(t, pa.ExtensionType):
        return _kind(t.storage_type)
    return str(t)


def assert_same_types(actual: pa.Schema, expected: pa.Schema, *, exact: bool = False) -> None:
    """Same column names, and per column the same type kind (or the same type if ``exact``)."""
    assert actual.names == expected.names, f"columns differ: {actual.names} != {expected.names}"
    bad = []
    for fa, fe in zip(actual, expected):
        same = fa.type == fe.type if exact else _kind(fa.type) == _kind(fe.type)
        if not same:
            bad.append(f"  {fa.name}: actual {fa.type}, expected {fe.type}")
    assert not bad, "column types differ:\n" + "\n".join(bad)


def _sortable(type_: pa.DataType) -> bool:
    return not (pa.types.is_nested(type_) or pa.types.is_dictionary(type_))


def _equal_in_arrow(actual: pa.Table, expected: pa.Table, ordered: bool) -> bool:
    """Whether the two tables are equal by Arrow's own comparison (column by column,
    after sorting both alike unless ``ordered``): a fast pass for large tables. Arrow's
    equality is the stricter one (NaN is not NaN there, types must be identical), so a
    ``False`` only sends the tables to the row-by-row comparison."""
    if actual.column_names != expected.column_names or actual.num_rows != expected.num_rows:
        return False
    if any(a.type != e.type for a, e in zip(actual.schema, expected.schema)):
        return False
    try:
        if not ordered:
            keys = [(f.name, "ascending") for f in actual.schema if _sortable(f.type)]
            if not keys or len(set(actual.column_names)) != len(actual.column_names):
                return False
            actual, expected = actual.sort_by(keys), expected.sort_by(keys)
        return all(a.equals(e) for a, e in zip(actual.columns, expected.columns))
    except pa.ArrowException:  # a type Arrow cannot sort or compare
        return False


def assert_same_rows(
    actual: pa.Table | pa.RecordBatch,
    expected: pa.Table | pa.RecordBatch,
    *,
    ordered: bool = False,
    show: int = 10,
) -> None:
    """Assert equal column names, type kinds and rows (as a multiset unless ``ordered``).

    Values are compared as Python objects from ``to_pylist``: floats exactly, except that NaN
    equals NaN. On failure the message lists the first ``show`` rows that differ.
    """
    if isinstance(actual, pa.RecordBatch):
        actual = pa.Table.from_batches([actual])
    if isinstance(expected, pa.RecordBatch):
        expected = pa.Table.from_batches([expected])
    assert_same_types(actual.schema, expected.schema)
    if _equal_in_arrow(actual, expected, ordered):
        return

    def rows(table: pa.Table) -> list[tuple]:
        columns = [_freeze(c.to_pylist()) for c in table.columns]
        return list(zip(*columns)) if columns else [()] * table.num_rows

    got, want = rows(actual), rows(expected)
    if not ordered:
        got.sort(key=_sort_key)
        want.sort(key=_sort_key)
    if got == want:
        return

    lines = [
        (
            f"rows differ ({'ordered' if ordered else 'as multisets'}): actual {len(got)} rows, "
            f"expected {len(want)} rows; columns {actual.column_names}"
        )
    ]
    if ordered:
        first = next(i for i, (g, w) in enumerate(itertools.zip_longest(got, want)) if g != w)
        lines.append(f"first difference at row {first}:")
        for i in range(first, min(first + show, max(len(got), len(want)))):
            g = got[i] if i < len(got) else "<missing>"
            w = want[i] if i < len(want) else "<missing>"
            lines.append(f"  [{i}] actual   {g!r}\n  [{i}] expected {w!r}")
    else:
        extra = Counter(got) - Counter(want)
        missing = Counter(want) - Counter(got)
        for title, diff in (("only in actual", extra), ("only in expected", missing)):
            items = sorted(diff.elements(), key=_sort_key)
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  {row!r}" for row in items[:show]]
            if len(items) > show:
                lines.append(f"  ... {len(items) - show} more")
    raise AssertionError("\n".join(lines))


def masked_natively(plan: str, deletes_by: str) -> bool:
    """Whether a Spark plan's text drops deleted rows the ``deletes_by`` way (the fixture):
    inside Spark's reader (the package's jar) or by the mask join."""
    if deletes_by == "join":
        return "BroadcastHashJoin" in plan
    return "parquet-deleted-rows" in plan and "BroadcastHashJoin" not in plan
