"""``metadata_schema``: the ``ducklake_*`` tables in another schema (DuckDB's METADATA_SCHEMA)."""

from __future__ import annotations

import pytest
from support.lakes import ALL_SPECS
from support.readcheck import check

from ducklake_datafusion import DuckLakeCatalog, errors

SPECS = [s for s in ALL_SPECS if s.catalog != "sqlite"]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_metadata_schema(make_lake, spec):
    lake = make_lake(spec, inline_limit=5, metadata_schema="lake meta")
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'x' || i FROM range(100) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'inlined')")
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 0")
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n FROM lake.main.t WHERE id > 50")
    check(lake, "SELECT * FROM lake.main.t", snapshot=2)
    args = lake.reader_args()
    args.pop("metadata_schema")
    with pytest.raises(errors.NotADuckLakeCatalogError, match="metadata_schema="):
        DuckLakeCatalog(**args).table("main", "t")


def test_sqlite_has_no_metadata_schema(tmp_path):
    with pytest.raises(errors.InvalidOptionError, match="SQLite"):
        DuckLakeCatalog(f"sqlite:{tmp_path}/c.sqlite", metadata_schema="meta")
