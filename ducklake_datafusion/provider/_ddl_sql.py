"""``ALTER TABLE``, ``DROP TABLE``, ``CREATE SCHEMA``, ``DROP SCHEMA``, ``COMMENT ON`` of a
registered lake, from SQL text, as DuckDB spells them.

``ducklake_datafusion.sql(ctx, text)`` sends a schema change of a lake registered in the
session here (a table named ``lake.schema.table``, a schema ``lake.schema``); any other
statement goes to DataFusion. DataFusion 55's parser reads these statements but plans
none of them for a foreign catalog except ``CREATE``/``DROP SCHEMA`` and ``DROP TABLE``
(which ``DuckLakeCatalog``'s hooks make too), so the statement is read here: lexically,
its keywords found outside quotes and parentheses; a type is read by DuckDB's own
parser (``catalog.parse_type``), a default by DuckDB's as well, so every spelling DuckDB
takes is taken. What DuckDB's ``ALTER TABLE`` does that this package does not (``SET SORTED
BY``, ``USING`` expressions) is refused by name.

The result is one row: the snapshot the change committed (the latest one, when ``IF
[NOT] EXISTS`` left nothing to do).
"""

from __future__ import annotations

import re

import pyarrow as pa

from ..catalog import (
    AddColumn,
    CommitOptions,
    DropColumn,
    DropDefault,
    DropNotNull,
    RenameColumn,
    SetColumnType,
    SetDefault,
    SetNotNull,
    parse_type,
)
from ..errors import InvalidOptionError, UnsupportedFeatureError
from ..write import (
    alter_table,
    create_schema,
    drop_schema,
    drop_table,
    rename_table,
    set_comment,
    set_partitioned_by,
)
from ._sql_text import IDENT, keyword_at, split_commas, split_name, unquote

__all__ = ["is_schema_change", "run_ddl"]

_HEAD = re.compile(
    r"\s*(ALTER\s+TABLE|DROP\s+TABLE|DROP\s+SCHEMA|CREATE\s+SCHEMA)\s+"
    r"(IF\s+(NOT\s+)?EXISTS\s+)?",
    re.IGNORECASE,
)
_NAME = re.compile(rf"\s*({IDENT}(?:\s*\.\s*{IDENT})*)")
_CONSTRAINTS = {"not", "null", "primary", "unique", "check", "references", "collate"}


_COMMENT = re.compile(
    rf"\s*COMMENT\s+ON\s+(TABLE|COLUMN)\s+({IDENT}(?:\s*\.\s*{IDENT})*)\s+IS\s+"
    r"('(?:[^']|'')*'|NULL)\s*;?\s*$",
    re.IGNORECASE,
)


def is_schema_change(text: str) -> bool:
    """Whether ``text`` starts as a statement this module makes (of any catalog)."""
    return _HEAD.match(text) is not None or _COMMENT.match(text) is not None


def _comment(ctx, text: str, lakes: dict, options: CommitOptions):
    """``COMMENT ON TABLE lake.s.t`` / ``COLUMN lake.s.t.c IS '...'|NULL``, or ``None``."""
    match = _COMMENT.match(text)
    if match is None:
        return None
    parts = split_name(match.group(2))
    column = match.group(1).upper() == "COLUMN"
    wanted = 4 if column else 3
    if len(parts) != wanted or parts[0] not in lakes:
        return None
    value = match.group(3)
    comment = None if value.upper() == "NULL" else value[1:-1].replace("''", "'")
    lake = lakes[parts[0]].lake
    path = (parts[3],) if column else None
    snapshot = set_comment(lake, parts[1], parts[2], comment, column=path, options=options)
    return _result(ctx, snapshot)


def _target(lakes: dict, text: str):
    head = _HEAD.match(text)
    if head is None:
        return None
    name = _NAME.match(text, head.end())
    if name is None:
        return None
    parts = split_name(name.group(1))
    statement = " ".join(head.group(1).upper().split())
    wanted = 3 if statement.endswith("TABLE") else 2
    if len(parts) != wanted or parts[0] not in lakes:
        return None
    rest = text[name.end() :].strip().rstrip(";").strip()
    return statement, bool(head.group(2)), lakes[parts[0]], parts[1:], rest


def run_ddl(ctx, text: str, lakes: dict, **commit_options):
    """Make the schema change ``text`` names, or return ``None`` when it names no lake of
    ``lakes`` (DataFusion runs it then)."""
    if _COMMENT.match(text):
        return _comment(ctx, text, lakes, CommitOptions(**commit_options))
    target = _target(lakes, text)
    if target is None:
        return None
    statement, if_exists, catalog, name, rest = target
    lake = catalog.lake
    options = CommitOptions(**commit_options)
    words = rest.split()
    upper = [w.upper() for w in words]
    if statement == "CREATE SCHEMA":
        _no_more(rest, text)
        snapshot = create_schema(lake, name[0], if_not_exists=if_exists, options=options)
    elif statement == "DROP SCHEMA":
        cascade = upper == ["CASCADE"]
        if not cascade and upper not in ([], ["RESTRICT"]):
            raise InvalidOptionError(f"cannot read {rest!r} after the schema in {text!r}")
        snapshot = drop_schema(lake, name[0], cascade=cascade, if_exists=if_exists, options=options)
    elif statement == "DROP TABLE":
        if upper not in ([], ["CASCADE"], ["RESTRICT"]):
            raise InvalidOptionError(f"cannot read {rest!r} after the table in {text!r}")
        snapshot = drop_table(lake, name[0], name[1], if_exists=if_exists, options=options)
    else:
        if if_exists:
            try:
                lake.table(name[0], name[1])
            except Exception:  # noqa: BLE001 - any lookup failure: nothing to alter
                return _result(ctx, lake.snapshot_id())
        snapshot = _alter(lake, name, rest, text, options)
    return _result(ctx, snapshot)


def _result(ctx, snapshot: int):
    return ctx.from_arrow(pa.table({"snapshot_id": pa.array([snapshot], pa.int64())}))


def _no_more(rest: str, text: str) -> None:
    if rest:
        raise InvalidOptionError(f"cannot read {rest!r} in {text!r}")


def _alter(lake, name, rest: str, text: str, options: CommitOptions) -> int:
    schema, table = name
    match = re.match(r"RENAME\s+TO\s+(" + IDENT + r")\s*$", rest, re.IGNORECASE)
    if match:
        return rename_table(lake, schema, table, unquote(match.group(1)), options=options)
    if re.fullmatch(r"RESET\s+PARTITIONED\s+BY", rest, re.IGNORECASE):
        return set_partitioned_by(lake, schema, table, [], options=options)
    match = re.fullmatch(r"SET\s+PARTITIONED\s+BY\s*\((.*)\)", rest, re.IGNORECASE | re.DOTALL)
    if match:
        keys = [k.strip() for k in split_commas(match.group(1))]
        return set_partitioned_by(lake, schema, table, keys, options=options)
    change = _column_change(rest, text)
    return alter_table(lake, schema, table, [change], options=options)


def _column_change(rest: str, text: str):
    """The column change of an ``ALTER TABLE``'s action ``rest``."""
    match = re.match(r"(ADD|DROP|RENAME|ALTER)\b(\s+COLUMN\b)?\s*", rest, re.IGNORECASE)
    if match is None:
        raise UnsupportedFeatureError(
            f"ALTER TABLE ... {' '.join(rest.split()[:2])} is not a change this package "
            "makes (it makes ADD/DROP/RENAME/ALTER COLUMN, RENAME TO and SET/RESET "
            f"PARTITIONED BY; {text!r}); make it in DuckDB"
        )
    verb, body = match.group(1).upper(), rest[match.end() :]
    if verb == "ADD":
        guard = re.match(r"IF\s+NOT\s+EXISTS\s+", body, re.IGNORECASE)
        body = body[guard.end() :] if guard else body
        path, body = _path(body, text)
        default = None
        at = keyword_at(body, "default")
        if at is not None:
            default = body[at + len("default") :].strip()
            body = body[:at]
        type_text = body.strip()
        if {w.lower() for w in type_text.split()} & _CONSTRAINTS:
            raise UnsupportedFeatureError(
                f"a column is added without constraints (as DuckDB adds it; {text!r}); add it, "
                "then ALTER COLUMN ... SET NOT NULL"
            )
        return AddColumn(path, parse_type(type_text), default or None, guard is not None)
    if verb == "DROP":
        guard = re.match(r"IF\s+EXISTS\s+", body, re.IGNORECASE)
        body = body[guard.end() :] if guard else body
        path, body = _path(body, text)
        if body.strip().upper() not in ("", "CASCADE", "RESTRICT"):
            raise InvalidOptionError(f"cannot read {body.strip()!r} in {text!r}")
        return DropColumn(path, guard is not None)
    path, body = _path(body, text)
    if verb == "RENAME":
        renamed = re.match(r"\s*TO\s+(" + IDENT + r")\s*$", body, re.IGNORECASE)
        if renamed is None:
            raise InvalidOptionError(f"RENAME needs TO new_name in {text!r}")
        return RenameColumn(path, unquote(renamed.group(1)))
    return _alter_column(path, body.strip(), text)


def _alter_column(path, body: str, text: str):
    upper = " ".join(body.upper().split())
    typed = re.match(r"(?:SET\s+DATA\s+)?TYPE\s+", body, re.IGNORECASE)
    if typed:
        type_text = body[typed.end() :]
        if keyword_at(type_text, "using") is not None:
            raise UnsupportedFeatureError(
                f"a type is changed without USING (no expression: older files are read "
                f"widened, never rewritten; {text!r})"
            )
        return SetColumnType(path, parse_type(type_text.strip()))
    if upper.startswith("SET DEFAULT "):
        return SetDefault(path, body[body.upper().index("DEFAULT") + len("DEFAULT") :].strip())
    simple = {
        "DROP DEFAULT": DropDefault,
        "SET NOT NULL": SetNotNull,
        "DROP NOT NULL": DropNotNull,
    }.get(upper)
    if simple is None:
        raise UnsupportedFeatureError(
            f"ALTER COLUMN ... {body!r} is not a change this package makes (it makes TYPE, "
            f"SET/DROP DEFAULT, SET/DROP NOT NULL; {text!r})"
        )
    return simple(path)


def _path(body: str, text: str) -> tuple[tuple[str, ...], str]:
    match = _NAME.match(body)
    if match is None:
        raise InvalidOptionError(f"cannot find the column in {text!r}")
    return split_name(match.group(1)), body[match.end() :]
