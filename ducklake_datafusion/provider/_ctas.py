"""DataFusion's ``CREATE TABLE lake.s.t AS SELECT ...`` as a lake table.

DataFusion runs the query into an in-memory table, then hands that table to the schema
provider's ``register_table``; we write its rows as the new table's files and commit
table and rows as one snapshot (``write.create_table``). ``register_table`` is called on
DataFusion's runtime, where reading the table with DataFusion again would block the
runtime inside itself (tokio refuses: "Cannot start a runtime from within a runtime"),
so the rows are read and written on a thread of their own while this one waits.
"""

from __future__ import annotations

import threading

from ..errors import CatalogReadOnlyError, remembered_for_datafusion

__all__ = ["create_from_datafusion"]


def create_from_datafusion(catalog, schema: str, name: str, table) -> None:
    """Create ``schema.name`` in ``catalog``'s lake with the columns and rows of a
    ``datafusion.catalog.Table``."""
    from datafusion import SessionContext

    from ..write import create_table

    if catalog.lake.pinned:
        raise CatalogReadOnlyError(
            f"{catalog.description} was opened pinned to a snapshot, which is read-only; "
            f"CREATE TABLE {schema}.{name} needs a catalog opened without a pin"
        )
    outcome: dict = {}

    def run() -> None:
        try:
            with remembered_for_datafusion():  # DataFusion passes our errors on as text
                frame = SessionContext().read_table(table)
                create_table(catalog.lake, schema, name, frame)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="ducklake-create-table")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
