"""Local stand-ins for object stores, started on 127.0.0.1 by the test fixtures.

* fake-gcs-server (Google Cloud Storage; a Go program),
* Azurite (Azure Blob Storage; Microsoft's emulator, an npm package),
* MinIO (S3; a Go program).

``.ci/install_emulators.sh`` installs them into a cache outside the clone (``TOOLS``);
:func:`find_tool` also looks on ``PATH``. Each server runs in its own process on a free
port with its log in a temporary directory, so a failed start can be explained.

DuckDB 1.5.5 cannot write DuckLake files to the GCS and Azure emulators, so lakes on them
are built on local disk by the reference writer and their data files copied to the store
(:class:`StoreMirror`); our reader then reads them there through the ``data_path``
override, while DuckDB answers from the local copy of the same files.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AZURITE_ACCOUNT",
    "AZURITE_KEY",
    "TOOLS",
    "AzureEndpoint",
    "GcsEndpoint",
    "Server",
    "StoreMirror",
    "find_tool",
    "start_azurite",
    "start_fake_gcs",
    "start_minio",
]

TOOLS = Path(
    os.environ.get("DUCKLAKE_TEST_TOOLS") or "~/.cache/ducklake-datafusion/tools"
).expanduser()
# Azurite's well-known development account (published in Microsoft's documentation).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
_WHERE = {  # tool -> where the install script puts it, below TOOLS
    "fake-gcs-server": "bin/fake-gcs-server",
    "minio": "bin/minio",
    "azurite-blob": "azurite/node_modules/.bin/azurite-blob",
}


def find_tool(name: str) -> str | None:
    """The installed executable ``name`` (cache first, then ``PATH``), or None."""
    cached = TOOLS / _WHERE[name]
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A server process of the test session and the port it listens on."""

    name: str
    process: subprocess.Popen
    port: int
    log: Path
    workdir: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _start(name: str, argv: list[str], port: int, workdir: Path, env=None) -> Server:
    """Run ``argv`` and wait until it accepts connections on ``port`` (30 s at most)."""
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, **(env or {})},
        )
    server = Server(name, process, port, log, workdir)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.1)
    text = log.read_text(errors="replace")[-2000:]
    server.stop()
    raise RuntimeError(f"{name} did not start on 127.0.0.1:{port}: {argv}\n{text}")


# --------------------------------------------------------------------------------------------
# Stores


@dataclass(frozen=True)
class GcsEndpoint:
    """fake-gcs-server: no authentication, so our reader connects anonymously."""

    endpoint_url: str  # http://127.0.0.1:N
    project: str = "test"

    def storage_options(self) -> dict[str, Any]:
        return {"gcs_endpoint": self.endpoint_url, "anonymous": True, "allow_http": True}

    def filesystem(self):
        """A pyarrow filesystem that may also create buckets (which needs a project)."""
        from datetime import timedelta

        from pyarrow import fs

        return fs.GcsFileSystem(
            endpoint_override=self.endpoint_url.split("://", 1)[1],
            scheme="http",
            anonymous=True,
            project_id=self.project,
            retry_time_limit=timedelta(seconds=5),
        )

    def url(self, path: str) -> str:
        return f"gs://{path}"


@dataclass(frozen=True)
class AzureEndpoint:
    """Azurite with its development account; every request is signed and checked."""

    endpoint_url: str  # http://127.0.0.1:N
    account: str = AZURITE_ACCOUNT
    key: str = field(default=AZURITE_KEY, repr=False)

    def storage_options(self) -> dict[str, Any]:
        return {
            "account_name": self.account,
            "account_key": self.key,
            "blob_storage_authority": self.endpoint_url,
            "allow_http": True,
        }

    def filesystem(self):
        from pyarrow import fs

        host = self.endpoint_url.split("://", 1)[1]
        return fs.AzureFileSystem(
            account_name=self.account,
            account_key=self.key,
            blob_storage_authority=host,
            blob_storage_scheme="http",
            dfs_storage_authority=host,
            dfs_storage_scheme="http",
        )

    def url(self, path: str) -> str:
        return f"az://{path}"


class StoreMirror:
    """A local data directory copied to ``bucket/prefix/`` of a store, on demand.

    :meth:`sync` uploads files that are new or changed since the last sync and deletes
    objects whose local file is gone (expired or compacted files), so the store holds
    exactly what DuckDB reads locally. An object deleted on the store by a test stays
    deleted while its local file is unchanged.
    """

    def __init__(self, store, bucket: str, local_dir: str, name: str) -> None:
        self.store = store
        self.fs = store.filesystem()
        self.bucket = bucket
        self.local_dir = Path(local_dir)
        self.prefix = f"{bucket}/{name}-{uuid.uuid4().hex[:8]}"
        self.data_path = store.url(self.prefix) + "/"
        self._sent: dict[str, tuple[int, int]] = {}

    def sync(self) -> None:
        seen = set()
        for path in sorted(self.local_dir.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(self.local_dir).as_posix()
            seen.add(relative)
            stat = path.stat()
            signature = (stat.st_size, stat.st_mtime_ns)
            if self._sent.get(relative) == signature:
                continue
            target = f"{self.prefix}/{relative}"
            with open(path, "rb") as source, self.fs.open_output_stream(target) as out:
                shutil.copyfileobj(source, out, 1 << 20)
            self._sent[relative] = signature
        for relative in set(self._sent) - seen:
            self.fs.delete_file(f"{self.prefix}/{relative}")
            del self._sent[relative]

    def pull(self) -> None:
        """Download objects that are on the store but not in the local directory (files
        our writer wrote to the store), so that DuckDB, which reads the local copy, sees
        them too; they count as synced."""
        from pyarrow import fs

        for info in self.fs.get_file_info(fs.FileSelector(self.prefix, recursive=True)):
            # (Hadoop's connectors also leave empty directory markers: data files only)
            if info.type != fs.FileType.File or not info.path.endswith(".parquet"):
                continue
            relative = info.path[len(self.prefix) + 1 :]
            local = self.local_dir / relative
            if relative in self._sent or local.exists():
                continue
            local.parent.mkdir(parents=True, exist_ok=True)
            with self.fs.open_input_stream(info.path) as source, open(local, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            stat = local.stat()
            self._sent[relative] = (stat.st_size, stat.st_mtime_ns)

    def object(self, relative: str) -> str:
        """The pyarrow path of a data file given relative to the data directory."""
        return f"{self.prefix}/{relative}"


def _make_bucket(store, name: str) -> None:
    from pyarrow import fs

    filesystem = store.filesystem()
    if filesystem.get_file_info(name).type == fs.FileType.NotFound:
        filesystem.create_dir(name)


# --------------------------------------------------------------------------------------------
# Servers


def start_fake_gcs(workdir: Path, bucket: str) -> tuple[Server, GcsEndpoint]:
    """fake-gcs-server in memory on a free port, with ``bucket`` created."""
    binary = find_tool("fake-gcs-server")
    if binary is None:
        raise FileNotFoundError("fake-gcs-server")
    port = _free_port()
    host = f"127.0.0.1:{port}"
    argv = [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(port)]
    argv += ["-backend", "memory", "-public-host", host, "-external-url", f"http://{host}"]
    argv += ["-log-level", "error"]
    server = _start("fake-gcs-server", argv, port, workdir)
    endpoint = GcsEndpoint(f"http://{host}")
    _make_bucket(endpoint, bucket)
    return server, endpoint


def start_azurite(workdir: Path, container: str) -> tuple[Server, AzureEndpoint]:
    """Azurite's blob service on a free port (files under ``workdir``), ``container`` made."""
    binary = find_tool("azurite-blob")
    if binary is None:
        raise FileNotFoundError("azurite-blob")
    port = _free_port()
    argv = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port)]
    argv += ["--location", str(workdir / "data"), "--skipApiVersionCheck", "--loose"]
    argv += ["--silent", "--disableProductStyleUrl"]
    server = _start("azurite", argv, port, workdir)
    endpoint = AzureEndpoint(f"http://127.0.0.1:{port}")
    _make_bucket(endpoint, container)
    return server, endpoint


def start_minio(workdir: Path):
    """MinIO on a free port with a random root user; returns ``(Server, S3Endpoint)``."""
    from .lakes import S3Endpoint

    binary = find_tool("minio")
    if binary is None:
        raise FileNotFoundError("minio")
    port = _free_port()
    user, password = "dl" + uuid.uuid4().hex[:10], uuid.uuid4().hex
    env = {
        "MINIO_ROOT_USER": user,
        "MINIO_ROOT_PASSWORD": password,
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
        "MINIO_CI_CD": "1",
    }
    argv = [binary, "server", str(workdir / "data"), "--address", f"127.0.0.1:{port}", "--quiet"]
    server = _start("minio", argv, port, workdir, env)
    endpoint = S3Endpoint(f"http://127.0.0.1:{port}", user, password)
    deadline = time.monotonic() + 30
    while True:  # the port opens before the object layer is ready
        try:
            endpoint.client().list_buckets()
            break
        except Exception:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.2)
    return server, endpoint
