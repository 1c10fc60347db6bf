"""A Spark standalone cluster of two single-core workers on two loopback hosts
(127.0.0.2 and 127.0.0.3), started from pyspark's own ``spark-class``.

Speculation needs it: Spark runs no speculation in a ``local`` master, and never starts a
task's copy on a host that runs an attempt of it, so ``local-cluster`` (one host) copies
nothing either. Two hosts on one machine let a test see a copy commit.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

HOSTS = ("127.0.0.2", "127.0.0.3")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(folder: Path) -> Iterator[str]:
    """The master's URL while a master and a worker on each of ``HOSTS`` run; their logs
    and work directories in ``folder``."""
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = str(home / "bin" / "spark-class")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_NO_DAEMONIZE": "1"}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = []
    logs = []

    def start(name: str, *args: str) -> None:
        log = (folder / f"{name}.log").open("w")
        logs.append(log)
        processes.append(
            subprocess.Popen([spark_class, *args], env=env, stdout=log, stderr=log, cwd=folder)
        )

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", "0")  # fmt: skip
        for host in HOSTS:
            work = folder / f"work-{host}"
            work.mkdir()
            start(f"worker-{host}", "org.apache.spark.deploy.worker.Worker", "--host", host,
                  "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir",
                  str(work), url)  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            registered = sum(
                "Successfully registered with master" in (folder / f"worker-{h}.log").read_text()
                for h in HOSTS
            )
            if registered == len(HOSTS):
                break
            dead = [p.args[1] for p in processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = (folder / "master.log").read_text()[-2000:]
                raise RuntimeError(f"the standalone cluster did not start ({dead}): {tail}")
            time.sleep(0.2)
        yield url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in logs:
            log.close()
