"""The native scan (the Rust provider, ``provider/_rust``) on lakes of every shape: the
same lakes read natively, through the exact path and by DuckDB.

One contract test pins the DataFusion fact the view tables rely on: ``Table(df)`` built
on a helper thread inside ``SchemaProvider.table()`` is planned by the querying session.
"""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from datafusion.catalog import CatalogProvider, SchemaProvider, Table
from support.lakes import assert_same_rows, evolve_table, merged_inserts
from support.readcheck import check, ours

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.errors import InvalidOptionError

# ------------------------------------------------------------------------------------------
# DataFusion facts


def _files(tmp_path, count=3, rows=5000, row_group=700):
    """Parquet files whose column ``k`` equals the row's position in its file."""
    paths = []
    for i in range(count):
        path = str(tmp_path / f"f{i}.parquet")
        k = np.arange(rows, dtype=np.int64)
        pq.write_table(
            pa.table({"k": k, "f": np.full(rows, i, dtype=np.int32), "s": [f"v{x}" for x in k]}),
            path,
            row_group_size=row_group,
            data_page_size=512,
            write_page_index=True,
        )
        paths.append(path)
    return paths


SCHEMA = pa.schema([("k", pa.int64()), ("f", pa.int32()), ("s", pa.string())])


def test_a_schema_provider_can_return_a_frame_built_on_a_helper_thread(tmp_path):
    """``Table(df)`` from ``table()``: planned by the querying session, filter pushed into
    the Parquet scan as a pruning predicate."""
    paths = _files(tmp_path)

    class Schema(SchemaProvider):
        def table_names(self):
            return {"t"}

        def table(self, name):
            out = {}

            def build():
                out["df"] = SessionContext().read_parquet(str(tmp_path), schema=SCHEMA)

            worker = threading.Thread(target=build)
            worker.start()
            worker.join()
            return Table(out["df"])

        def table_exist(self, name):
            return name == "t"

    class Catalog(CatalogProvider):
        def schema_names(self):
            return {"s"}

        def schema(self, name):
            return Schema() if name == "s" else None

    ctx = SessionContext()
    ctx.register_catalog_provider("c", Catalog())
    sql = "SELECT count(*) AS n FROM c.s.t WHERE k < 100"
    expected = sum(pc.sum(pc.less(pq.read_table(p).column("k"), 100)).as_py() for p in paths)
    assert ctx.sql(sql).to_pylist() == [{"n": expected}]
    plan = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())
    assert "DataSourceExec" in plan and "pruning_predicate" in plan


# ------------------------------------------------------------------------------------------
# Lakes through both paths


def _explain(lake, sql: str, **kwargs) -> str:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **kwargs))
    return "\n".join(r["plan"] for r in ctx.sql("EXPLAIN " + sql).to_pylist())


def _four_files(make_lake):
    """Four files of 5,000 rows (row groups of 1,000) with NULLs, strings and dates."""
    lake = make_lake(inline_limit=0)
    lake.sql("CALL lake.set_option('parquet_row_group_size', '1000')")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, g INTEGER, s VARCHAR, d DATE, x DOUBLE)")
    for start in range(0, 20000, 5000):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, i % 7, 's' || i, DATE '2024-01-01' + (i % 400)::INT, "
            f"CASE WHEN i % 11 = 0 THEN NULL ELSE i / 3.0 END FROM range({start}, {start + 5000}) r(i)"
        )
    return lake


@pytest.fixture
def clean_lake(make_lake):
    return _four_files(make_lake)


@pytest.fixture
def deleted_lake(make_lake):
    """The four files, deletes in three of them, two DELETEs in one (a cumulative delete
    file), one file without deletes."""
    lake = _four_files(make_lake)
    lake.sql("DELETE FROM lake.main.t WHERE k % 10 = 3 AND k < 15000")
    lake.sql("DELETE FROM lake.main.t WHERE k BETWEEN 2000 AND 2999")
    return lake


QUERIES = [
    "SELECT * FROM lake.main.t",
    "SELECT count(*) AS n FROM lake.main.t",
    "SELECT g, count(*) AS n, count(x) AS nx, max(k) AS mk, min(s) AS ms FROM lake.main.t GROUP BY g",
    "SELECT k, s FROM lake.main.t WHERE k BETWEEN 1990 AND 3010",
    "SELECT * FROM lake.main.t WHERE k = 4513 OR k = 4514",
    "SELECT count(*) AS n FROM lake.main.t WHERE x IS NULL",
    "SELECT d, max(k) AS mk FROM lake.main.t WHERE d >= DATE '2024-12-01' GROUP BY d",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_clean_lake_natively_matches_duckdb(clean_lake, sql):
    # native: a DataFusion Parquet scan, or (count(*)) DataFusion's own file statistics
    assert "DatasetExec" not in _explain(clean_lake, sql)
    check(clean_lake, sql)  # native, then native=False, each against DuckDB


@pytest.mark.parametrize("sql", QUERIES)
def test_deleted_lake_matches_duckdb(deleted_lake, sql):
    check(deleted_lake, sql)  # exact on both catalog settings, each against DuckDB


def test_a_table_with_deletes_is_read_natively(deleted_lake):
    sql = "SELECT count(*) FROM lake.main.t WHERE k > 100"
    plan = _explain(deleted_lake, sql)
    assert "DuckLakeScanExec" in plan and "DatasetExec" not in plan, plan
    assert "3 with deletes" in plan, plan  # skipped inside the decoder (row selections)
    exact = _explain(deleted_lake, sql, native=False)
    assert "DuckLakeScanExec" not in exact and _reads_exactly(exact), exact


def _reads_exactly(plan: str) -> bool:
    """The exact reader: read-only (``pyarrow.dataset``) or writable (``_exact_scan``)."""
    return "DatasetExec" in plan or "DuckLakeExactScanExec" in plan


def test_every_snapshot_natively(deleted_lake):
    """Before, between and after the two DELETEs (per-position snapshots in one
    cumulative delete file): DuckDB's answer at every snapshot, natively."""
    for snapshot in range(2, 8):
        check(deleted_lake, "SELECT k, g, s FROM lake.main.t WHERE k % 5 = 3", snapshot=snapshot)
        check(deleted_lake, "SELECT count(*) AS n, max(s) AS m FROM lake.main.t", snapshot=snapshot)
        assert _is_native(deleted_lake, snapshot=snapshot)


def _is_native(lake, sql="SELECT * FROM lake.main.t", snapshot=None, **catalog) -> bool:
    plan = _explain(lake, sql, snapshot=snapshot, **catalog)
    assert ("DuckLakeScanExec" in plan) != _reads_exactly(plan), plan  # one path, not both
    return "DuckLakeScanExec" in plan


LAYOUT_QUERIES = [
    "SELECT * FROM lake.main.t",
    "SELECT count(*) AS n FROM lake.main.t",
    "SELECT name, v FROM lake.main.t WHERE k BETWEEN 990 AND 2010",
    "SELECT v, count(*) AS n, CAST(sum(w) AS BIGINT) AS sw FROM lake.main.t GROUP BY v HAVING count(*) > 1",
    "SELECT k, d, m, note FROM lake.main.t WHERE v = 7 AND k % 97 = 0",
    "SELECT count(*) AS n FROM lake.main.t WHERE note IS NULL",
]


@pytest.fixture
def evolved_lake(make_lake):
    """Files of three layouts (``lakes.evolve_table``)."""
    lake = make_lake(inline_limit=0)
    evolve_table(lake)
    return lake


@pytest.mark.parametrize("sql", LAYOUT_QUERIES)
def test_older_layouts_natively_match_duckdb(evolved_lake, sql):
    assert _is_native(evolved_lake)
    check(evolved_lake, sql)  # native, then the exact path, each against DuckDB


def test_every_snapshot_of_an_evolved_table_natively(evolved_lake):
    for snapshot in range(2, 13):  # the first INSERT to the last
        assert _is_native(evolved_lake, snapshot=snapshot)
        check(evolved_lake, "SELECT * FROM lake.main.t", snapshot=snapshot)


def test_swapped_column_names_read_by_field_id(make_lake):
    """Two columns that swapped names: each old file's column goes to its own field id,
    and a filter on the new name is pushed to the old file's other column."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a BIGINT, b BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i, -i FROM range(1000) r(i)")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN a TO tmp")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN b TO a")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN tmp TO b")
    lake.sql("INSERT INTO lake.main.t SELECT -i, i FROM range(1000, 2000) r(i)")
    assert _is_native(lake)
    check(lake, "SELECT * FROM lake.main.t WHERE a < -990 OR b BETWEEN 995 AND 1005")
    check(lake, "SELECT CAST(sum(a) AS BIGINT) AS sa, max(b) AS mb FROM lake.main.t WHERE a < 0")


def test_lossy_widenings_stay_exact(make_lake):
    """A BIGINT widened to DOUBLE may round (the exact path refuses to), and a DATE
    widened to TIMESTAMP is left to it as well: the Rust scan hands such a file to the
    exact reader and scans its rows from memory."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, big BIGINT, d DATE)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, i * 1000, DATE '2024-01-01' + i::INT FROM range(100) r(i)"
    )
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN big TYPE DOUBLE")
    assert "1 read by the exact reader" in _explain(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT * FROM lake.main.t")
    lake2 = make_lake(inline_limit=0)
    lake2.sql("CREATE TABLE lake.main.t (k BIGINT, d DATE)")
    lake2.sql("INSERT INTO lake.main.t SELECT i, DATE '2024-01-01' + i::INT FROM range(100) r(i)")
    lake2.sql("ALTER TABLE lake.main.t ALTER COLUMN d TYPE TIMESTAMP")
    assert "1 read by the exact reader" in _explain(lake2, "SELECT * FROM lake.main.t")
    check(lake2, "SELECT * FROM lake.main.t WHERE d > TIMESTAMP '2024-02-01'")


def test_merged_files_drop_rows_of_later_snapshots_natively(make_lake):
    """A merged file holds per-row snapshot ids: reading it natively at an older
    snapshot must drop the newer rows, as DuckDB does."""
    lake = make_lake(inline_limit=0)
    merged_inserts(lake)
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    assert len(table.scan_plan().tasks) == 1  # one merged file
    for snapshot in (2, 3, 4, 5, None):
        assert _is_native(lake, snapshot=snapshot)
        check(lake, "SELECT count(*) AS n, max(k) AS mk FROM lake.main.t", snapshot=snapshot)
        check(lake, "SELECT * FROM lake.main.t WHERE k % 250 = 1", snapshot=snapshot)


def test_inlined_rows_are_read_from_memory_beside_the_files(make_lake):
    lake = make_lake(inline_limit=100)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, m DECIMAL(9,2))")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'f' || i, i / 7 FROM range(5000) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (-1, 'inlined', 1.25), (-2, NULL, NULL)")
    lake.sql("DELETE FROM lake.main.t WHERE k = -2")
    assert _is_native(lake)
    for sql in (
        "SELECT * FROM lake.main.t",
        "SELECT count(*) AS n, sum(m) AS sm FROM lake.main.t",
        "SELECT * FROM lake.main.t WHERE k < 3",
    ):
        check(lake, sql)
    lake.sql("DELETE FROM lake.main.t WHERE k = 7")  # a delete file: still native
    assert _is_native(lake)
    check(lake, "SELECT * FROM lake.main.t WHERE k < 10")


def test_a_table_of_inlined_rows_only(make_lake):
    lake = make_lake(inline_limit=100)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, s VARCHAR)")
    lake.sql("INSERT INTO lake.main.t VALUES (1, 'a'), (2, 'b')")
    assert _is_native(lake, "SELECT * FROM lake.main.t WHERE k > 0")
    check(lake, "SELECT * FROM lake.main.t")
    lake.sql("DELETE FROM lake.main.t WHERE k > 0")
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n FROM lake.main.t")


def test_types_the_native_reader_would_change_stay_exact(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT, t TIME, ns TIMESTAMP_NS, u UUID)")
    lake.sql(
        "INSERT INTO lake.main.t SELECT i, TIME '10:00:00' + INTERVAL (i) SECOND, "
        "TIMESTAMP_NS '2024-01-01 00:00:00.123456789', uuid() FROM range(100) r(i)"
    )
    assert not _is_native(lake)
    check(lake, "SELECT k, t, ns FROM lake.main.t WHERE k > 50")


def test_unusual_path_characters_stay_exact(make_lake):
    lake = make_lake(inline_limit=0, name="a lake%20with #odd chars é")
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(1000) r(i)")
    assert not _is_native(lake)
    check(lake, "SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM lake.main.t")


def test_clean_table_is_read_natively_alone(make_lake):
    lake = make_lake(inline_limit=0)
    lake.sql(
        "CREATE TABLE lake.main.t (k BIGINT, s VARCHAR, b BLOB, ts TIMESTAMPTZ, m DECIMAL(9,2))"
    )
    for start in (0, 700, 1400):
        lake.sql(
            f"INSERT INTO lake.main.t SELECT i, 's' || i, 'b'::BLOB, TIMESTAMPTZ '2024-01-01 00:00:00+00' "
            f"+ INTERVAL (i) MINUTE, i / 7 FROM range({start}, {start + 700}) r(i)"
        )
    assert _is_native(lake)
    check(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT count(*) AS n, max(ts) AS t, sum(m) AS sm FROM lake.main.t WHERE k >= 650")


def test_symlinked_data_directory(make_lake, tmp_path):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(3000) r(i)")
    link = tmp_path / "linked-data"
    os.symlink(lake.data_path.rstrip("/"), link)
    sql = "SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM lake.main.t"
    got = ours(lake, sql, data_path=str(link) + "/")
    assert_same_rows(got, lake.reference(sql))


def test_native_option_is_checked(tmp_path):
    with pytest.raises(InvalidOptionError, match="native"):
        DuckLakeCatalog(str(tmp_path / "x.ducklake"), native="yes")
    with pytest.raises(InvalidOptionError, match="native_deletes"):
        DuckLakeCatalog(str(tmp_path / "x.ducklake"), native_deletes=1)


@pytest.mark.parametrize("option", ["native_deletes", "rust"])
def test_the_options_of_the_removed_listing_scans_warn_and_change_nothing(make_lake, option):
    """``native_deletes`` and ``rust`` chose between native scans the Rust scan replaced:
    still accepted (checked, with a ``DeprecationWarning``), and the table is read as
    without them."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(1000) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE k % 3 = 0")
    for value in (True, False):
        with pytest.warns(DeprecationWarning, match=f"{option}=.*no effect"):
            catalog = DuckLakeCatalog(**lake.reader_args(), **{option: value})
        ctx = SessionContext()
        register(ctx, "lake", catalog)
        plan = "\n".join(
            r["plan"] for r in ctx.sql("EXPLAIN SELECT * FROM lake.main.t").to_pylist()
        )
        assert "DuckLakeScanExec" in plan, plan
        sql = "SELECT count(*) AS n, CAST(sum(k) AS BIGINT) AS s FROM lake.main.t"
        assert_same_rows(ctx.sql(sql).to_arrow_table(), lake.reference(sql))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DuckLakeCatalog(**lake.reader_args())  # no warning without them
