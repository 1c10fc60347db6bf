"""Files registered by an older DuckLake: no Parquet field ids and no name mapping.

A catalog written before DuckLake recorded name mappings holds files that
``ducklake_add_data_files`` registered without any, and DuckDB reads those by position:
file column *i* is table column *i* (``ducklake_multi_file_reader``). Each test builds such
a lake the way DuckDB's own test ``delete/delete_legacy_missing_mapping_after_rename_add_files``
does (registering a file, then clearing its ``mapping_id``) and compares every snapshot with
DuckDB's answer, on every DataFusion path (and Spark, through the replay of ``check``).
A file replaced later by some other Parquet file without field ids is still refused
(``test_integrity``): position is DuckDB's rule only for the footer the catalog registered.
"""

from __future__ import annotations

import pytest
from support.lakes import LakeSpec
from support.readcheck import check, ours

LOCAL_CATALOGS = [LakeSpec(c, "local") for c in ("duckdb", "sqlite", "postgres")]


def _clear_name_mappings(lake) -> None:
    """What an older DuckLake left behind: registered files without a name mapping."""
    lake.sql("UPDATE __ducklake_metadata_lake.ducklake_data_file SET mapping_id = NULL")


@pytest.mark.parametrize("spec", LOCAL_CATALOGS, ids=lambda s: s.id)
def test_a_file_without_field_ids_or_mapping_reads_by_position(make_lake, tmp_path, spec):
    """The upstream test: rename a column, read, delete a row; plus an added column whose
    default fills the file's missing position, and a second, current file beside it."""
    lake = make_lake(spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (old_id INTEGER, payload VARCHAR)")
    source = tmp_path / "legacy source.parquet"
    lake.sql(
        f"COPY (SELECT 42 AS old_id, 'old' AS payload UNION ALL SELECT 43, 'old2') TO '{source}'"
    )
    lake.sql(f"CALL ducklake_add_data_files('lake', 't', '{source}')")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN old_id TO id")
    _clear_name_mappings(lake)
    first = lake.snapshot_id()
    lake.sql("DELETE FROM lake.main.t WHERE id = 42")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN z INTEGER DEFAULT 7")
    lake.sql("INSERT INTO lake.main.t VALUES (44, 'new', 8)")
    for snapshot in range(first, lake.snapshot_id() + 1):
        check(lake, "SELECT * FROM lake.main.t", snapshot=snapshot)
        check(lake, "SELECT id FROM lake.main.t WHERE id = 43", snapshot=snapshot)
        check(lake, "SELECT count(*) AS n, max(payload) AS p FROM lake.main.t", snapshot=snapshot)


def test_positions_beyond_the_file_take_defaults_and_types_must_cast(make_lake, tmp_path):
    """Columns are matched by position, not by name: a file whose second column holds
    text under the name of the table's first column fails the cast, as in DuckDB."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (a INTEGER, b VARCHAR)")
    swapped = tmp_path / "swapped.parquet"
    lake.sql(f"COPY (SELECT 'x' AS b, 5 AS a) TO '{swapped}'")
    lake.sql(f"CALL ducklake_add_data_files('lake', 't', '{swapped}')")  # mapped by name
    check(lake, "SELECT * FROM lake.main.t")
    _clear_name_mappings(lake)
    with pytest.raises(Exception, match="Could not convert"):
        lake.reference("SELECT * FROM lake.main.t")
    with pytest.raises(Exception, match="DataFileError"):
        ours(lake, "SELECT * FROM lake.main.t", native=False)


def test_a_nested_column_by_position_is_refused(make_lake, tmp_path):
    """DuckDB reads every field of a nested column of such a file as NULL; we refuse it
    with a typed error and read the other columns."""
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s STRUCT(x INTEGER))")
    path = tmp_path / "nested.parquet"
    lake.sql(f"COPY (SELECT 1 AS id, {{'x': 1}} AS s) TO '{path}'")
    lake.sql(f"CALL ducklake_add_data_files('lake', 't', '{path}')")
    _clear_name_mappings(lake)
    with pytest.raises(Exception, match=r"UnsupportedFeatureError.*'s'"):
        ours(lake, "SELECT * FROM lake.main.t")
    check(lake, "SELECT id FROM lake.main.t")
