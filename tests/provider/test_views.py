"""Views stored in the catalog, planned by DataFusion, compared with DuckDB's answers."""

from __future__ import annotations

import pytest
from datafusion import SessionConfig, SessionContext
from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog, errors, register


def _session(lake) -> SessionContext:
    ctx = SessionContext(SessionConfig().with_information_schema(True))
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    return ctx


def test_views(make_lake, lake_spec):
    lake = make_lake(lake_spec)
    lake.sql("CREATE SCHEMA lake.s2")
    lake.sql("CREATE TABLE lake.s2.t (id INTEGER, v VARCHAR)")
    lake.sql("INSERT INTO lake.s2.t VALUES (1, 'a'), (2, 'b'), (0, 'z')")
    lake.sql("CREATE VIEW lake.s2.vw AS SELECT id, v FROM lake.s2.t WHERE id > 0")
    lake.sql("CREATE VIEW lake.main.aliased(x, y) AS SELECT id * 2, upper(v) FROM s2.t")
    lake.sql("CREATE VIEW lake.s2.unqualified AS SELECT v FROM t WHERE id = 2")
    lake.sql("CREATE VIEW lake.main.nested AS SELECT count(*) AS n FROM lake.s2.vw")
    lake.sql(
        "CREATE VIEW lake.main.lists AS SELECT list_value(id, 2) AS l, 'count_star()' AS s FROM lake.s2.t"
    )
    lake.sql("CREATE VIEW lake.main.duckdb_only AS SELECT strip_accents(v) AS l FROM lake.s2.t")
    first = lake.snapshot_id()
    lake.sql("INSERT INTO lake.s2.t VALUES (3, 'c')")
    lake.sql("CREATE OR REPLACE VIEW lake.s2.vw AS SELECT id, v FROM lake.s2.t WHERE id > 1")
    queries = [
        "SELECT * FROM lake.s2.vw",
        "SELECT * FROM lake.main.aliased",
        "SELECT * FROM lake.s2.unqualified",
        "SELECT * FROM lake.main.nested",
        "SELECT * FROM lake.main.lists",
        "SELECT v.id, t.v FROM lake.s2.vw v JOIN lake.s2.t t ON v.id = t.id WHERE t.id < 3",
    ]
    expected = [lake.reference(q) for q in queries]
    then = lake.reference(f"SELECT * FROM lake.s2.vw AT (VERSION => {first})")
    ctx = _session(lake)
    for query, want in zip(queries, expected):
        assert_same_rows(ctx.sql(query).to_arrow_table(), want)
    # time travel reads the view's definition and its tables at that snapshot
    assert_same_rows(ctx.sql(f'SELECT * FROM lake.s2."vw@v{first}"').to_arrow_table(), then)
    pinned = SessionContext()
    register(pinned, "lake", DuckLakeCatalog(**lake.reader_args(), snapshot=first))
    assert_same_rows(pinned.sql("SELECT * FROM lake.s2.vw").to_arrow_table(), then)

    with pytest.raises(errors.UnsupportedFeatureError, match=r"strip_accents\(v\)") as info:
        ctx.sql("SELECT * FROM lake.main.duckdb_only")
    assert "main.duckdb_only" in str(info.value)
    shown = ctx.sql("SHOW TABLES").to_pydict()
    listed = {
        (s, n)
        for c, s, n in zip(shown["table_catalog"], shown["table_schema"], shown["table_name"])
        if c == "lake" and s != "information_schema"
    }
    assert {("s2", "vw"), ("main", "aliased"), ("s2", "unqualified"), ("main", "nested")} <= listed
    assert ("main", "duckdb_only") not in listed  # would make SHOW TABLES fail


def test_dropped_view_is_gone(make_lake):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t AS SELECT 1 AS a")
    lake.sql("CREATE VIEW lake.main.v AS SELECT a FROM lake.main.t")
    created = lake.snapshot_id()
    lake.sql("DROP VIEW lake.main.v")
    ctx = _session(lake)
    with pytest.raises(Exception, match="v"):
        ctx.sql("SELECT * FROM lake.main.v")
    expected = lake.reference(f"SELECT * FROM lake.main.v AT (VERSION => {created})")
    assert_same_rows(ctx.sql(f'SELECT * FROM lake.main."v@v{created}"').to_arrow_table(), expected)
