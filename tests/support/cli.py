"""The command-line tool run as a subprocess, as a user runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    executable = shutil.which("ducklake-datafusion", path=os.path.dirname(sys.executable))
    command = [executable] if executable else [sys.executable, "-m", "ducklake_datafusion"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )
