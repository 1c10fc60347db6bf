"""``python -m ducklake_datafusion.spark.planner``: the process the JVM catalog starts.

Standard output carries the protocol only, so anything else that would print there
(a library's warning, a stray ``print``) is sent to standard error, which the JVM
passes through to the driver's log.
"""

from __future__ import annotations

import argparse
import sys

from . import serve


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m ducklake_datafusion.spark.planner")
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=None,
        help="exit (code 0) after this long without a request; the JVM starts a new process",
    )
    args = parser.parse_args()
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, protocol_out, idle_seconds=args.idle_seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
