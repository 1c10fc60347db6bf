"""Parse ``ducklake_snapshot_changes.changes_made``: what one snapshot changed.

The column is a comma-separated list of ``kind:value`` tokens. "created" tokens carry
double-quoted names (``created_table:"main"."t"``, quotes doubled inside names), all
others carry ids (``inserted_into_table:1``). Commas inside quotes do not separate
tokens. The change feed uses the ids to skip snapshots that cannot have changed a table's
rows; ``ducklake_snapshots()`` shows them grouped the way DuckDB does.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ROW_CHANGE_KINDS", "ChangeToken", "parse_changes_made", "split_quoted_names"]

# Tokens after which a table's rows may differ. Compaction tokens (merge_adjacent,
# rewrite_delete, inline_flush, compacted_table) never change logical contents, and
# altered_table cannot change values once rows are read through one column set.
ROW_CHANGE_KINDS = frozenset(
    {"inserted_into_table", "deleted_from_table", "inlined_insert", "inlined_delete"}
)


@dataclass(frozen=True, slots=True)
class ChangeToken:
    """One ``kind:value`` entry; ``value`` is kept as written (ids or quoted names)."""

    kind: str
    value: str

    def table_id(self) -> int | None:
        """The id a table-level token names, or ``None`` for name tokens."""
        try:
            return int(self.value)
        except ValueError:
            return None


def _split_unquoted(text: str, separator: str) -> list[str]:
    parts, start, quoted = [], 0, False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def parse_changes_made(text: str | None) -> tuple[ChangeToken, ...]:
    """Tokens in the order written; an empty or NULL column gives no tokens."""
    if not text:
        return ()
    tokens = []
    for part in _split_unquoted(text, ","):
        kind, sep, value = part.partition(":")
        if not sep:
            continue  # not a token this reader understands; ignore rather than fail
        tokens.append(ChangeToken(kind.strip().lower(), value.strip()))
    return tuple(tokens)


def split_quoted_names(value: str) -> list[str]:
    """``"my schema"."t"`` -> ``['my schema', 't']`` (unquoted parts taken as is)."""
    names = []
    for part in _split_unquoted(value, "."):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] == '"':
            part = part[1:-1].replace('""', '"')
        names.append(part)
    return names
