"""Read lakes with this package in another Python environment (``test_reader_compat``).

    READER_PYTHON reader_job.py SPEC.json

SPEC: ``out`` (a directory) and ``reads``: a list of ``{"name", "metadata", "sql",
"snapshot", "native"}``. Each answer (our DataFusion result) is written as the Arrow IPC
file ``<name>.arrow``, or the error it raised as ``<name>.error``, plus ``versions.json``
naming the libraries this interpreter ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    import datafusion
    import duckdb
    import pyarrow
    import pyarrow.ipc
    from datafusion import SessionContext

    from ducklake_datafusion import DuckLakeCatalog, register

    spec = json.loads(Path(path).read_text())
    out = Path(spec["out"])
    versions = {"duckdb": duckdb.__version__, "datafusion": datafusion.__version__}
    versions["pyarrow"] = pyarrow.__version__
    (out / "versions.json").write_text(json.dumps(versions))
    for read in spec["reads"]:
        try:
            ctx = SessionContext()
            kwargs = {"native": read.get("native", True)}
            if read.get("snapshot") is not None:
                kwargs["snapshot"] = read["snapshot"]
            register(ctx, "lake", DuckLakeCatalog(read["metadata"], **kwargs))
            table = ctx.sql(read["sql"]).to_arrow_table()
        except Exception as exc:  # noqa: BLE001 - the test reads the error text
            (out / f"{read['name']}.error").write_text(f"{type(exc).__name__}: {exc}")
            continue
        with pyarrow.ipc.new_file(out / f"{read['name']}.arrow", table.schema) as sink:
            sink.write_table(table)  # Arrow IPC: every type exactly (intervals too)


if __name__ == "__main__":
    main(sys.argv[1])
