"""``python -m ducklake_datafusion.spark.planner``: the process the JVM catalog starts.

Standard output carries the protocol only, so anything else that would print there
(a library's warning, a stray ``print``) is sent to standard error, which the JVM
passes through to the driver's log.
"""

from __future__ import annotations

import sys

from . import serve


def main() -> int:
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, protocol_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
