"""Types and defaults of schema changes: DuckDB's type names, its widenings, its defaults.

A user names a type as DuckDB does (``INTEGER``, ``DECIMAL(9,2)``, ``STRUCT(a INT, b
VARCHAR[])``): :func:`parse_type` asks an in-memory DuckDB for the type's canonical
spelling (so every alias DuckDB knows works, and nothing else) and reads it into a
:class:`ColumnType` of DuckLake names. :func:`check_widening` says whether a column may
change type: DuckDB allows any change whose "max logical type" is the target; this
package makes those its readers read exactly (integers to wider integers and to
decimals and doubles that hold every value, ``float`` to ``double``, decimals to wider
decimals) and refuses the rest by name. :func:`evaluate_default` turns a default's SQL
text into the two texts DuckDB stores (``initial_default``: the value cast to the
column's type; ``default_value``: the value as written, or the expression).

The in-memory DuckDB holds no data and never sees a catalog: it parses and casts text.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass

from ..errors import InvalidOptionError, UnsupportedFeatureError, UnsupportedTypeError
from ._ddl_actions import ColumnType

__all__ = [
    "DefaultText",
    "check_widening",
    "constant_default",
    "duckdb_type_name",
    "evaluate_default",
    "parse_type",
]

_LOCK = threading.Lock()
_CONNECTION = None

# DuckDB's canonical type names -> DuckLake's
_NAMES = {
    "BOOLEAN": "boolean",
    "TINYINT": "int8",
    "SMALLINT": "int16",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "HUGEINT": "int128",
    "UTINYINT": "uint8",
    "USMALLINT": "uint16",
    "UINTEGER": "uint32",
    "UBIGINT": "uint64",
    "UHUGEINT": "uint128",
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "VARCHAR": "varchar",
    "BLOB": "blob",
    "DATE": "date",
    "TIME": "time",
    "TIME WITH TIME ZONE": "timetz",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "TIMESTAMP_S": "timestamp_s",
    "TIMESTAMP_MS": "timestamp_ms",
    "TIMESTAMP_NS": "timestamp_ns",
    "INTERVAL": "interval",
    "UUID": "uuid",
    "JSON": "json",
}
_DUCKDB = {v: k for k, v in _NAMES.items()}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")

_SIGNED = ("int8", "int16", "int32", "int64", "int128")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64", "uint128")
# decimal digits every value of an integer type needs
_DIGITS = {"int8": 3, "int16": 5, "int32": 10, "int64": 19, "uint8": 3, "uint16": 5}
_DIGITS |= {"uint32": 10, "uint64": 20}
# integers every value of which a double (53 bits) or a float (24 bits) holds exactly
_IN_DOUBLE = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
_IN_FLOAT = {"int8", "int16", "uint8", "uint16"}


def _connection():
    global _CONNECTION
    if _CONNECTION is None:
        import duckdb

        _CONNECTION = duckdb.connect()
    return _CONNECTION


def _query(sql: str, params=None):
    with _LOCK:
        return _connection().execute(sql, params or []).fetchall()


def parse_type(text: str) -> ColumnType:
    """A DuckDB type name as a :class:`ColumnType`.

    Raises:
        UnsupportedTypeError: a type DuckDB does not know, or one DuckLake does not store
            (``ARRAY``, ``UNION``, ``ENUM``, ...), named.
    """
    if not isinstance(text, str) or not text.strip():
        raise UnsupportedTypeError(f"{text!r} is not a DuckDB type name")
    import duckdb

    # parsed, never run as given: only a cast of NULL to the type is run, as DuckDB
    # writes it back from its own parse
    (serialized,) = _query("SELECT json_serialize_sql(?)", [f"SELECT CAST(NULL AS {text})"])[0]
    tree = json.loads(serialized)
    node = None if tree.get("error") else tree["statements"][0]["node"]
    if (
        node is None
        or len(tree["statements"]) != 1
        or len(node.get("select_list", ())) != 1
        or node.get("from_table", {}).get("type") != "EMPTY"
        or node["select_list"][0].get("class") != "CAST"
        or node["select_list"][0].get("child", {}).get("class") != "CONSTANT"
    ):
        raise UnsupportedTypeError(f"{text!r} is not a DuckDB type name")
    (cast,) = _query("SELECT json_deserialize_sql(?)", [serialized])[0]
    try:
        (canonical,) = _query(f"SELECT typeof({cast.removeprefix('SELECT ')})")[0]
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        raise UnsupportedTypeError(f"{text!r} is not a DuckDB type DuckLake stores ({first})")
    kind, rest = _read(canonical, 0, text)
    if rest != len(canonical):
        raise UnsupportedTypeError(f"cannot read the type {canonical!r} (from {text!r})")
    return kind


def _read(s: str, at: int, original: str) -> tuple[ColumnType, int]:
    """The type starting at ``s[at]`` and where it ends (DuckDB's canonical spelling)."""
    head = re.compile(r"\s*(TIMESTAMP WITH TIME ZONE|TIME WITH TIME ZONE|[A-Z_0-9]+)").match(s, at)
    if head is None:
        raise UnsupportedTypeError(f"cannot read the type {s!r} (from {original!r})")
    word, at = head.group(1), head.end()
    if word == "DECIMAL":
        match = re.compile(r"\((\d+),\s*(\d+)\)").match(s, at)
        kind, at = ColumnType(f"decimal({match.group(1)},{match.group(2)})"), match.end()
    elif word in ("STRUCT", "MAP"):
        at += 1  # "("
        fields = []
        while True:
            name = None
            if word == "STRUCT":
                quoted = re.compile(r'\s*("(?:[^"]|"")*"|[^\s"]+)\s').match(s, at)
                name, at = quoted.group(1), quoted.end()
                if name.startswith('"'):
                    name = name[1:-1].replace('""', '"')
            child, at = _read(s, at, original)
            fields.append((name or ("key" if not fields else "value"), child))
            if s[at] == ")":
                at += 1
                break
            at += 1  # ","
            while s[at] == " ":
                at += 1
        kind = ColumnType(word.lower(), tuple(fields))
    elif word in _NAMES:
        kind = ColumnType(_NAMES[word])
    else:
        raise UnsupportedTypeError(
            f"type {word} (in {original!r}) is not one DuckLake stores; choose another"
        )
    while s.startswith("[]", at):
        kind, at = ColumnType("list", (("element", kind),)), at + 2
    if at < len(s) and s[at] == "[":
        raise UnsupportedTypeError(
            f"fixed-size ARRAY types ({original!r}) are not stored by DuckLake; use a list ([])"
        )
    return kind, at


def duckdb_type_name(kind: ColumnType) -> str:
    """The DuckDB spelling of a type (to cast a default to it, to name it in messages).

    Raises:
        UnsupportedTypeError: a name that is not a DuckLake type (so nothing else is ever
            spelled into SQL).
    """
    if kind.name in _DUCKDB and not kind.fields:
        return _DUCKDB[kind.name]
    if _DECIMAL.match(kind.name):
        return kind.name.upper()
    if kind.name == "struct":
        fields = ", ".join(
            '"' + n.replace('"', '""') + '" ' + duckdb_type_name(t) for n, t in kind.fields
        )
        return f"STRUCT({fields})"
    if kind.name == "list" and len(kind.fields) == 1:
        return duckdb_type_name(kind.fields[0][1]) + "[]"
    if kind.name == "map" and len(kind.fields) == 2:
        return f"MAP({duckdb_type_name(kind.fields[0][1])}, {duckdb_type_name(kind.fields[1][1])})"
    raise UnsupportedTypeError(
        f"{kind.name!r} is not a DuckLake type this package writes (int32, varchar, "
        "decimal(p,s), struct, list, map, ...)"
    )


def check_widening(source: str, target: str, what: str) -> None:
    """Nothing when a column of DuckLake type ``source`` may become ``target``.

    Raises:
        UnsupportedFeatureError: a narrowing or other change DuckDB refuses ("only
            widening type promotions"), or a widening DuckDB makes that this package
            does not (its readers would not read older files exactly), each named.
    """
    source, target = source.lower(), target.lower()
    if source == target:
        return
    if _widens(source, target):
        return
    if _duckdb_allows(source, target):
        raise UnsupportedFeatureError(
            f"{what}: changing type {_show(source)} to {_show(target)} is a change DuckDB "
            "makes but this package does not (older files would not read exactly); make "
            "it in DuckDB, or add a column of the new type"
        )
    raise UnsupportedFeatureError(
        f"{what}: cannot change type {_show(source)} to {_show(target)}: only widening "
        "type changes are allowed (every older value must fit the new type), as in "
        "DuckDB; add a column of the new type and copy the values instead"
    )


def _show(name: str) -> str:
    return duckdb_type_name(ColumnType(name))


def _widens(source: str, target: str) -> bool:
    decimal = _DECIMAL.match(target)
    if source in _SIGNED:
        if target in _SIGNED:
            return _SIGNED.index(target) > _SIGNED.index(source)
    elif source in _UNSIGNED:
        if target in _UNSIGNED:
            return _UNSIGNED.index(target) > _UNSIGNED.index(source)
        if target in _SIGNED:  # one more bit for the sign
            return _SIGNED.index(target) > _UNSIGNED.index(source)
    elif source == "float32":
        return target == "float64"
    elif _DECIMAL.match(source) and decimal:
        p, s = (int(v) for v in _DECIMAL.match(source).groups())
        p2, s2 = (int(v) for v in decimal.groups())
        return s2 >= s and p2 - s2 >= p - s and _duckdb_allows(source, target)
    else:
        return False
    if target == "float64":
        return source in _IN_DOUBLE
    if target == "float32":
        return source in _IN_FLOAT
    if decimal and source in _DIGITS:
        p2, s2 = (int(v) for v in decimal.groups())
        return p2 - s2 >= _DIGITS[source] and _duckdb_allows(source, target)
    return False


def _duckdb_allows(source: str, target: str) -> bool:
    """DuckDB's rule: the combined ("max logical") type of the two is ``target``."""
    import duckdb

    a, b = _show(source), _show(target)
    try:
        rows = _query(f"SELECT typeof([CAST(NULL AS {a}), CAST(NULL AS {b})][1])")
    except duckdb.Error:
        return False
    return rows[0][0] == b


@dataclass(frozen=True, slots=True)
class DefaultText:
    """A default as ``ducklake_column`` stores it."""

    initial_default: str | None  # the value in the column's type (``ADD COLUMN`` only)
    default_value: str  # the literal's text, the expression's, or "NULL"
    default_value_type: str  # "literal" or "expression"


def evaluate_default(sql: str | None, kind: ColumnType, what: str, *, literal_only: bool):
    """The texts DuckDB stores for default ``sql`` of a column of type ``kind``.

    ``literal_only``: ``ADD COLUMN``'s rule (the rows written before the column read
    the value, so it must be a constant); ``SET DEFAULT`` takes an expression too.

    Raises:
        InvalidOptionError: text DuckDB cannot read as an expression, a literal that does
            not cast to the column's type, or an expression where a literal is needed.
        UnsupportedFeatureError: a default for a struct, list or map column.
    """
    if sql is None:
        return DefaultText(None, "NULL", "literal")
    import duckdb

    if not isinstance(sql, str) or not sql.strip():
        raise InvalidOptionError(f"{what}: a default is SQL text, got {sql!r}")
    (serialized,) = _query("SELECT json_serialize_sql(?)", ["SELECT " + sql])[0]
    tree = json.loads(serialized)
    if tree.get("error") or len(tree["statements"]) != 1:
        raise InvalidOptionError(f"{what}: cannot read the default {sql!r} as SQL")
    select = tree["statements"][0]["node"]
    bare = (
        select.get("from_table", {}).get("type") == "EMPTY"
        and not select.get("modifiers")
        and not select.get("cte_map", {}).get("map")
        and all(select.get(k) is None for k in ("where_clause", "having", "qualify", "sample"))
        and not select.get("group_expressions")
    )
    if select.get("type") != "SELECT_NODE" or len(select.get("select_list", ())) != 1 or not bare:
        raise InvalidOptionError(f"{what}: the default {sql!r} is not one expression")
    # the expression as DuckDB reads it (what is evaluated below: never the text as given)
    (text,) = _query("SELECT json_deserialize_sql(?)", [serialized])[0]
    expression = text.removeprefix("SELECT ")
    constant = select["select_list"][0].get("class") == "CONSTANT"
    if kind.nested and (literal_only or constant):
        raise UnsupportedFeatureError(
            f"{what}: a default for a {kind.name.upper()} column is not supported (as in "
            "DuckDB); add the column without one"
        )
    if not constant:
        if literal_only:
            raise InvalidOptionError(
                f"{what}: the default {sql!r} is not a literal; a column is added with a "
                "literal default (rows written before read it), as in DuckDB: add it, then "
                "set an expression default for new rows (SET DEFAULT)"
            )
        return DefaultText(None, expression, "expression")
    (written,) = _query(f"SELECT CAST(({expression}) AS VARCHAR)")[0]
    if written is None:
        return DefaultText(None, "NULL", "literal")
    initial = None
    if literal_only:
        try:
            (initial,) = _query(
                f"SELECT CAST(CAST(({expression}) AS {duckdb_type_name(kind)}) AS VARCHAR)"
            )[0]
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0]
            raise InvalidOptionError(
                f"{what}: the default {sql!r} is not a value of type "
                f"{duckdb_type_name(kind)} ({first})"
            ) from None
    return DefaultText(initial, written, "literal")


# The functions an expression default may call and still be one value whatever the row and
# the time: the ones DuckDB writes for a literal of its own (an interval's ``to_days(...)``).
_FOLDABLE_FUNCTIONS = frozenset(
    {
        "to_years",
        "to_months",
        "to_weeks",
        "to_days",
        "to_hours",
        "to_minutes",
        "to_seconds",
        "to_milliseconds",
        "to_microseconds",
        "to_decades",
        "to_centuries",
        "to_millennia",
        "trunc",
    }
)


def constant_default(expression: str) -> str | None:
    """The value text of an ``expression`` default that is one constant, or None.

    DuckDB stores some literals as expressions (``DEFAULT true`` as ``CAST('t' AS BOOLEAN)``,
    ``INTERVAL 1 DAY`` as ``to_days(...)``): their value is the same for every row, so a
    writer that leaves the column out writes it as DuckDB's ``INSERT`` would. An expression
    of anything but constants, casts and those functions (``now()``, ``random()``, a
    sequence) is not folded: None. The text is DuckDB's cast of the value to VARCHAR, as a
    literal default is stored (what ``scan.default_array`` reads).
    """
    (serialized,) = _query("SELECT json_serialize_sql(?)", ["SELECT " + expression])[0]
    tree = json.loads(serialized)
    if tree.get("error") or len(tree.get("statements", ())) != 1:
        return None
    select = tree["statements"][0]["node"]
    items = select.get("select_list") or ()
    if len(items) != 1 or not _folds(items[0]):
        return None
    (text,) = _query("SELECT json_deserialize_sql(?)", [serialized])[0]
    (value,) = _query(f"SELECT CAST(({text.removeprefix('SELECT ')}) AS VARCHAR)")[0]
    return "NULL" if value is None else value


def _folds(node) -> bool:
    """Whether a serialized DuckDB expression is built of constants alone."""
    kind = node.get("class")
    if kind == "CONSTANT":
        return True
    if kind == "CAST":
        return _folds(node["child"])
    if kind == "FUNCTION" and node.get("function_name") in _FOLDABLE_FUNCTIONS:
        return not node.get("filter") and all(_folds(child) for child in node["children"])
    return False
