"""The name and id by which a transaction's actions and requirements name a table."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TableRef"]


@dataclass(frozen=True, slots=True)
class TableRef:
    """The table an action changes: by name, and by its id at the transaction's base
    snapshot (``None`` for the table a :class:`CreateTable` of the same transaction
    creates)."""

    schema_name: str
    table_name: str
    table_id: int | None

    @property
    def name(self) -> str:
        return f"{self.schema_name}.{self.table_name}"
