"""Spark's maintenance procedures (``CALL lake.system.merge_adjacent_files(...)``), run here.

``maintain`` ``{operation, arguments, author?, commit_message?, commit_extra_info?}`` ->
``{rows}``: the engine-neutral operation of ``maintain`` (DuckDB's function of the same
name) on the catalog's lake, its result as DuckDB's function returns it, one JSON array per
row in the columns the jar's procedure declares (``Procedures.java``). The jar has bound
Spark's arguments by name and type already; ``older_than`` arrives as microseconds since
the epoch (Spark's ``timestamp``), ``table`` as ``"schema.table"`` or ``"table"``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from ...catalog import CommitOptions
from ...errors import InvalidOptionError
from ...maintain import (
    OPERATIONS,
    split_table_argument,
)
from ...scan import Lake
from ._write import commit_options

__all__ = ["maintain_response"]


def maintain_response(lake: Lake, request: Mapping) -> dict:
    name = str(request["operation"])
    operation = OPERATIONS.get(name)
    if operation is None:
        raise InvalidOptionError(
            f"no maintenance procedure {name!r}; there are {', '.join(sorted(OPERATIONS))}"
        )
    arguments = {k: v for k, v in dict(request["arguments"]).items() if v is not None}
    if "older_than" in arguments:
        arguments["older_than"] = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(
            microseconds=int(arguments["older_than"])
        )
    options = commit_options(request)
    if operation.takes_table:
        schema, table = split_table_argument(
            arguments.pop("table", None), arguments.pop("schema", None)
        )
        arguments.update(table=table, schema=schema)
    if operation.writes_snapshot:
        arguments["options"] = options
    elif options != CommitOptions():
        raise InvalidOptionError(
            f"{name} writes no snapshot: the commit options (author, commit_message, "
            "commit_extra_info) do not apply"
        )
    result = operation.function(lake, **arguments)
    return {"rows": operation.rows(result)}
