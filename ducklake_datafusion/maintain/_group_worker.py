"""A merge's groups written in another process: a Spark task's, on an executor.

``CALL lake.system.merge_adjacent_files(..., on_executors => true)`` (and
``call_procedure(..., on_executors=True)`` on every release): the catalog's planner plans the
merge on the driver as the single-node one does (DuckDB's groups, each a
:class:`~ducklake_datafusion.maintain.RunWrite` that needs no catalog) and hands the groups
to the jar (``spark/planner/_maintain.py``); each task of a Spark job starts this module
(``python -m ducklake_datafusion.maintain._group_worker``) and writes its groups
(``write_task``: the sources read in order by field id, each row's id and snapshot
kept); the planner then commits every group's file as one snapshot, exactly the single-node
merge's (``gather_written``). Executors need the package (as the ``ducklake`` data
source's do) and reach the lake's storage with the catalog's storage options (in each
group); they never open the catalog.

The stream between the jar's task and this module: on standard input, each group as an
8-byte big-endian length and its pickle, until the input ends; on standard output, each
group's outcome the same way, in order.
"""

from __future__ import annotations

import pickle
import struct
import sys

from ._remote_writes import write_task

_LENGTH = struct.Struct(">q")


def _serve(source, sink) -> None:
    while header := source.read(_LENGTH.size):
        (length,) = _LENGTH.unpack(header)
        work = pickle.loads(source.read(length))  # (the driver planner's own pickle)
        outcome = pickle.dumps(write_task(work))
        sink.write(_LENGTH.pack(len(outcome)))
        sink.write(outcome)
        sink.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
