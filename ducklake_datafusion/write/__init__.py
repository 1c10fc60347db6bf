"""Engine-neutral writing: Arrow data -> Parquet files as DuckDB writes them -> one commit.

* :mod:`._types`: Arrow types <-> DuckLake column types, the files' schema (field ids).
* :mod:`._stats`: per-column bounds in the catalog's text encoding.
* :mod:`._files`: the Parquet files of one commit and their facts.
* :mod:`._input`: what a user may hand to a write, as a stream of record batches.
* :mod:`._append`: resolve, write, commit (``catalog.commit``); delete the files if not.

The engines (``provider/`` for DataFusion, the Python API) only hand batches here.
"""

from ._append import append, create_table
from ._files import DataFileWriter, WrittenFile
from ._types import columns_for_schema, file_schema

__all__ = [
    "DataFileWriter",
    "WrittenFile",
    "append",
    "columns_for_schema",
    "create_table",
    "file_schema",
]
