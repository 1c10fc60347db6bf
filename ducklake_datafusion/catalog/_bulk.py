"""Typed Arrow results from SQLite and PostgreSQL without a Python object per value.

Planning a table of 10,000 files reads ~10,000 file rows and as many statistics rows.
Fetched through a DB-API driver, every value becomes a Python object and then an Arrow
value again, which costs more than the queries themselves. So
the metadata queries whose column types are known ask the database for CSV text instead,
which pyarrow's C++ CSV reader turns straight into typed columns:

* SQLite builds the text itself with ``printf`` and ``group_concat`` (one value, made in C,
  instead of a Python object per value);
* PostgreSQL streams ``COPY (query) TO STDOUT (FORMAT csv)``;
* MySQL/MariaDB build each line with ``CONCAT_WS`` and join them with ``GROUP_CONCAT`` (one
  value, instead of PyMySQL's pure-Python rows).

NULL and the empty string stay apart (bare ``NULL`` / an empty unquoted field for NULL, a
quoted value for every string). Callers fall back to the row path if the text does not
parse.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.csv as pcsv

__all__ = ["SQLITE_NULL", "SQLITE_QUOTE", "mysql_csv_query", "parse_csv", "sqlite_csv_query"]

_TRUE = ["t", "true", "1"]
_FALSE = ["f", "false", "0"]


def parse_csv(data: bytes, schema: pa.Schema, *, quote: str = '"', null: str = "") -> pa.Table:
    """Headerless CSV text -> a table of ``schema``.

    Args:
        quote: the quote character (doubled inside quoted values).
        null: the unquoted text that stands for NULL (a quoted one is a string).
    """
    if not data:
        return schema.empty_table()
    return pcsv.read_csv(
        io.BytesIO(data),
        read_options=pcsv.ReadOptions(column_names=schema.names, use_threads=False),
        parse_options=pcsv.ParseOptions(
            quote_char=quote, double_quote=True, newlines_in_values=True
        ),
        convert_options=pcsv.ConvertOptions(
            column_types=schema,
            null_values=[null],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=_TRUE,
            false_values=_FALSE,
        ),
    )


SQLITE_QUOTE, SQLITE_NULL = "'", "NULL"


def sqlite_csv_query(sql: str, schema: pa.Schema) -> str:
    """``sql`` wrapped so that SQLite returns its rows as one CSV text value.

    ``printf('%Q')`` writes each value as an SQL literal ('it''s', '5') and NULL as bare
    ``NULL``, so one C call per row makes the line and NULL stays apart from 'NULL' and ''.
    The schema's names must be the column names ``sql`` produces.
    """
    names = ", ".join('"' + f.name.replace('"', '""') + '"' for f in schema)
    pattern = ",".join("%Q" for _ in schema)
    return f"SELECT group_concat(printf('{pattern}', {names}), char(10)) FROM ({sql})"


def mysql_csv_query(sql: str, schema: pa.Schema) -> str:
    """``sql`` wrapped so that MySQL/MariaDB return its rows as one CSV text value and
    their number: ``(text, rows)``.

    Strings are quoted (quotes doubled), so NULL (an empty unquoted field) stays apart from
    ''; other values are written as MySQL spells them (integers, 1/0 booleans). The caller
    compares the number of lines parsed with ``rows``: ``GROUP_CONCAT`` cuts its result at
    ``group_concat_max_len`` with only a warning. Identifiers are quoted the ANSI way (the
    session runs with ``ANSI_QUOTES``).
    """
    parts = []
    for field in schema:
        name = '"' + field.name.replace('"', '""') + '"'
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            parts.append(f"IFNULL(CONCAT('\"', REPLACE({name}, '\"', '\"\"'), '\"'), '')")
        else:
            parts.append(f"IFNULL({name}, '')")
    line = f"CONCAT_WS(',', {', '.join(parts)})"
    return f"SELECT GROUP_CONCAT({line} SEPARATOR '\\n'), count(*) FROM ({sql}) AS ducklake_rows"
